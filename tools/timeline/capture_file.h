// Reads a pcapng capture as nicsimd writes it (nicsim/net/pcap_writer.h) back into its packets:
// time stamp, frame bytes and the packet's comment. libpcap reads pcapng too, but its API drops
// every per-packet option, and the comments (the fault injector's drops, duplicates, reorders)
// are half of what a timeline shows; the block format is small enough to read here, checked.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rdmaemu::timeline {

struct CapturedFrame {
    uint64_t ns = 0;            // since the Unix epoch
    std::vector<uint8_t> bytes; // the Ethernet frame as captured
    std::string comment;        // opt_comment, empty when none
};

struct CaptureFile {
    std::string path;
    std::vector<CapturedFrame> frames;
};

// True when `head` (a file's first bytes, at least 4) starts a pcapng section.
bool looks_like_pcapng(const std::vector<uint8_t>& head);

// Parses a whole pcapng file's bytes. A file cut inside its last block (a daemon killed mid
// write) keeps the packets before it. Returns the reason when the bytes are no pcapng capture
// we can read (another byte order, another link type, a broken block).
std::optional<std::string> parse_pcapng(const std::vector<uint8_t>& bytes, CaptureFile& out);

} // namespace rdmaemu::timeline
