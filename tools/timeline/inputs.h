// The files of a run handed to `rdmaemu timeline`: each a verbs trace or a pcapng capture, told
// apart by their first bytes (not their names); a directory stands for the traces and captures
// in it (an `up --pcap DIR` directory, or one the traces were written to).
#pragma once

#include "capture_file.h"
#include "trace_file.h"

#include <optional>
#include <string>
#include <vector>

namespace rdmaemu::timeline {

struct Inputs {
    std::vector<TraceFile> traces;
    std::vector<CaptureFile> captures;
};

// Reads every path. Returns the first reason a named file cannot be used (unreadable, neither a
// trace nor a capture); files in a directory that are neither are skipped.
std::optional<std::string> load_inputs(const std::vector<std::string>& paths, Inputs& out);

} // namespace rdmaemu::timeline
