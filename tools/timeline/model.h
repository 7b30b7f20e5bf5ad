// A run as a sequence diagram: one lane per host, and in time order what happened there (verbs
// calls, posted work requests, completions, DMA into an MR) and between them (packets, each
// from its sender's capture to its receiver's, with what the fault injector did to it).
#pragma once

#include "capture_file.h"
#include "packet_summary.h"
#include "trace_file.h"

#include <cstdint>
#include <string>
#include <vector>

namespace rdmaemu::timeline {

enum class EventKind { Verb, Wqe, Cqe, CqeError, Dma, Warn, Packet, Ack, Nak, RnrNak, Dropped };

struct Lane {
    std::string name; // "host 1 (127.0.0.1)"
    uint32_t address = 0;
    int host = 0;
};

struct Event {
    uint64_t ns = 0; // wall clock
    EventKind kind = EventKind::Verb;
    int lane = 0;
    int to_lane = -1;       // packets: the receiver's lane
    uint64_t arrive_ns = 0; // packets: when the receiver captured it; 0: not in its capture
    std::string label;      // one short line
    std::string detail;     // the whole trace line or the capture comment
    bool has_packet = false;
    PacketSummary packet; // packets: what the headers say
    int trace = -1;       // trace events: the index of their trace
    int repeat = 1;       // this many alike in a row (500 receives posted at start) drawn once
};

struct Timeline {
    std::vector<Lane> lanes;
    std::vector<Event> events;      // by time
    std::vector<std::string> notes; // what could not be placed, and why
    uint64_t start_ns = 0;
};

Timeline build_timeline(const std::vector<TraceFile>& traces,
                        const std::vector<CaptureFile>& captures);

bool is_packet(EventKind k);

} // namespace rdmaemu::timeline
