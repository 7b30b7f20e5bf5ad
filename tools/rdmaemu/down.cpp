// rdmaemu down: stops the set of hosts in this runtime directory.
#include "commands.h"
#include "hostset.h"
#include "locations.h"
#include "set_network.h"

#include <cstdio>

namespace rdmaemu {

namespace {

constexpr auto kStopGrace = std::chrono::seconds(5);

int down(const ParsedArgs&) {
    std::string runtime = runtime_dir_abs();
    auto hosts = load_hosts(runtime);
    size_t live = 0;
    for (const auto& h : hosts)
        live += daemon_alive(h);
    auto stuck = stop_daemons(hosts, kStopGrace);
    if (!stuck.empty()) {
        for (const auto& h : stuck)
            std::fprintf(stderr, "rdmaemu down: host %d (nicsimd pid %d) would not die\n", h.index,
                         static_cast<int>(h.pid));
        return kExitFailure; // the record stays, so that a later `down` tries again
    }
    remove_host_files(runtime, hosts);
    stop_set_network(runtime);
    if (live == 0)
        std::printf("no hosts up in %s\n", runtime.c_str());
    else
        std::printf("stopped %zu host%s; logs kept in %s/host*/nicsimd.log\n", live,
                    live == 1 ? "" : "s", runtime.c_str());
    return 0;
}

} // namespace

const CommandDef kDownCommand = {
    "down",
    "",
    "stop the hosts and their network namespace, remove their sockets, pid files and record",
    {},
    false,
    down};

} // namespace rdmaemu
