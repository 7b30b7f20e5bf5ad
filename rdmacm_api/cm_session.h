// The process's CM session with its host's NIC, as the kernel's /dev/infiniband/rdma_cm file is
// for rdma-core: opened on first use (Hello with kHelloCm) and shared by every channel and CM
// ID of the process. A child after fork() opens its own.
#pragma once

#include "cm_objects.h"
#include "emu/ipc/control_client.h"

namespace rdmacm {

// The session, or nullptr with errno ENODEV when no NIC answers (said once on stderr, with the
// socket tried and why).
emu::ipc::ControlClient* session();

// The GUID (network order) of the host's device, from the session's Hello.
uint64_t host_device_guid();

// One request on the session: 0, or -1 with errno set to the NIC's answer.
template <emu::ipc::Op op>
int call(const typename emu::ipc::Types<op>::Req& req, typename emu::ipc::Types<op>::Reply& reply,
         emu::ipc::PassedFds* fds = nullptr) {
    emu::ipc::ControlClient* s = session();
    if (!s) return -1;
    int err = s->call<op>(req, reply, fds);
    return err ? fail(err) : 0;
}
template <emu::ipc::Op op> int call(const typename emu::ipc::Types<op>::Req& req) {
    typename emu::ipc::Types<op>::Reply reply{};
    return call<op>(req, reply);
}

} // namespace rdmacm
