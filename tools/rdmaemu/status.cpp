// rdmaemu status: asks each host's daemon for its state (sessions and their objects).
#include "commands.h"
#include "emu/backend_mode.h"
#include "emu/ipc/control_client.h"
#include "hostset.h"
#include "json.h"
#include "locations.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

namespace rdmaemu {

namespace {

constexpr OptionSpec kOptions[] = {
    {"json", "", "print one JSON document instead of a table"},
};

struct HostStatus {
    const HostEntry* entry = nullptr;
    bool up = false;
    std::string error; // why it is down, or why its status could not be read
    std::string raw;   // the daemon's JSON text
    std::optional<Json> doc;
};

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

HostStatus query(const HostEntry& h) {
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

// The library's backend mode as programs started from this environment get it.
void print_mode(emu::BackendMode mode, bool valid) {
    std::printf("mode %s (RDMAEMU_MODE%s)", emu::backend_mode_name(mode),
                valid ? "" : " is not emulated, hardware or mixed");
    if (mode != emu::BackendMode::Emulated) {
        const char* real = std::getenv("RDMAEMU_REAL_LIBIBVERBS");
        std::printf(": rdma-core's devices from %s",
                    real && *real ? real : "the system libibverbs");
    }
    std::printf("\n");
}

void print_json(const std::string& runtime, emu::BackendMode mode,
                const std::vector<HostStatus>& all) {
    std::string out = "{\"runtime_dir\":" + json_quote(runtime) +
                      ",\"mode\":" + json_quote(emu::backend_mode_name(mode)) + ",\"hosts\":[";
    for (size_t i = 0; i < all.size(); ++i)
        out += (i ? "," : "") + host_json(all[i]);
    std::printf("%s]}\n", out.c_str());
}

void print_sessions(const Json& doc) {
    const Json* sessions = doc.find("sessions");
    if (!sessions || sessions->items.empty()) {
        std::printf("  no sessions\n");
        return;
    }
    for (const Json& s : sessions->items) {
        std::string objects;
        if (const Json* o = s.find("objects"))
            for (const auto& [name, count] : o->members)
                objects += " " + name + "=" + o->str(name);
        std::printf("  session %-4s pid %-7s %-16s %-8s%s\n", s.str("session").c_str(),
                    s.str("pid").c_str(), s.str("comm").c_str(), s.str("kind").c_str(),
                    objects.c_str());
        if (const Json* qps = s.find("qps"))
            for (const Json& q : qps->items)
                std::printf("    qp %-8s %-3s %-5s tx %s pkts %s B  rx %s pkts %s B  retrans %s  "
                            "timeouts %s  naks %s/%s  rnr-naks %s/%s (sent/received)\n",
                            q.str("qpn").c_str(), q.str("type").c_str(), q.str("state").c_str(),
                            q.str("tx_packets").c_str(), q.str("tx_bytes").c_str(),
                            q.str("rx_packets").c_str(), q.str("rx_bytes").c_str(),
                            q.str("retransmits").c_str(), q.str("timeouts").c_str(),
                            q.str("naks_sent").c_str(), q.str("naks_received").c_str(),
                            q.str("rnr_naks_sent").c_str(), q.str("rnr_naks_received").c_str());
        if (const Json* ids = s.find("cm_ids"))
            for (const Json& c : ids->items)
                std::printf("    cm id %-4s %-14s %-12s %s -> %s  qpn %s\n", c.str("id").c_str(),
                            c.str("state").c_str(), c.str("cm_state").c_str(),
                            c.str("local").c_str(), c.str("remote").c_str(), c.str("qpn").c_str());
        if (const Json* mrs = s.find("mrs"))
            for (const Json& m : mrs->items)
                std::printf("    mr %-4s %s B  %-13s (%s B shared with the NIC)\n",
                            m.str("handle").c_str(), m.str("length").c_str(),
                            m.str("engine").c_str(), m.str("shared_bytes").c_str());
    }
}

// The host's wire (and CM) counters on a line each: name=value for every counter the daemon
// reports.
void print_counters(const Json& doc) {
    for (const auto& [member, label] : {std::pair{"counters", "wire"}, {"cm", "cm"}}) {
        const Json* c = doc.find(member);
        if (!c) continue;
        std::string line;
        for (const auto& [name, value] : c->members)
            line += " " + name + "=" + c->str(name);
        std::printf("  %s:%s\n", label, line.c_str());
    }
}

// rxe's hw_counters and ours, on one line.
void print_hw_counters(const Json& doc) {
    const Json* c = doc.find("hw_counters");
    if (!c) return;
    std::string line;
    for (const auto& [name, value] : c->members)
        line += " " + name + "=" + c->str(name);
    std::printf("  transport:%s\n", line.c_str());
}

// The host's recent failures and notices, oldest first, each with who and why.
void print_errors(const Json& doc) {
    const Json* e = doc.find("errors");
    const Json* recent = e ? e->find("recent") : nullptr;
    if (!recent || recent->items.empty()) return;
    std::printf("  recent errors (%s in all, the last %zu kept):\n", e->str("total").c_str(),
                recent->items.size());
    for (const Json& r : recent->items) {
        std::string qp = r.str("qpn") == "0x0" ? "" : "qp " + r.str("qpn") + ": ";
        std::printf("    %s %s: %s%s\n", r.str("time").c_str(), r.str("who").c_str(), qp.c_str(),
                    r.str("text").c_str());
    }
}

void print_text(const std::string& runtime, const std::vector<HostStatus>& all) {
    std::printf("hosts in %s\n", runtime.c_str());
    for (const auto& s : all) {
        const HostEntry& h = *s.entry;
        if (!s.doc) {
            std::printf("host %d  %-13s %-6s %s (%s)\n", h.index, h.address.c_str(),
                        h.device.c_str(), s.up ? "up" : "down", s.error.c_str());
            continue;
        }
        const Json& d = *s.doc;
        std::printf("host %d  %-13s %-6s up  daemon pid %s  mtu %s  gid %s\n", h.index,
                    d.str("address").c_str(), d.str("device").c_str(), d.str("daemon_pid").c_str(),
                    d.str("mtu").c_str(), d.str("gid").c_str());
        // How IPv4 peers that send an IP ID are checked (docs/interop.md).
        if (d.find("icrc_ipv4")) {
            const std::string policy = d.str("icrc_ipv4");
            std::printf("  icrc: --icrc-ipv4 %s (%s)\n", policy.c_str(),
                        policy == "recover-id"
                            ? "an IPv4 peer's IP ID is found from its ICRC: a 16-bit check for "
                              "them, counted in icrc_ipv4_id_recovered"
                            : "IPv4 peers must send IP ID 0, other packets fail as icrc_errors");
        }
        print_counters(d);
        print_hw_counters(d);
        print_sessions(d);
        print_errors(d);
    }
}

int status(const ParsedArgs& args) {
    std::string runtime = runtime_dir_abs();
    auto hosts = load_hosts(runtime);
    std::vector<HostStatus> all;
    for (const auto& h : hosts)
        all.push_back(query(h));
    bool valid = true;
    emu::BackendMode mode = emu::backend_mode_from_env(&valid);
    bool all_up = !all.empty() &&
                  std::all_of(all.begin(), all.end(), [](const HostStatus& h) { return h.up; });
    int rc = all_up ? 0 : kExitHostDown; // scripts can wait for, or check, a whole set
    if (args.has("json")) {
        print_json(runtime, mode, all);
        return rc;
    }
    print_mode(mode, valid);
    if (all.empty())
        std::printf("no hosts up in %s\n", runtime.c_str());
    else
        print_text(runtime, all);
    return rc;
}

} // namespace

const CommandDef kStatusCommand = {
    "status", "[--json]", "show each host's daemon, its sessions and their objects",
    kOptions, false,      status};

} // namespace rdmaemu
