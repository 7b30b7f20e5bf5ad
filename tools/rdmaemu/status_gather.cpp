#include "status_gather.h"

#include "emu/ipc/control_client.h"

#include <cerrno>
#include <cstring>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

namespace rdmaemu {
namespace {

// Why host `h` gave no status: `err` from connecting (not `connected`) or from the requests.
std::string why_no_answer(const HostEntry& h, bool connected, int err) {
    if (!daemon_alive(h)) return "daemon gone";
    // EIO: the connection closed or timed out. A daemon closes it at once for a uid it does not
    // let in (nicsim/control/server.cpp), which is worth a hint.
    if (connected && err == EIO)
        return "daemon alive but gave no status (it closes connections from uids other than its "
               "own, root and --allow-uid ones; yours is " +
               std::to_string(::geteuid()) + "; see its log)";
    return "daemon alive but not answering: " + std::string(std::strerror(err));
}

// {"host":I, <the daemon's members>, "up":true}: every member the daemon wrote is kept, so keys
// this tool does not know yet (counters) reach scripts unchanged.
Json host_json(const HostStatus& s) {
    Json out = {{"host", s.entry->index}};
    if (s.doc) {
        out.update(*s.doc);
    } else {
        out["address"] = s.entry->address;
        out["device"] = s.entry->device;
        out["daemon_pid"] = s.entry->pid;
    }
    if (!s.error.empty()) out["error"] = s.error;
    out["up"] = s.up;
    return out;
}

} // namespace

HostStatus query_host(const HostEntry& h) {
    HostStatus s;
    s.entry = &h;
    emu::ipc::ControlClient client;
    int err = client.connect(h.socket);
    const bool connected = err == 0;
    if (connected) {
        // A daemon that accepts but never answers must not hang status.
        timeval tv{2, 0};
        ::setsockopt(client.fd(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        ::setsockopt(client.fd(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        emu::ipc::HelloReply hello{};
        err = client.call<emu::ipc::Op::Hello>({}, hello); // a probe session: owns nothing
        if (err == 0) err = client.call_text(emu::ipc::Op::Status, s.raw);
    }
    if (err != 0) {
        s.error = why_no_answer(h, connected, err);
        return s;
    }
    s.up = true;
    Json doc = Json::parse(s.raw, nullptr, /*allow_exceptions=*/false);
    if (doc.is_object())
        s.doc = std::move(doc);
    else
        s.error = "unreadable status from the daemon";
    return s;
}

std::string status_json(const std::string& runtime, emu::BackendMode mode,
                        const std::vector<HostStatus>& all) {
    Json hosts = Json::array();
    for (const HostStatus& s : all)
        hosts.push_back(host_json(s));
    Json out = {{"runtime_dir", runtime}, {"mode", emu::backend_mode_name(mode)}, {"hosts", hosts}};
    // A name or path that is not UTF-8 is written with U+FFFD rather than refused.
    return out.dump(-1, ' ', false, Json::error_handler_t::replace);
}

} // namespace rdmaemu
