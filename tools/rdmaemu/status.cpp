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
