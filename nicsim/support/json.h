// The daemon's JSON (the status document, counters, recent errors): nlohmann's, with members
// in the order they were added, which is the order tools print them. Headers need only the
// name; the .cpp files that build documents include <nlohmann/json.hpp>.
#pragma once

#include <nlohmann/json_fwd.hpp>

namespace nicsim {

using Json = nlohmann::ordered_json;

} // namespace nicsim
