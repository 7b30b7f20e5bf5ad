// The host's status document for `rdmaemu status`.
#pragma once

#include "nic.h"

#include <string>
#include <vector>

namespace nicsim {

class Session;

std::string host_status_json(const Nic& nic, const std::vector<const Session*>& sessions);
std::string json_escape(const std::string& s);

} // namespace nicsim
