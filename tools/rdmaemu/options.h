// Command-line options of the rdmaemu commands: each command declares a table of OptionSpec, and
// one parser (CLI11, driven by the table) serves them all, so a new option (a fault or capture
// flag passed on to nicsimd) is one table entry.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rdmaemu {

// What an option's value must be, checked by the parser (a bad value is a usage error).
enum class ValueKind {
    any,         // any text (or one of `choices`)
    probability, // a decimal number from 0 to 1 ("0", "0.05", "1", "5e-2")
    count,       // a whole number >= 0 that fits in 32 bits
    count64,     // a whole number >= 0 that fits in 64 bits
    uid_list,    // user ids separated by commas ("1000,1001")
    share_list,  // per-process shares ("qp=1000,cq=1000,mr=4096,context=64")
};

struct OptionSpec {
    std::string_view name;  // without the leading "--"
    std::string_view value; // placeholder shown in usage; empty for a flag
    std::string_view help;
    std::span<const std::string_view> choices = {}; // allowed values; empty: any
    bool to_daemon = false;                         // `up` passes it on to each nicsimd as given
    ValueKind kind = ValueKind::any;
};

struct ParsedArgs {
    std::map<std::string, std::string, std::less<>> values; // flags map to ""
    std::vector<std::string> rest;                          // the command line, if any

    bool has(std::string_view name) const { return values.find(name) != values.end(); }
    std::optional<std::string> get(std::string_view name) const;
};

// Parses `--name value`, `--name=value` and flags; an option given twice keeps its last value.
// With `takes_command`, "--" or the first word that is not an option starts the command line,
// which goes to `rest`; without, such a word is an error. Returns an error message ("unknown
// option '--x'", "option '--x' needs a value", "invalid value 'v' for --x (wants ...)"), or
// nothing on success.
std::optional<std::string> parse_options(std::span<char* const> args,
                                         std::span<const OptionSpec> specs, bool takes_command,
                                         ParsedArgs& out);

// A whole number in [lo, hi], or nothing.
std::optional<int> parse_int(std::string_view text, int lo, int hi);

// A finite decimal number in [0, 1] with nothing around it (no sign, spaces, NaN, inf), or
// nothing: the same values nicsimd accepts for its fault probabilities.
std::optional<double> parse_probability(std::string_view text);

} // namespace rdmaemu
