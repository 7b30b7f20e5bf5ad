#include "control/peer_capabilities.h"

#include <charconv>
#include <cstdint>
#include <fstream>
#include <linux/capability.h>
#include <sstream>
#include <string>

namespace nicsim {

bool effective_capability(std::string_view proc_status, int cap) {
    constexpr std::string_view key = "CapEff:";
    size_t at = proc_status.find(key);
    // The key starts a line.
    while (at != std::string_view::npos && at != 0 && proc_status[at - 1] != '\n')
        at = proc_status.find(key, at + 1);
    if (at == std::string_view::npos || cap < 0 || cap > 63) return false;
    std::string_view rest = proc_status.substr(at + key.size());
    size_t digits = rest.find_first_not_of(" \t");
    if (digits == std::string_view::npos) return false;
    rest = rest.substr(digits);
    uint64_t mask = 0;
    auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), mask, 16);
    if (ec != std::errc() || end == rest.data()) return false;
    return (mask >> cap) & 1;
}

bool process_has_net_raw(pid_t pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/status");
    if (!f) return false;
    std::ostringstream text;
    text << f.rdbuf();
    return effective_capability(text.str(), CAP_NET_RAW);
}

} // namespace nicsim
