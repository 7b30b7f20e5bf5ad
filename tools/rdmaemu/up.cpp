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

constexpr OptionSpec kOptions[] = {
    {"hosts", "N", "number of hosts to start (1-254)"},
    {"mtu", "M", "path MTU of every host's port", kMtus, true},
    {"log-level", "L", "daemon log level", kLogLevels, true},
};

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

std::vector<std::string> daemon_argv(const ParsedArgs& args, const std::string& runtime,
                                     const std::string& address, int host) {
    std::vector<std::string> argv = {nicsimd_path(),
                                     "--name",
                                     std::string(kDevice),
                                     "--address",
                                     address,
                                     "--socket",
                                     emu::host_socket_path(runtime, host),
                                     "--log-file",
                                     log_file_path(runtime, host)};
    for (const auto& spec : kOptions) {
        if (!spec.to_daemon) continue;
        if (auto v = args.get(spec.name)) {
            argv.push_back("--" + std::string(spec.name));
            if (!spec.value.empty()) argv.push_back(*v);
        }
    }
    return argv;
}

// Starts every host, then waits for each; on any failure stops them all.
int start_hosts(const ParsedArgs& args, const std::string& runtime, int count, int subnet,
                std::vector<HostEntry>& hosts) {
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
        pid_t pid = spawn_detached(daemon_argv(args, runtime, h.address, i), h.log);
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

void print_table(const std::string& runtime, const std::vector<HostEntry>& hosts) {
    std::printf("%zu host%s up in %s\n\n", hosts.size(), hosts.size() == 1 ? "" : "s",
                runtime.c_str());
    std::printf("%-5s %-13s %-7s %-21s %s\n", "HOST", "ADDRESS", "DEVICE", "GID", "LOG");
    for (const auto& h : hosts)
        std::printf("%-5d %-13s %-7s %-21s %s\n", h.index, h.address.c_str(), h.device.c_str(),
                    ("::ffff:" + h.address).c_str(), h.log.c_str());
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
    auto subnet = pick_subnet();
    if (!subnet) return fail("UDP port 4791 is taken on every 127.0.S.1 (S = 0..254)");

    std::vector<HostEntry> hosts;
    if (int rc = start_hosts(args, runtime, *count, *subnet, hosts)) return rc;
    print_table(runtime, hosts);
    return 0;
}

} // namespace

const CommandDef kUpCommand = {"up",
                               "--hosts N [--mtu M] [--log-level L]",
                               "start N emulated hosts (nicsimd daemons on 127.0.S.1..N)",
                               kOptions,
                               false,
                               up};

} // namespace rdmaemu
