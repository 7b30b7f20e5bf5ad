#include "cm_session.h"

#include "emu/paths.h"

#include <cstdio>
#include <cstring>
#include <mutex>
#include <unistd.h>

namespace rdmacm {

namespace ipc = emu::ipc;

namespace {

std::mutex session_mutex;
ipc::ControlClient* the_session = nullptr;
pid_t session_pid = 0;
uint64_t device_guid = 0;
bool complained = false;

} // namespace

ipc::ControlClient* session() {
    std::lock_guard lock(session_mutex);
    if (the_session && session_pid == ::getpid()) return the_session;
    if (the_session) the_session->close(); // a forked child: the parent's session stays its own
    // Never destroyed: like the kernel's file, the session ends only with the process, after
    // exit() has flushed its output; a static destructor would end it first and wake the app's
    // threads waiting in rdma_get_cm_event with ENODEV.
    static auto* client = new ipc::ControlClient;
    const std::string path = emu::selected_socket_path();
    int err = client->connect(path);
    ipc::HelloReply hello{};
    if (!err) err = client->call<ipc::Op::Hello>({ipc::kHelloCm, 0}, hello);
    if (err) {
        client->close();
        if (!complained) {
            complained = true;
            std::fprintf(stderr,
                         "librdmacm (rdmaemu): no emulated NIC answers at %s: %s; start hosts "
                         "with 'rdmaemu up' and run programs with 'rdmaemu run --host I'\n",
                         path.c_str(), std::strerror(err));
        }
        errno = ENODEV;
        return nullptr;
    }
    device_guid = hello.node_guid;
    the_session = client;
    session_pid = ::getpid();
    return the_session;
}

uint64_t host_device_guid() {
    std::lock_guard lock(session_mutex);
    return device_guid;
}

} // namespace rdmacm
