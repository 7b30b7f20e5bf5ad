// Just enough JSON for the daemon's status document: a parsed tree to print from, and quoting
// for what rdmaemu writes itself.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rdmaemu {

struct Json {
    enum class Kind { Null, Bool, Number, String, Array, Object };
    Kind kind = Kind::Null;
    bool boolean = false;
    std::string text; // a string's value, or a number as written (pids stay integers)
    std::vector<Json> items;
    std::vector<std::pair<std::string, Json>> members; // in document order

    const Json* find(std::string_view key) const;
    // A member as text to print (numbers and strings as they are), or `fallback`.
    std::string str(std::string_view key, std::string_view fallback = "?") const;
};

std::optional<Json> parse_json(std::string_view text);

// `s` as a JSON string literal, quotes included.
std::string json_quote(std::string_view s);

} // namespace rdmaemu
