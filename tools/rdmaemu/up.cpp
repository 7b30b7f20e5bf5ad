// rdmaemu up: starts a set of emulated hosts, one nicsimd each.
#include "commands.h"
#include "daemon.h"
#include "emu/paths.h"
#include "emu/private_files.h"
#include "emu/wire/ip_address.h"
#include "hostset.h"
#include "locations.h"
#include "path_mtu.h"
#include "set_network.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace rdmaemu {

namespace {

constexpr std::string_view kDevice = "emu0";
constexpr auto kReadyLimit = std::chrono::seconds(5);
constexpr auto kStopGrace = std::chrono::seconds(5);
constexpr int kLogTailLines = 20;

constexpr std::string_view kMtus[] = {"256", "512", "1024", "2048", "4096"};
constexpr std::string_view kLogLevels[] = {"trace", "debug", "info", "warn", "error"};
constexpr std::string_view kIcrcPolicies[] = {"recover-id", "id-zero"};
constexpr std::string_view kSchedulingPolicies[] = {"auto", "normal", "realtime"};

// An option `up` passes on to every host's nicsimd as given, once the parser has checked it.
constexpr OptionSpec to_daemon(std::string_view name, std::string_view value, std::string_view help,
                               ValueKind kind) {
    return {name, value, help, {}, true, kind};
}

// Each host applies the faults, independently per packet, to the packets it sends.
constexpr OptionSpec kOptions[] = {
    {"hosts", "N", "number of hosts to start (1-254)"},
    {"subnet", "S", "put host i on 127.0.S.i (0..254; default: the first S whose port is free)"},
    {"address", "A1[,A2...]",
     "put host i on the i-th address instead (one per host, all IPv4 or all IPv6): an address "
     "of this machine, of a network namespace or of a VM's tap, so that hosts on other machines "
     "reach it"},
    {"icrc-ipv4", "POLICY",
     "IPv4 peers that send an IP ID (Linux Soft-RoCE): recover-id finds it from the ICRC, a "
     "16-bit check, counted in icrc_ipv4_id_recovered (default); id-zero drops their packets",
     kIcrcPolicies, true},
    {"mtu", "M",
     "path MTU of every host's port (default: the largest that fits the MTU of the interface "
     "the host's address is on, as Soft-RoCE chooses: 4096 on loopback, 1024 on a 1500-byte "
     "Ethernet)",
     kMtus},
    {"log-level", "L", "daemon log level", kLogLevels, true},
    to_daemon("drop", "P", "drop each sent packet with probability P (0..1)",
              ValueKind::probability),
    to_daemon("duplicate", "P", "send each packet twice with probability P (0..1)",
              ValueKind::probability),
    to_daemon("reorder", "P", "hold a packet back behind the next with probability P (0..1)",
              ValueKind::probability),
    to_daemon("corrupt", "P", "flip one bit of a packet with probability P (0..1); ICRC fails",
              ValueKind::probability),
    to_daemon("delay-us", "D", "delay every sent packet by D microseconds", ValueKind::count),
    to_daemon("seed", "S", "seed of the fault decisions: same seed, same faults (default 0)",
              ValueKind::count64),
    {"pcap", "DIR",
     "capture each host's packets, sent and received, to DIR/host<i>.pcap (pcapng; what the "
     "fault injector did to a packet in its comment)"},
    to_daemon("pcap-limit", "BYTES",
              "stop each capture before it passes BYTES (whole packets; default: no limit)",
              ValueKind::count64),
    to_daemon("allow-uid", "UIDS",
              "let these users (uids, comma-separated) use the hosts too: a shared set",
              ValueKind::uid_list),
    to_daemon("max-per-process", "SHARES",
              "how many QPs, CQs, MRs and device contexts one process may hold on each host, e.g. "
              "qp=1000,cq=1000,mr=4096,context=64 (any of them); one more is refused with EAGAIN",
              ValueKind::share_list),
    to_daemon("poll-us", "US",
              "how long each NIC keeps polling after work before it sleeps (default 50; on a "
              "machine of 1 or 2 CPUs 500, or 0 with --scheduling realtime; the default stops "
              "while polling costs an app its CPU, a value given does not)",
              ValueKind::count),
    {"scheduling", "POLICY",
     "the NICs' share of the CPU: realtime (SCHED_FIFO: a NIC preempts a polling app at once, "
     "and the apps' polls make no syscall; root or an RLIMIT_RTPRIO allows it), normal (a short "
     "slice, nice -10 where allowed; on 1 or 2 CPUs the apps' polls yield the CPU now and then), "
     "or auto (the default: realtime where allowed and the NICs have more than one CPU, else "
     "normal)",
     kSchedulingPolicies, true},
    to_daemon("cm-response-timeout", "T",
              "rdma_cm: how long a peer's CM may take to answer, 4.096 us * 2^T (0..31; default "
              "20, about 4 s, as Linux)",
              ValueKind::count),
    to_daemon("cm-retries", "N",
              "rdma_cm: how often a CM request is sent again before it fails (0..15; default 15)",
              ValueKind::count),
    to_daemon("udp-port", "N",
              "UDP port of the hosts' RoCE v2 traffic (default 4791; another one where Linux "
              "Soft-RoCE holds 4791)",
              ValueKind::count),
};

// The options that make hosts misbehave, in the order the summary line shows them.
constexpr std::string_view kFaultOptions[] = {"drop",    "duplicate", "reorder",
                                              "corrupt", "delay-us",  "seed"};

int fail(const std::string& msg) {
    std::fprintf(stderr, "rdmaemu up: %s\n", msg.c_str());
    return kExitFailure;
}

// Modes of the runtime and host directories and of the record: owner only, or for a shared set
// (--allow-uid) reachable by name (others open the sockets, the daemons check their uid) and
// still not listable or writable. Logs, pid files and captures are 0600 either way.
struct SetModes {
    mode_t dirs;
    mode_t record;
};

SetModes set_modes(const ParsedArgs& args) {
    return args.has("allow-uid") ? SetModes{0711, 0644} : SetModes{0700, 0600};
}

// `path`, made when missing, else checked (emu/private_files.h: another user's directory, a
// symbolic link or one others can write could capture our sockets and logs); set to `mode`
// on each start, since it is rdmaemu's own.
std::optional<std::string> prepare_own_dir(const std::string& path, mode_t mode,
                                           const std::string& what) {
    emu::Opened dir = emu::make_private_dir(path, mode);
    if (!dir.fd) return "refusing the " + what + ": " + dir.error;
    if (::fchmod(dir.fd.get(), mode) != 0)
        return "cannot set the mode of " + path + ": " + std::strerror(errno);
    return std::nullopt;
}

std::optional<std::string> refuse_if_up(const std::string& runtime) {
    auto existing = load_hosts(runtime);
    for (const auto& h : existing)
        if (daemon_alive(h))
            return "hosts are already up in " + runtime + " (host " + std::to_string(h.index) +
                   ", nicsimd pid " + std::to_string(h.pid) + "); run 'rdmaemu down' first";
    remove_host_files(runtime, existing); // a stale set: its daemons are gone
    stop_set_network(runtime);
    return std::nullopt;
}

// DIR/host<i>.pcap, where host i writes its capture.
std::string pcap_path(const std::string& dir, int host) {
    return (fs::path(dir) / ("host" + std::to_string(host) + ".pcap")).string();
}

// The --pcap directory, absolute (the daemons need not share our cwd), made when missing (0700)
// and checked as the runtime directory is; or an error.
std::optional<std::string> prepare_pcap_dir(const std::string& dir, std::string& abs) {
    std::error_code ec;
    fs::path p = fs::absolute(dir, ec);
    if (ec) return "--pcap " + dir + ": " + ec.message();
    abs = p.lexically_normal().string();
    if (abs.size() > 1 && abs.back() == '/') abs.pop_back();
    emu::Opened opened = emu::make_private_dir(abs, 0700);
    if (!opened.fd) return "refusing the --pcap directory: " + opened.error;
    if (::access(abs.c_str(), W_OK) != 0)
        return "cannot write to --pcap directory " + abs + ": " + std::strerror(errno);
    return std::nullopt;
}

// 127.0.S.1 .. 127.0.S.N.
std::vector<std::string> subnet_addresses(int subnet, int count) {
    std::vector<std::string> out;
    for (int i = 1; i <= count; ++i)
        out.push_back("127.0." + std::to_string(subnet) + "." + std::to_string(i));
    return out;
}

// "A1,...,AN": every host of the set, which each daemon needs for multicast (the emulated
// fabric delivers a multicast packet to every host).
std::string joined(const std::vector<std::string>& addresses) {
    std::string out;
    for (const auto& a : addresses)
        out += (out.empty() ? "" : ",") + a;
    return out;
}

// --address A1,A2,...: one address per host, all IPv4 or all IPv6 (a host's socket speaks its
// address's family, and hosts of two families cannot talk), each bindable on the port now; `out`
// gets them as nicsimd prints them. Returns an error message.
std::optional<std::string> parse_addresses(const std::string& text, int count, int port,
                                           std::vector<std::string>& out) {
    size_t at = 0;
    while (at <= text.size()) {
        size_t comma = text.find(',', at);
        out.push_back(text.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
        if (comma == std::string::npos) break;
        at = comma + 1;
    }
    if (static_cast<int>(out.size()) != count)
        return "--address gives " + std::to_string(out.size()) + " address" +
               (out.size() == 1 ? "" : "es") + " for " + std::to_string(count) + " host" +
               (count == 1 ? "" : "s") + ": one per host";
    std::optional<emu::wire::IpAddress> first;
    for (size_t i = 0; i < out.size(); ++i) {
        auto a = emu::wire::IpAddress::parse(out[i]);
        if (!a) return "--address: not an IPv4 or IPv6 address: " + out[i];
        if (std::string why = emu::wire::host_address_fault(*a); !why.empty())
            return "--address: " + why;
        if (!first) first = a;
        if (a->is_ipv4() != first->is_ipv4())
            return "--address mixes IPv4 (" + (a->is_ipv4() ? *a : *first).text() + ") and IPv6 (" +
                   (a->is_ipv4() ? *first : *a).text() +
                   "): a host speaks its address's IP version only, so hosts of the two could not "
                   "talk; start one set per version";
        out[i] = a->text(); // as nicsimd and status write it
        for (size_t j = 0; j < i; ++j)
            if (out[j] == out[i]) return "--address: " + out[i] + " is given twice";
        if (int err = address_bindable(out[i], port))
            return "cannot bind UDP " + (a->is_ipv4() ? out[i] : "[" + out[i] + "]") + ":" +
                   std::to_string(port) + " for host " + std::to_string(i + 1) + ": " +
                   std::strerror(err) +
                   (err == EADDRNOTAVAIL ? " (not an address of this machine or network namespace)"
                    : err == EADDRINUSE  ? " (another set or Linux Soft-RoCE holds it: "
                                           "--udp-port)"
                                         : "");
    }
    return std::nullopt;
}

// The path MTU of a host's port and where it came from, for the table `up` prints.
struct PortMtu {
    int mtu;
    std::string why;
};

PortMtu port_mtu(const ParsedArgs& args, const std::string& address) {
    if (auto v = args.get("mtu")) return {parse_int(*v, 256, 4096).value_or(1024), "--mtu"};
    auto netdev = interface_mtu(address);
    if (!netdev) return {1024, "no interface here holds " + address + ": Ethernet's 1500 assumed"};
    const std::string why = "the largest that fits " + netdev->name + "'s MTU of " +
                            std::to_string(netdev->mtu) + "; --mtu M to choose";
    if (int mtu = roce_mtu_fitting(netdev->mtu)) return {mtu, why};
    return {256, netdev->name + "'s MTU of " + std::to_string(netdev->mtu) +
                     " fits no IB MTU: the smallest"};
}

std::vector<std::string> daemon_argv(const ParsedArgs& args, const std::string& runtime,
                                     const std::string& address, int host, int mtu,
                                     const std::string& pcap_dir, const std::string& peers) {
    std::vector<std::string> argv = {nicsimd_path(),
                                     "--name",
                                     std::string(kDevice),
                                     "--address",
                                     address,
                                     "--socket",
                                     emu::host_socket_path(runtime, host),
                                     "--log-file",
                                     log_file_path(runtime, host),
                                     "--peers",
                                     peers,
                                     "--diag-dir",
                                     runtime,
                                     "--mtu",
                                     std::to_string(mtu)};
    for (const auto& spec : kOptions) {
        if (!spec.to_daemon) continue;
        if (auto v = args.get(spec.name)) {
            argv.push_back("--" + std::string(spec.name));
            if (!spec.value.empty()) argv.push_back(*v);
        }
    }
    if (!pcap_dir.empty()) {
        argv.push_back("--pcap");
        argv.push_back(pcap_path(pcap_dir, host));
    }
    return argv;
}

// Each host's directory, checked or made, and its log, new: all of them before any daemon starts.
// The logs are the daemons' stdout and stderr. Returns an error message.
std::optional<std::string> prepare_hosts(const std::string& runtime, int count, mode_t dir_mode,
                                         std::vector<emu::OwnedFd>& logs) {
    for (int i = 1; i <= count; ++i) {
        if (auto err = prepare_own_dir(emu::host_dir(runtime, i), dir_mode,
                                       "host directory of host " + std::to_string(i)))
            return err;
        emu::Opened log =
            emu::create_private_file(log_file_path(runtime, i), O_WRONLY | O_APPEND, 0600);
        if (!log.fd) return "refusing host " + std::to_string(i) + "'s log: " + log.error;
        logs.push_back(std::move(log.fd));
    }
    return std::nullopt;
}

// Starts every host, then waits for each; on any failure stops them all.
int start_hosts(const ParsedArgs& args, const std::string& runtime,
                const std::vector<std::string>& addresses, const std::vector<PortMtu>& mtus,
                const std::string& pcap_dir, std::vector<HostEntry>& hosts) {
    const int count = static_cast<int>(addresses.size());
    const SetModes modes = set_modes(args);
    std::vector<emu::OwnedFd> logs;
    if (auto err = prepare_hosts(runtime, count, modes.dirs, logs)) return fail(*err);
    for (int i = 1; i <= count; ++i) {
        HostEntry h{i, addresses[static_cast<size_t>(i - 1)], std::string(kDevice),
                    0, emu::host_socket_path(runtime, i),     log_file_path(runtime, i)};
        pid_t pid = spawn_detached(daemon_argv(args, runtime, h.address, i,
                                               mtus[static_cast<size_t>(i - 1)].mtu, pcap_dir,
                                               joined(addresses)),
                                   logs[static_cast<size_t>(i - 1)].get());
        if (pid < 0) {
            stop_daemons(hosts, kStopGrace);
            remove_host_files(runtime, hosts);
            return fail("cannot start nicsimd: " + std::string(std::strerror(-pid)));
        }
        h.pid = pid;
        hosts.push_back(h);
        if (auto err = write_pid_file(runtime, i, pid))
            std::fprintf(stderr, "rdmaemu up: %s\n", err->c_str());
    }
    // Recorded before the wait, so that `down` finds them even if this process dies now.
    if (auto err = save_hosts(runtime, hosts, modes.record))
        std::fprintf(stderr, "rdmaemu up: %s\n", err->c_str());
    for (const auto& h : hosts) {
        ReadyResult r = wait_ready(h.socket, h.pid, kReadyLimit);
        if (r.ready) continue;
        std::string why = r.exited ? "exited (" + describe_wait_status(r.wait_status) + ")"
                                   : "did not answer on " + h.socket + " within 5 s";
        std::fprintf(stderr, "rdmaemu up: host %d (nicsimd pid %d) %s; last lines of %s:\n%s",
                     h.index, static_cast<int>(h.pid), why.c_str(), h.log.c_str(),
                     tail_file(h.log, kLogTailLines).c_str());
        stop_daemons(hosts, kStopGrace);
        remove_host_files(runtime, hosts);
        return kExitFailure;
    }
    return 0;
}

// "drop 0.05, reorder 0.01, seed 1", or "none".
std::string faults_summary(const ParsedArgs& args) {
    std::string out;
    for (auto name : kFaultOptions)
        if (auto v = args.get(name))
            out += (out.empty() ? "" : ", ") + std::string(name) + " " + *v;
    return out.empty() ? "none" : out;
}

// The set's network namespace (set_network.h), or why there is none, said once here.
std::string start_network(const ParsedArgs& args, const std::string& runtime, int subnet, int count,
                          int mtu) {
    auto err = start_set_network(runtime, subnet, count, mtu, set_modes(args).record);
    if (!err)
        return "host1" + std::string(count > 1 ? ".." + netdev_name(count) : "") +
               " in the set's network namespace (rdmaemu run enters it)";
    std::fprintf(stderr,
                 "rdmaemu up: no network namespace for the set: %s; programs will run in the "
                 "machine's namespaces, without their host's net device and /dev/infiniband "
                 "node\n",
                 err->c_str());
    return "none (programs run in the machine's namespaces)";
}

// "4096 (the largest that fits lo's MTU of 65536; ...)", or one such per host where they differ.
std::string mtus_summary(const std::vector<PortMtu>& mtus) {
    auto same = [&](const PortMtu& m) { return m.mtu == mtus[0].mtu && m.why == mtus[0].why; };
    if (std::all_of(mtus.begin(), mtus.end(), same))
        return std::to_string(mtus[0].mtu) + " (" + mtus[0].why + ")";
    std::string out;
    for (size_t i = 0; i < mtus.size(); ++i)
        out += (i ? "; host " : "host ") + std::to_string(i + 1) + " " +
               std::to_string(mtus[i].mtu) + " (" + mtus[i].why + ")";
    return out;
}

void print_table(const std::string& runtime, const std::vector<HostEntry>& hosts,
                 const ParsedArgs& args, const std::vector<PortMtu>& mtus,
                 const std::string& pcap_dir, const std::string& network) {
    std::printf("%zu host%s up in %s\n", hosts.size(), hosts.size() == 1 ? "" : "s",
                runtime.c_str());
    std::printf("faults:  %s\n", faults_summary(args).c_str());
    std::printf("mtu:     %s\n", mtus_summary(mtus).c_str());
    std::printf("capture: %s\n", pcap_dir.empty() ? "off" : (pcap_dir + "/host<i>.pcap").c_str());
    std::printf("netdevs: %s\n\n", network.c_str());
    // The GID is the address (IPv4-mapped for IPv4); the columns as wide as the longest.
    std::vector<std::string> gids;
    int address_width = 13, gid_width = 21;
    for (const auto& h : hosts) {
        auto a = emu::wire::IpAddress::parse(h.address);
        gids.push_back(a ? a->gid_text() : "?");
        address_width = std::max(address_width, static_cast<int>(h.address.size()));
        gid_width = std::max(gid_width, static_cast<int>(gids.back().size()));
    }
    std::printf("%-5s %-*s %-7s %-*s %s\n", "HOST", address_width, "ADDRESS", "DEVICE", gid_width,
                "GID", pcap_dir.empty() ? "LOG" : "LOG / PCAP");
    for (size_t i = 0; i < hosts.size(); ++i) {
        const HostEntry& h = hosts[i];
        std::printf("%-5d %-*s %-7s %-*s %s\n", h.index, address_width, h.address.c_str(),
                    h.device.c_str(), gid_width, gids[i].c_str(), h.log.c_str());
        if (!pcap_dir.empty())
            std::printf("%*s%s\n", 5 + 1 + address_width + 1 + 7 + 1 + gid_width + 1, "",
                        pcap_path(pcap_dir, h.index).c_str());
    }
    std::printf("\nRun a program on a host:  rdmaemu run --host 1 -- ibv_devinfo\n");
    if (const char* env = std::getenv("RDMAEMU_RUNTIME_DIR"); env && *env)
        std::printf("(with RDMAEMU_RUNTIME_DIR=%s set, as now)\n", runtime.c_str());
    std::printf("Stop them:                rdmaemu down\n");
}

int up(const ParsedArgs& args) {
    auto hosts_arg = args.get("hosts");
    if (!hosts_arg) {
        std::fprintf(stderr, "rdmaemu up: --hosts is required\n");
        return kExitUsage;
    }
    auto count = parse_int(*hosts_arg, 1, 254);
    if (!count) {
        std::fprintf(stderr, "rdmaemu up: --hosts wants a number from 1 to 254\n");
        return kExitUsage;
    }
    std::string runtime = runtime_dir_abs();
    if (emu::host_socket_path(runtime, *count).size() >= sizeof(sockaddr_un::sun_path))
        return fail("runtime directory path too long for a unix socket: " + runtime);
    if (::access(nicsimd_path().c_str(), X_OK) != 0)
        return fail("nicsimd not found at " + nicsimd_path() + " (build the nicsimd target)");
    struct stat st {};
    const bool existed = ::lstat(runtime.c_str(), &st) == 0;
    if (existed && S_ISDIR(st.st_mode) && ::access(runtime.c_str(), W_OK) != 0)
        return fail("the runtime directory " + runtime + " is not writable (" +
                    std::strerror(errno) +
                    "): set RDMAEMU_RUNTIME_DIR to a directory you can write");
    if (auto err = prepare_own_dir(runtime, set_modes(args).dirs, "runtime directory"))
        return fail(*err + (existed ? " (remove it, or set RDMAEMU_RUNTIME_DIR to a directory of "
                                      "your own)"
                                    : " (set RDMAEMU_RUNTIME_DIR to a directory you can write)"));
    if (auto err = refuse_if_up(runtime)) return fail(*err);
    std::string pcap_dir;
    if (auto dir = args.get("pcap")) {
        if (dir->empty()) return fail("--pcap wants a directory");
        if (auto err = prepare_pcap_dir(*dir, pcap_dir)) return fail(*err);
    } else if (args.has("pcap-limit")) {
        return fail("--pcap-limit limits a capture: it needs --pcap DIR");
    }
    int port = kRoceV2Port;
    if (auto text = args.get("udp-port")) {
        auto p = parse_int(*text, 1, 65535);
        if (!p) return fail("--udp-port wants a port number from 1 to 65535");
        port = *p;
    }
    std::vector<std::string> addresses;
    if (auto text = args.get("address")) {
        if (args.has("subnet")) return fail("--address and --subnet exclude each other");
        if (auto err = parse_addresses(*text, *count, port, addresses)) return fail(*err);
    }
    std::optional<int> subnet;
    if (!addresses.empty()) {
        // The hosts' addresses are given: no subnet of 127/8 to pick.
    } else if (auto text = args.get("subnet")) {
        subnet = parse_int(*text, 0, 254);
        if (!subnet) return fail("--subnet wants a number from 0 to 254 (hosts on 127.0.S.i)");
        if (!subnet_free(*subnet, port))
            return fail("UDP port " + std::to_string(port) + " is taken on 127.0." + *text +
                        ".1: another set runs there (see its rdmaemu status), or choose another "
                        "--subnet");
    } else {
        subnet = pick_subnet(port);
    }
    if (addresses.empty() && !subnet) {
        std::string why =
            "UDP port " + std::to_string(port) + " is taken on every 127.0.S.1 (S = 0..254)";
        if (port_held_on_all_addresses(port))
            why += ": something holds it on all addresses (Linux Soft-RoCE, rdma_rxe, does with "
                   "4791); choose another with --udp-port";
        return fail(why);
    }

    if (addresses.empty()) addresses = subnet_addresses(*subnet, *count);
    std::vector<PortMtu> mtus;
    mtus.reserve(addresses.size());
    for (const auto& a : addresses)
        mtus.push_back(port_mtu(args, a));
    std::vector<HostEntry> hosts;
    if (int rc = start_hosts(args, runtime, addresses, mtus, pcap_dir, hosts)) return rc;
    // Hosts on given addresses (--address) are on the machine's own interfaces, reached from
    // its namespaces (a peer on another machine, a TCP side channel to it): no set namespace,
    // whose host<i> netdevs would hide the real ones from the programs.
    const std::string network =
        subnet ? start_network(args, runtime, *subnet, *count, mtus[0].mtu)
               : "the machine's own (--address: programs run in its network namespace)";
    print_table(runtime, hosts, args, mtus, pcap_dir, network);
    return 0;
}

} // namespace

const CommandDef kUpCommand = {
    "up",
    "--hosts N [--subnet S | --address A1[,A2...]] [--mtu M] [--log-level L] [fault options] "
    "[--pcap DIR "
    "[--pcap-limit BYTES]] [--allow-uid UIDS]",
    "start N emulated hosts (nicsimd daemons on 127.0.S.1..N, or on the given addresses)",
    kOptions,
    false,
    up};

} // namespace rdmaemu
