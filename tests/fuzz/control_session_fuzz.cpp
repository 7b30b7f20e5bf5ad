// Fuzz target: the control path as a client reaches it. The input's datagrams go down a real
// socket to a real Session (nicsim/control/session.cpp): the framing checks (message_check), the
// dispatcher and the verbs behind it, with the transport on the protocol rig's fake environment
// (tests/protocol/protocol_rig.h) as the data path. The first datagram carries this process's
// /proc/self/mem, as the library's first request does; replies and their descriptors are read
// and dropped. At the end the client hangs up and the session must free everything.
//
// The input: one byte (bit 0: open with a valid Hello for a device context first), then
// datagrams, each a 16-bit little-endian length and its bytes.
#include "control/session.h"
#include "control/status_json.h"
#include "emu/ipc/protocol.h"
#include "emu/ipc/socket_io.h"
#include "protocol_rig.h"

#include <boost/asio/io_context.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace {

namespace ipc = emu::ipc;

void drain_replies(int client) {
    char buf[ipc::kMaxReply];
    for (;;) {
        ipc::PassedFds fds;
        if (ipc::recv_message(client, buf, sizeof buf, &fds) <= 0) return;
        fds.close_all();
    }
}

void send(int client, const void* msg, size_t len, bool with_memory) {
    int memory = with_memory ? ::open("/proc/self/mem", O_RDWR | O_CLOEXEC) : -1;
    ipc::send_message(client, msg, len, &memory, memory >= 0 ? 1 : 0);
    if (memory >= 0) ::close(memory);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t len) {
    if (len == 0) return 0;
    boost::asio::io_context io;
    nicsim::Nic nic(proto::rig_config(proto::kRigAddress));
    proto::FakeEnv env(nic);
    proto::FakeDataPath data_path(env);
    nic.set_data_path(&data_path);
    spdlog::logger log("fuzz", std::make_shared<spdlog::sinks::null_sink_mt>());
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) != 0)
        std::abort();
    const int client = pair[1];
    bool ended = false;
    std::shared_ptr<nicsim::Session> session;
    session = std::make_shared<nicsim::Session>(
        io, nic, log, pair[0], [&] { return nicsim::host_status_json(nic, {session.get()}); },
        [&](nicsim::Session&) { ended = true; });
    session->start();

    const uint8_t flags = data[0];
    size_t at = 1;
    bool first = true;
    auto exchange = [&](const void* msg, size_t n) {
        send(client, msg, n, std::exchange(first, false));
        io.poll();
        env.drain();
        env.take();
        env.events.clear();
        drain_replies(client);
    };
    if (flags & 1) {
        char hello[sizeof(ipc::Header) + sizeof(ipc::HelloReq)];
        ipc::Header h{ipc::kMagic, ipc::kVersion, static_cast<uint16_t>(ipc::Op::Hello),
                      sizeof hello, 1};
        ipc::HelloReq req{ipc::kHelloContext, 0};
        std::memcpy(hello, &h, sizeof h);
        std::memcpy(hello + sizeof h, &req, sizeof req);
        exchange(hello, sizeof hello);
    }
    while (at + 2 <= len && !ended) {
        size_t n = data[at] | size_t(data[at + 1]) << 8;
        at += 2;
        n = std::min(n, len - at);
        exchange(data + at, n);
        at += n;
    }
    ::close(client);
    io.poll(); // the hang-up ends the session, which frees what it owns
    if (!ended || session->objects().count() != 0) std::abort();
    return 0;
}
