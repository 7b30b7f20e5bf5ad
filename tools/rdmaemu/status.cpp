// rdmaemu status: asks each host's daemon for its state (sessions and their objects).
#include "commands.h"
#include "emu/backend_mode.h"
#include "emu/ipc/control_client.h"
#include "hostset.h"
#include "json.h"
#include "locations.h"
#include "set_network.h"
#include "status_gather.h"

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

void print_sessions(const Json& doc) {
    const Json* sessions = member(doc, "sessions");
    if (!sessions || sessions->empty()) {
        std::printf("  no sessions\n");
        return;
    }
    for (const Json& s : *sessions) {
        std::string objects;
        if (const Json* o = member(s, "objects"))
            for (const auto& [name, count] : o->items())
                objects += " " + name + "=" + value_text(count);
        std::printf("  session %-4s pid %-7s %-16s %-8s%s\n", member_text(s, "session").c_str(),
                    member_text(s, "pid").c_str(), member_text(s, "comm").c_str(),
                    member_text(s, "kind").c_str(), objects.c_str());
        if (const Json* qps = member(s, "qps"))
            for (const Json& q : *qps)
                std::printf(
                    "    qp %-8s %-3s %-5s tx %s pkts %s B  rx %s pkts %s B  retrans %s  "
                    "timeouts %s  naks %s/%s  rnr-naks %s/%s (sent/received)\n",
                    member_text(q, "qpn").c_str(), member_text(q, "type").c_str(),
                    member_text(q, "state").c_str(), member_text(q, "tx_packets").c_str(),
                    member_text(q, "tx_bytes").c_str(), member_text(q, "rx_packets").c_str(),
                    member_text(q, "rx_bytes").c_str(), member_text(q, "retransmits").c_str(),
                    member_text(q, "timeouts").c_str(), member_text(q, "naks_sent").c_str(),
                    member_text(q, "naks_received").c_str(),
                    member_text(q, "rnr_naks_sent").c_str(),
                    member_text(q, "rnr_naks_received").c_str());
        if (const Json* ids = member(s, "cm_ids"))
            for (const Json& c : *ids)
                std::printf("    cm id %-4s %-14s %-12s %s -> %s  qpn %s\n",
                            member_text(c, "id").c_str(), member_text(c, "state").c_str(),
                            member_text(c, "cm_state").c_str(), member_text(c, "local").c_str(),
                            member_text(c, "remote").c_str(), member_text(c, "qpn").c_str());
        if (const Json* mrs = member(s, "mrs"))
            for (const Json& m : *mrs)
                std::printf("    mr %-4s %s B  %-13s (%s B shared with the NIC)\n",
                            member_text(m, "handle").c_str(), member_text(m, "length").c_str(),
                            member_text(m, "engine").c_str(),
                            member_text(m, "shared_bytes").c_str());
    }
}

// The host's wire (and CM) counters on a line each: name=value for every counter the daemon
// reports.
void print_counters(const Json& doc) {
    for (const auto& [key, label] : {std::pair{"counters", "wire"}, {"cm", "cm"}}) {
        const Json* c = member(doc, key);
        if (!c) continue;
        std::string line;
        for (const auto& [name, value] : c->items())
            line += " " + name + "=" + value_text(value);
        std::printf("  %s:%s\n", label, line.c_str());
    }
}

// rxe's hw_counters and ours, on one line.
void print_hw_counters(const Json& doc) {
    const Json* c = member(doc, "hw_counters");
    if (!c) return;
    std::string line;
    for (const auto& [name, value] : c->items())
        line += " " + name + "=" + value_text(value);
    std::printf("  transport:%s\n", line.c_str());
}

// The host's recent failures and notices, oldest first, each with who and why.
void print_errors(const Json& doc) {
    const Json* e = member(doc, "errors");
    const Json* recent = e ? member(*e, "recent") : nullptr;
    if (!recent || recent->empty()) return;
    std::printf("  recent errors (%s in all, the last %zu kept):\n",
                member_text(*e, "total").c_str(), recent->size());
    for (const Json& r : *recent) {
        std::string qp = member_text(r, "qpn") == "0x0" ? "" : "qp " + member_text(r, "qpn") + ": ";
        std::printf("    %s %s: %s%s\n", member_text(r, "time").c_str(),
                    member_text(r, "who").c_str(), qp.c_str(), member_text(r, "text").c_str());
    }
}

void print_text(const std::string& runtime, const std::vector<HostStatus>& all) {
    std::printf("hosts in %s\n", runtime.c_str());
    std::printf("net devices: %s\n",
                set_network_alive(runtime)
                    ? "host<i> for host i, in the set's network namespace (rdmaemu run enters it)"
                    : "none (programs run in the machine's namespaces)");
    for (const auto& s : all) {
        const HostEntry& h = *s.entry;
        if (!s.doc) {
            std::printf("host %d  %-13s %-6s %s (%s)\n", h.index, h.address.c_str(),
                        h.device.c_str(), s.up ? "up" : "down", s.error.c_str());
            continue;
        }
        const Json& d = *s.doc;
        std::printf("host %d  %-13s %-6s up  daemon pid %s  mtu %s  gid %s\n", h.index,
                    member_text(d, "address").c_str(), member_text(d, "device").c_str(),
                    member_text(d, "daemon_pid").c_str(), member_text(d, "mtu").c_str(),
                    member_text(d, "gid").c_str());
        // How IPv4 peers that send an IP ID are checked (docs/interop.md); an IPv6 host has no
        // such policy.
        if (member_text(d, "address").find(':') != std::string::npos) {
            std::printf("  icrc: checked whole for every peer (IPv6: every field it covers is "
                        "known)\n");
        } else if (member(d, "icrc_ipv4")) {
            const std::string policy = member_text(d, "icrc_ipv4");
            std::printf("  icrc: --icrc-ipv4 %s (%s)\n", policy.c_str(),
                        policy == "recover-id"
                            ? "an IPv4 peer's IP ID is found from its ICRC: a 16-bit check for "
                              "them, counted in icrc_ipv4_id_recovered"
                            : "IPv4 peers must send IP ID 0, other packets fail as icrc_errors");
        }
        // The bytes the host's QPs may have in flight together: half the link's receive buffer
        // where rmem_max kept that small (engines.h host_window_bytes).
        if (member(d, "link_receive_buffer_bytes"))
            std::printf(
                "  window: %llu KiB in flight at most (the link's receive buffer: %llu KiB)\n",
                std::stoull(member_text(d, "host_window_bytes")) / 1024,
                std::stoull(member_text(d, "link_receive_buffer_bytes")) / 1024);
        if (const std::string sched = member_text(d, "scheduling"); sched == "realtime")
            std::printf("  scheduling: real-time (SCHED_FIFO 1): the NIC preempts polling apps, "
                        "whose polls make no syscall\n");
        else if (!sched.empty())
            std::printf("  scheduling: %s (%s); the apps' polls yield the CPU now and then\n",
                        sched.c_str(),
                        sched == "normal" ? "--scheduling normal" : "its log says why");
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
    all.reserve(hosts.size());
    for (const auto& h : hosts)
        all.push_back(query_host(h));
    bool valid = true;
    emu::BackendMode mode = emu::backend_mode_from_env(&valid);
    bool all_up = !all.empty() &&
                  std::all_of(all.begin(), all.end(), [](const HostStatus& h) { return h.up; });
    int rc = all_up ? 0 : kExitHostDown; // scripts can wait for, or check, a whole set
    if (args.has("json")) {
        std::printf("%s\n", status_json(runtime, mode, all).c_str());
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
