#include "emu/share_limits.h"

#include <charconv>

namespace emu {

namespace {

constexpr const char* kNames[kShareKinds] = {"qp", "cq", "mr", "context"};

std::optional<Share> kind_named(std::string_view name) {
    for (size_t i = 0; i < kShareKinds; ++i)
        if (name == kNames[i]) return static_cast<Share>(i);
    return std::nullopt;
}

} // namespace

const char* share_name(Share kind) {
    return kNames[static_cast<size_t>(kind)];
}

bool ShareLimits::any() const {
    for (uint32_t m : max)
        if (m) return true;
    return false;
}

std::optional<ShareLimits> parse_share_limits(std::string_view text) {
    ShareLimits out;
    if (text.empty()) return std::nullopt;
    for (;;) {
        size_t comma = text.find(',');
        std::string_view item = text.substr(0, comma);
        size_t eq = item.find('=');
        if (eq == std::string_view::npos) return std::nullopt;
        auto kind = kind_named(item.substr(0, eq));
        std::string_view number = item.substr(eq + 1);
        uint32_t n = 0;
        auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), n);
        if (!kind || number.empty() || ec != std::errc() || end != number.data() + number.size() ||
            n == 0 || out.of(*kind) != 0)
            return std::nullopt;
        out.max[static_cast<size_t>(*kind)] = n;
        if (comma == std::string_view::npos) return out;
        text.remove_prefix(comma + 1);
    }
}

} // namespace emu
