#include "options.h"

#include "emu/share_limits.h"
#include "emu/uid_list.h"

#include <CLI/CLI.hpp>

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

// Why `value` is not one `spec` takes, or nothing when it is.
std::optional<std::string> check_value(const OptionSpec& spec, const std::string& value) {
    const std::string bad = "invalid value '" + value + "' for --" + std::string(spec.name);
    if (!spec.choices.empty() &&
        std::find(spec.choices.begin(), spec.choices.end(), value) == spec.choices.end()) {
        std::string msg = bad + " (one of:";
        for (auto c : spec.choices)
            msg += " " + std::string(c);
        return msg + ")";
    }
    if (auto want = check_kind(spec.kind, value)) return bad + " (wants " + *want + ")";
    return std::nullopt;
}

// What CLI11 left, in order: nothing, or an unknown option (CLI11 goes on past it), or "--" or
// the first word that is not an option, with every word after it (takes_command: the program).
std::optional<std::string> take_rest(std::vector<std::string> rest, bool takes_command,
                                     ParsedArgs& out) {
    if (rest.empty()) return std::nullopt;
    const std::string& first = rest.front();
    if (first.size() > 1 && first[0] == '-' && first != "--")
        return "unknown option '" + first.substr(0, first.find('=')) + "'";
    if (!takes_command) return "unexpected argument '" + first + "'";
    if (first == "--") rest.erase(rest.begin());
    out.rest = std::move(rest);
    return std::nullopt;
}

} // namespace

std::optional<std::string> parse_options(std::span<char* const> args,
                                         std::span<const OptionSpec> specs, bool takes_command,
                                         ParsedArgs& out) {
    CLI::App app;
    app.set_help_flag();               // --help is one of the specs (main.cpp prints the usage)
    app.allow_extras();                // unknown words come back in remaining(), for take_rest
    app.prefix_command(takes_command); // the first word that is no option ends the options
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    for (const OptionSpec& spec : specs) {
        const std::string name = "--" + std::string(spec.name);
        if (spec.value.empty()) {
            app.add_flag_callback(
                   name, [&out, &spec] { out.values[std::string(spec.name)] = ""; },
                   std::string(spec.help))
                ->disable_flag_override();
            continue;
        }
        app.add_option_function<std::string>(
               name,
               [&out, &spec](const std::string& value) {
                   if (auto why = check_value(spec, value)) throw CLI::ValidationError(*why);
                   out.values[std::string(spec.name)] = value;
               },
               std::string(spec.help))
            ->type_name(std::string(spec.value));
    }
    std::vector<std::string> words(args.rbegin(), args.rend()); // CLI11 takes them last first
    try {
        app.parse(words);
    } catch (const CLI::ArgumentMismatch& e) {
        // A value missing at the end, or one given to a flag. CLI11 names the option first:
        // "--host: 1 required I missing", "preload was given a disallowed flag override".
        std::string_view said = e.what();
        if (said.starts_with("--")) said.remove_prefix(2);
        for (const OptionSpec& spec : specs)
            if (said.starts_with(spec.name) && said.size() > spec.name.size() &&
                (said[spec.name.size()] == ':' || said[spec.name.size()] == ' '))
                return "option '--" + std::string(spec.name) +
                       (spec.value.empty() ? "' takes no value" : "' needs a value");
        return std::string(e.what());
    } catch (const CLI::ParseError& e) {
        return std::string(e.what()); // ours (check_value) or CLI11's
    }
    return take_rest(app.remaining(), takes_command, out);
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
