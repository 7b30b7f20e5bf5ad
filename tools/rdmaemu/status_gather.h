// What `rdmaemu status` gathers from each host's daemon, also served by `rdmaemu ui`: each host's
// status document, or why it has none.
#pragma once

#include "emu/backend_mode.h"
#include "hostset.h"
#include "json.h"

#include <optional>
#include <string>
#include <vector>

namespace rdmaemu {

struct HostStatus {
    const HostEntry* entry = nullptr;
    bool up = false;
    std::string error; // why it is down, or why its status could not be read
    std::string raw;   // the daemon's JSON text, as it came
    std::optional<Json> doc;
};

// Asks host `h`'s daemon for its status (a probe session that owns nothing, 2 s at most).
HostStatus query_host(const HostEntry& h);

// {"runtime_dir":..., "mode":..., "hosts":[{"host":I, <the daemon's members>, "up":...}...]}:
// `rdmaemu status --json`.
std::string status_json(const std::string& runtime, emu::BackendMode mode,
                        const std::vector<HostStatus>& all);

} // namespace rdmaemu
