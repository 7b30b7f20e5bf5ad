// The daemon's status document as rdmaemu reads it: nlohmann's JSON, in document order (counters
// print in the order the daemon lists them), and how a member prints.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace rdmaemu {

using Json = nlohmann::ordered_json;

// Member `key` of `doc`, or nullptr (absent, or `doc` is no object).
const Json* member(const Json& doc, std::string_view key);
// Member `key` of `doc` as text to print (strings as they are, numbers and booleans as JSON
// writes them), or `fallback` when it is absent or something else.
std::string member_text(const Json& doc, std::string_view key, std::string_view fallback = "?");
// A value as member_text prints it.
std::string value_text(const Json& value, std::string_view fallback = "?");

} // namespace rdmaemu
