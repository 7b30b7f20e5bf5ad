// The host's status document for `rdmaemu status`.
#pragma once

#include "nic.h"

#include <string>
#include <vector>

namespace nicsim {

class Session;

std::string host_status_json(const Nic& nic, const std::vector<const Session*>& sessions);
std::string json_escape(const std::string& s);
// The drop counters as JSON members, each preceded by a comma: the same names per QP and per
// host.
std::string drop_counters_json(const DropCounters& d);

} // namespace nicsim
