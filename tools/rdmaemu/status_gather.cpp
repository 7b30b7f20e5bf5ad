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

// {"host":I, <the daemon's members>, "up":true}: the daemon's text is passed through as is, so
// keys this tool does not know yet (counters) reach scripts unchanged.
std::string host_json(const HostStatus& s) {
    std::string out = "{\"host\":" + std::to_string(s.entry->index) + ",";
    if (s.doc) {
        std::string_view body = s.raw;
        body = body.substr(body.find('{') + 1);
        body = body.substr(0, body.rfind('}'));
        if (!s.doc->members.empty()) out += std::string(body) + ",";
    } else {
        out += "\"address\":" + json_quote(s.entry->address) +
               ",\"device\":" + json_quote(s.entry->device) +
               ",\"daemon_pid\":" + std::to_string(s.entry->pid) + ",";
    }
    if (!s.error.empty()) out += "\"error\":" + json_quote(s.error) + ",";
    return out + "\"up\":" + (s.up ? "true" : "false") + "}";
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
    s.doc = parse_json(s.raw);
    if (!s.doc || s.doc->kind != Json::Kind::Object) {
        s.doc.reset();
        s.error = "unreadable status from the daemon";
    }
    return s;
}

std::string status_json(const std::string& runtime, emu::BackendMode mode,
                        const std::vector<HostStatus>& all) {
    std::string out = "{\"runtime_dir\":" + json_quote(runtime) +
                      ",\"mode\":" + json_quote(emu::backend_mode_name(mode)) + ",\"hosts\":[";
    for (size_t i = 0; i < all.size(); ++i)
        out += (i ? "," : "") + host_json(all[i]);
    return out + "]}";
}

} // namespace rdmaemu
