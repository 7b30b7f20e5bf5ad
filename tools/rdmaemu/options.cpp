#include "options.h"

#include <algorithm>
#include <charconv>

namespace rdmaemu {

std::optional<std::string> ParsedArgs::get(std::string_view name) const {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
}

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

} // namespace rdmaemu
