// rdmaemu run: starts a program on one emulated host, with the emulator's libibverbs and
// librdmacm in place of the system's.
#include "commands.h"
#include "host_view.h"
#include "hostset.h"
#include "locations.h"
#include "set_network.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

namespace rdmaemu {

namespace {

// Failures of rdmaemu itself, as env(1) reports them, apart from the program's own statuses.
constexpr int kExitRunFailed = 125;
constexpr int kExitCannotExec = 126;
constexpr int kExitNotFound = 127;

constexpr OptionSpec kOptions[] = {
    {"host", "I", "the host to run on (see rdmaemu status)"},
    {"preload", "", "load the libraries with LD_PRELOAD instead of LD_LIBRARY_PATH"},
    {"explain", "",
     "say on stderr why each error completion, refused verb or event happened "
     "(RDMAEMU_EXPLAIN=1)"},
    {"no-namespaces", "",
     "stay in the machine's network and mount namespaces: no net device, sysfs entries or "
     "/dev/infiniband node for the host's device"},
};

// The set's network namespace and the host's view of /sys and /dev (set_network.h,
// host_view.h). Where there are none, says so once and goes on without them; returns
// kExitRunFailed only when the view broke half-way.
int enter_host(const std::string& runtime, const HostEntry& host) {
    DeviceSnapshot dev;
    std::string why;
    if (auto no_device = snapshot_device(host.socket, dev))
        why = *no_device;
    else if (auto no_network = join_set_network(runtime))
        why = *no_network;
    else
        switch (enter_host_view(dev, netdev_name(host.index), why)) {
        case ViewResult::Done:
            return 0;
        case ViewResult::Unchanged:
            break;
        case ViewResult::Broken:
            std::fprintf(stderr,
                         "rdmaemu run: cannot build host %d's view of /sys and /dev: %s (run "
                         "with --no-namespaces to do without)\n",
                         host.index, why.c_str());
            return kExitRunFailed;
        }
    std::fprintf(stderr,
                 "rdmaemu run: %s; running without host %d's net device and /dev/infiniband "
                 "node\n",
                 why.c_str(), host.index);
    return 0;
}

// `value` in front of the list in `name` (colon-separated), or alone when it is unset.
void prepend_env(const char* name, const std::string& value) {
    const char* old = std::getenv(name);
    std::string v = old && *old ? value + ":" + old : value;
    ::setenv(name, v.c_str(), 1);
}

int run(const ParsedArgs& args) {
    auto host_arg = args.get("host");
    if (!host_arg || args.rest.empty()) {
        std::fprintf(stderr, "rdmaemu run: needs --host I and a program to run\n");
        return kExitUsage;
    }
    auto host = parse_int(*host_arg, 1, 254);
    if (!host) {
        std::fprintf(stderr, "rdmaemu run: --host wants a host number (1-254)\n");
        return kExitUsage;
    }
    std::string runtime = runtime_dir_abs();
    auto hosts = load_hosts(runtime);
    const HostEntry* h = find_host(hosts, *host);
    if (!h || !daemon_alive(*h)) {
        std::fprintf(stderr, "rdmaemu run: host %d is not up in %s (%s)\n", *host, runtime.c_str(),
                     hosts.empty() ? "start hosts with 'rdmaemu up --hosts N'"
                                   : "see 'rdmaemu status'");
        return kExitRunFailed;
    }
    const std::string lib = verbs_lib_path();
    const std::string cm_lib = rdmacm_lib_path();
    for (const auto& [path, target] : {std::pair{lib, "verbs_api"}, {cm_lib, "rdmacm_api"}}) {
        if (::access(path.c_str(), R_OK) != 0) {
            std::fprintf(stderr, "rdmaemu run: %s not found (build the %s target)\n", path.c_str(),
                         target);
            return kExitRunFailed;
        }
    }

    if (!args.has("no-namespaces"))
        if (int rc = enter_host(runtime, *h)) return rc;

    ::setenv("RDMAEMU_RUNTIME_DIR", runtime.c_str(), 1);
    ::setenv("RDMAEMU_HOST", std::to_string(*host).c_str(), 1);
    ::unsetenv("RDMAEMU_SOCKET"); // it would override RDMAEMU_HOST in the library
    if (args.has("explain")) ::setenv("RDMAEMU_EXPLAIN", "1", 1);
    if (args.has("preload"))
        prepend_env("LD_PRELOAD", lib + ":" + cm_lib);
    else
        prepend_env("LD_LIBRARY_PATH", verbs_lib_dir());
#ifdef RDMAEMU_SANITIZER_RUNTIME
    // A sanitizer build's library needs its runtime loaded first in programs that were not
    // built with it; their own leaks are not ours to report.
    prepend_env("LD_PRELOAD", RDMAEMU_SANITIZER_RUNTIME);
    ::setenv("ASAN_OPTIONS", "detect_leaks=0", 0);
#endif

    std::vector<char*> argv;
    for (const auto& a : args.rest)
        argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    int err = errno;
    std::fprintf(stderr, "rdmaemu run: %s: %s\n", argv[0], std::strerror(err));
    return err == ENOENT ? kExitNotFound : kExitCannotExec;
}

} // namespace

const CommandDef kRunCommand = {
    "run",
    "--host I [--preload] [--explain] [--no-namespaces] -- PROGRAM [ARGS...]",
    "run PROGRAM on host I with the emulator's libibverbs and librdmacm",
    kOptions,
    true,
    run};

} // namespace rdmaemu
