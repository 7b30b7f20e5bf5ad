#include "emu/uid_list.h"

#include <charconv>
#include <cstdint>

namespace emu {

std::optional<std::vector<uid_t>> parse_uid_list(std::string_view text) {
    std::vector<uid_t> uids;
    for (;;) {
        size_t comma = text.find(',');
        std::string_view one = text.substr(0, comma);
        uint32_t v = 0;
        auto [end, ec] = std::from_chars(one.data(), one.data() + one.size(), v);
        if (one.empty() || ec != std::errc() || end != one.data() + one.size() ||
            v == static_cast<uint32_t>(-1))
            return std::nullopt;
        uids.push_back(static_cast<uid_t>(v));
        if (comma == std::string_view::npos) return uids;
        text.remove_prefix(comma + 1);
    }
}

} // namespace emu
