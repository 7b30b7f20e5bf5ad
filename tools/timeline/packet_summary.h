// One captured RoCE v2 packet as a timeline shows it: who sent it to whom, its opcode and PSN,
// what an AETH says (ACK, NAK and its code, RNR NAK), the remote address and key it targets, and
// what the fault injector or the receiving NIC did to it (the capture's comment).
#pragma once

#include "capture_file.h"

#include <cstdint>
#include <optional>
#include <string>

namespace rdmaemu::timeline {

enum class PacketKind { Request, ReadResponse, Ack, Nak, RnrNak, Cm, Other };

struct PacketSummary {
    uint64_t ns = 0;
    uint32_t src = 0, dst = 0; // IPv4 addresses, host order
    uint8_t opcode = 0;
    std::string opcode_name; // as the opcode table names it: "RC_SEND_ONLY"
    PacketKind kind = PacketKind::Other;
    uint32_t psn = 0, dest_qpn = 0;
    bool ack_req = false;
    bool has_remote = false; // RETH or AtomicETH: the remote address and key it targets
    uint64_t remote_va = 0;
    uint32_t rkey = 0, dma_length = 0;
    uint8_t nak_code = 0; // NAK: the AETH's code; RNR NAK: its timer code
    uint32_t msn = 0;
    size_t payload_len = 0;
    std::string comment;
    bool dropped = false; // the sender's fault injector (or the kernel) never sent it
    bool refused = false; // the receiving NIC dropped it (a wrong ICRC, a malformed trailer)
    uint64_t hash = 0;    // of the UDP payload, to find the same packet in the peer's capture
};

// Decodes an Ethernet / IPv4 / UDP / RoCE v2 frame; nullopt for anything else (another
// protocol, a broken header).
std::optional<PacketSummary> summarize(const CapturedFrame& frame);

// "RC_SEND_ONLY psn 0x3e8 64 B", "ACK psn 0x3e8", "NAK remote access error psn 0x3e8", ...
std::string packet_label(const PacketSummary& p);

std::string ipv4_text(uint32_t host_order);

} // namespace rdmaemu::timeline
