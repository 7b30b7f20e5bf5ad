// rdmaemu up: starts a set of emulated hosts, one nicsimd each.
#include "commands.h"
#include "daemon.h"
#include "emu/paths.h"
#include "hostset.h"
#include "locations.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

// An option `up` passes on to every host's nicsimd as given, once the parser has checked it.
constexpr OptionSpec to_daemon(std::string_view name, std::string_view value, std::string_view help,
                               ValueKind kind) {
    return {name, value, help, {}, true, kind};
}

// Each host applies the faults, independently per packet, to the packets it sends.
constexpr OptionSpec kOptions[] = {
    {"hosts", "N", "number of hosts to start (1-254)"},
    {"mtu", "M", "path MTU of every host's port", kMtus, true},
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
    {"pcap", "DIR", "capture each host's packets, sent and received, to DIR/host<i>.pcap"},
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

// The runtime directory must be ours: another user's /tmp/rdmaemu-<uid> could capture our
// sockets and logs.
std::optional<std::string> prepare_runtime_dir(const std::string& runtime) {
    std::error_code ec;
    if (!fs::exists(runtime, ec)) {
        fs::create_directories(runtime, ec);
        if (ec) return "cannot create " + runtime + ": " + ec.message();
        ::chmod(runtime.c_str(), 0700);
    }
    struct stat st {};
    if (::stat(runtime.c_str(), &st) != 0) return runtime + ": " + std::strerror(errno);
    if (!S_ISDIR(st.st_mode)) return runtime + " is not a directory";
    if (st.st_uid != ::getuid()) return runtime + " belongs to another user";
    return std::nullopt;
}

std::optional<std::string> refuse_if_up(const std::string& runtime) {
    auto existing = load_hosts(runtime);
    for (const auto& h : existing)
        if (daemon_alive(h))
            return "hosts are already up in " + runtime + " (host " + std::to_string(h.index) +
                   ", nicsimd pid " + std::to_string(h.pid) + "); run 'rdmaemu down' first";
    remove_host_files(runtime, existing); // a stale set: its daemons are gone
    return std::nullopt;
}

// DIR/host<i>.pcap, where host i writes its capture.
std::string pcap_path(const std::string& dir, int host) {
    return (fs::path(dir) / ("host" + std::to_string(host) + ".pcap")).string();
}

// The --pcap directory, absolute (the daemons need not share our cwd) and created; or an error.
std::optional<std::string> prepare_pcap_dir(const std::string& dir, std::string& abs) {
    std::error_code ec;
    fs::path p = fs::absolute(dir, ec);
    if (ec) return "--pcap " + dir + ": " + ec.message();
    abs = p.lexically_normal().string();
    if (abs.size() > 1 && abs.back() == '/') abs.pop_back();
    fs::create_directories(p, ec);
    if (ec) return "cannot create --pcap directory " + abs + ": " + ec.message();
    if (!fs::is_directory(p, ec)) return "--pcap " + abs + " is not a directory";
    if (::access(abs.c_str(), W_OK) != 0)
        return "cannot write to --pcap directory " + abs + ": " + std::strerror(errno);
    return std::nullopt;
}

// "127.0.S.1,...,127.0.S.N": every host of the set, which each daemon needs for multicast (the
// emulated fabric delivers a multicast packet to every host).
std::string set_addresses(int subnet, int count) {
    std::string out;
    for (int i = 1; i <= count; ++i)
        out += (i > 1 ? "," : "") + std::string("127.0.") + std::to_string(subnet) + "." +
               std::to_string(i);
    return out;
}

std::vector<std::string> daemon_argv(const ParsedArgs& args, const std::string& runtime,
                                     const std::string& address, int host,
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
                                     peers};
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

// Starts every host, then waits for each; on any failure stops them all.
int start_hosts(const ParsedArgs& args, const std::string& runtime, int count, int subnet,
                const std::string& pcap_dir, std::vector<HostEntry>& hosts) {
    for (int i = 1; i <= count; ++i) {
        std::error_code ec;
        fs::create_directories(emu::host_dir(runtime, i), ec);
        HostEntry h{i,
                    "127.0." + std::to_string(subnet) + "." + std::to_string(i),
                    std::string(kDevice),
                    0,
                    emu::host_socket_path(runtime, i),
                    log_file_path(runtime, i)};
        fs::remove(h.socket, ec);
        fs::resize_file(h.log, 0, ec); // a fresh log per start; missing is fine
        pid_t pid = spawn_detached(
            daemon_argv(args, runtime, h.address, i, pcap_dir, set_addresses(subnet, count)),
            h.log);
        if (pid < 0) {
            stop_daemons(hosts, kStopGrace);
            remove_host_files(runtime, hosts);
            return fail("cannot start nicsimd: " + std::string(std::strerror(-pid)));
        }
        h.pid = pid;
        write_pid_file(runtime, i, pid);
        hosts.push_back(h);
    }
    // Recorded before the wait, so that `down` finds them even if this process dies now.
    if (int err = save_hosts(runtime, hosts))
        std::fprintf(stderr, "rdmaemu up: cannot write %s: %s\n",
                     hosts_record_path(runtime).c_str(), std::strerror(err));
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

void print_table(const std::string& runtime, const std::vector<HostEntry>& hosts,
                 const ParsedArgs& args, const std::string& pcap_dir) {
    std::printf("%zu host%s up in %s\n", hosts.size(), hosts.size() == 1 ? "" : "s",
                runtime.c_str());
    std::printf("faults:  %s\n", faults_summary(args).c_str());
    std::printf("capture: %s\n\n", pcap_dir.empty() ? "off" : (pcap_dir + "/host<i>.pcap").c_str());
    std::printf("%-5s %-13s %-7s %-21s %s\n", "HOST", "ADDRESS", "DEVICE", "GID",
                pcap_dir.empty() ? "LOG" : "LOG / PCAP");
    for (const auto& h : hosts) {
        std::printf("%-5d %-13s %-7s %-21s %s\n", h.index, h.address.c_str(), h.device.c_str(),
                    ("::ffff:" + h.address).c_str(), h.log.c_str());
        if (!pcap_dir.empty()) std::printf("%50s%s\n", "", pcap_path(pcap_dir, h.index).c_str());
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
    if (auto err = prepare_runtime_dir(runtime)) return fail(*err);
    if (auto err = refuse_if_up(runtime)) return fail(*err);
    std::string pcap_dir;
    if (auto dir = args.get("pcap")) {
        if (dir->empty()) return fail("--pcap wants a directory");
        if (auto err = prepare_pcap_dir(*dir, pcap_dir)) return fail(*err);
    }
    int port = kRoceV2Port;
    if (auto text = args.get("udp-port")) {
        auto p = parse_int(*text, 1, 65535);
        if (!p) return fail("--udp-port wants a port number from 1 to 65535");
        port = *p;
    }
    auto subnet = pick_subnet(port);
    if (!subnet) {
        std::string why =
            "UDP port " + std::to_string(port) + " is taken on every 127.0.S.1 (S = 0..254)";
        if (port_held_on_all_addresses(port))
            why += ": something holds it on all addresses (Linux Soft-RoCE, rdma_rxe, does with "
                   "4791); choose another with --udp-port";
        return fail(why);
    }

    std::vector<HostEntry> hosts;
    if (int rc = start_hosts(args, runtime, *count, *subnet, pcap_dir, hosts)) return rc;
    print_table(runtime, hosts, args, pcap_dir);
    return 0;
}

} // namespace

const CommandDef kUpCommand = {"up",
                               "--hosts N [--mtu M] [--log-level L] [fault options] [--pcap DIR]",
                               "start N emulated hosts (nicsimd daemons on 127.0.S.1..N)",
                               kOptions,
                               false,
                               up};

} // namespace rdmaemu
