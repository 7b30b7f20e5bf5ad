// A verbs trace (RDMAEMU_TRACE, verbs_api/trace/trace.h) read for a timeline: its program and
// host, where its clock starts on the wall clock, every line as an event, and what the lines
// tell about the process's objects (its MRs with their keys and ranges, its QPs).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rdmaemu::timeline {

enum class TraceKind { Verb, Wr, Wc, Warn };

struct TraceEvent {
    uint64_t ns = 0; // since the trace's start
    TraceKind kind = TraceKind::Verb;
    std::string text; // the line after its kind: "ibv_reg_mr(...) = mr(...)", "send qp=0x11 ..."
    int line = 0;
};

struct TraceMr {
    uint64_t addr = 0, length = 0;
    uint32_t lkey = 0, rkey = 0;
};

struct TraceFile {
    std::string path;
    int pid = 0;
    std::string program;
    int host = 0;             // RDMAEMU_HOST of the run; 0: not known
    uint64_t realtime_ns = 0; // the wall clock at the trace's time 0; 0: not known (old trace)
    std::vector<TraceEvent> events;
    std::vector<TraceMr> mrs;
    std::vector<uint32_t> qpns; // QPs the process created
};

constexpr const char* kTraceHeader = "# rdmaemu verbs trace:";

// Parses a trace's text. Returns the reason when it is no trace (its first line is not the
// header).
std::optional<std::string> parse_trace(const std::string& text, TraceFile& out);

// The value of ` name=VALUE` in `text` (up to the next space or '}'), or "".
std::string trace_field(const std::string& text, const std::string& name);

// A short label for a diagram: "post_send RDMA_WRITE wr_id=1 64 B -> rkey 0x..", "CQE SUCCESS
// RECV wr_id=1 len=64", "ibv_reg_mr = mr(len=4096 lkey=0x.. rkey=0x..)".
std::string event_label(const TraceEvent& e);

} // namespace rdmaemu::timeline
