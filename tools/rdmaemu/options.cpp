#include "options.h"

#include "emu/share_limits.h"
#include "emu/uid_list.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>

namespace rdmaemu {

std::optional<std::string> ParsedArgs::get(std::string_view name) const {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
}

namespace {

template <class T> bool is_unsigned_number(std::string_view text) {
    T v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    return !text.empty() && ec == std::errc() && end == text.data() + text.size();
}

// Why `value` is not of `kind`, or nothing when it is.
std::optional<std::string> check_kind(ValueKind kind, const std::string& value) {
    switch (kind) {
    case ValueKind::any:
        return std::nullopt;
    case ValueKind::probability:
        if (parse_probability(value)) return std::nullopt;
        return "a probability from 0 to 1, e.g. 0.05";
    case ValueKind::count:
        if (is_unsigned_number<uint32_t>(value)) return std::nullopt;
        return "a whole number from 0 to " + std::to_string(std::numeric_limits<uint32_t>::max());
    case ValueKind::count64:
        if (is_unsigned_number<uint64_t>(value)) return std::nullopt;
        return "a whole number from 0 to " + std::to_string(std::numeric_limits<uint64_t>::max());
    case ValueKind::uid_list:
        if (emu::parse_uid_list(value)) return std::nullopt;
        return "user ids separated by commas, e.g. 1000,1001";
    case ValueKind::share_list:
        if (emu::parse_share_limits(value)) return std::nullopt;
        return "KIND=N[,KIND=N...] with KIND qp, cq, mr or context and N >= 1, e.g. "
               "qp=1000,cq=1000,mr=4096,context=64";
    }
    return std::nullopt;
}

} // namespace

std::optional<std::string> parse_options(std::span<char* const> args,
                                         std::span<const OptionSpec> specs, bool takes_command,
                                         ParsedArgs& out) {
    for (size_t i = 0; i < args.size(); ++i) {
        std::string_view word = args[i];
        bool is_option = word.size() > 2 && word.starts_with("--");
        if (!is_option) {
            if (!takes_command) return "unexpected argument '" + std::string(word) + "'";
            if (word == "--") ++i;
            out.rest.assign(args.begin() + static_cast<ptrdiff_t>(i), args.end());
            return std::nullopt;
        }
        std::string_view name = word.substr(2);
        std::optional<std::string_view> inline_value;
        if (auto eq = name.find('='); eq != std::string_view::npos) {
            inline_value = name.substr(eq + 1);
            name = name.substr(0, eq);
        }
        auto spec = std::find_if(specs.begin(), specs.end(),
                                 [&](const OptionSpec& s) { return s.name == name; });
        if (spec == specs.end()) return "unknown option '--" + std::string(name) + "'";
        std::string value;
        if (spec->value.empty()) {
            if (inline_value) return "option '--" + std::string(name) + "' takes no value";
        } else if (inline_value) {
            value = *inline_value;
        } else if (i + 1 < args.size()) {
            value = args[++i];
        } else {
            return "option '--" + std::string(name) + "' needs a value";
        }
        if (!spec->choices.empty() &&
            std::find(spec->choices.begin(), spec->choices.end(), value) == spec->choices.end()) {
            std::string msg =
                "invalid value '" + value + "' for --" + std::string(name) + " (one of:";
            for (auto c : spec->choices)
                msg += " " + std::string(c);
            return msg + ")";
        }
        if (auto want = check_kind(spec->kind, value))
            return "invalid value '" + value + "' for --" + std::string(name) + " (wants " + *want +
                   ")";
        out.values[std::string(name)] = value;
    }
    return std::nullopt;
}

std::optional<int> parse_int(std::string_view text, int lo, int hi) {
    int v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi)
        return std::nullopt;
    return v;
}

std::optional<double> parse_probability(std::string_view text) {
    // from_chars takes neither leading spaces nor '+'; '-' is refused here so "-0" is not 0.
    if (text.empty() || text.front() == '-') return std::nullopt;
    double v = 0;
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, v);
    if (ec != std::errc() || ptr != end || !std::isfinite(v) || v < 0 || v > 1) return std::nullopt;
    return v;
}

} // namespace rdmaemu
