#include "packet_summary.h"

#include "emu/wire/opcodes.h"
#include "emu/wire/packet.h"

#include <cstdio>
#include <string_view>

namespace rdmaemu::timeline {
namespace {

namespace wire = emu::wire;

constexpr size_t kEthernetLen = 14, kUdpLen = 8;
constexpr uint32_t kQp1 = 1; // the CM's MADs go to QP1

uint16_t be16(const uint8_t* p) {
    return static_cast<uint16_t>(p[0] << 8 | p[1]);
}
uint32_t be32(const uint8_t* p) {
    return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}

// FNV-1a: enough to tell one packet's bytes from its neighbours'.
uint64_t fnv1a(const uint8_t* p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; ++i)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

bool contains(const std::string& s, std::string_view what) {
    return s.find(what) != std::string::npos;
}

} // namespace

std::string ipv4_text(uint32_t a) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%u.%u.%u.%u", a >> 24, (a >> 16) & 255, (a >> 8) & 255,
                  a & 255);
    return buf;
}

std::optional<PacketSummary> summarize(const CapturedFrame& frame) {
    const std::vector<uint8_t>& f = frame.bytes;
    if (f.size() < kEthernetLen + 20 + kUdpLen || be16(&f[12]) != 0x0800) return std::nullopt;
    const uint8_t* ip = &f[kEthernetLen];
    size_t ihl = size_t(ip[0] & 0x0f) * 4;
    if ((ip[0] >> 4) != 4 || ihl < 20 || ip[9] != 17) return std::nullopt;
    size_t ip_len = be16(ip + 2);
    if (ip_len < ihl + kUdpLen || kEthernetLen + ip_len > f.size()) return std::nullopt;
    const uint8_t* udp = ip + ihl;
    size_t udp_len = be16(udp + 4);
    if (udp_len < kUdpLen || udp_len > ip_len - ihl) return std::nullopt;
    const uint8_t* roce = udp + kUdpLen;
    size_t roce_len = udp_len - kUdpLen;
    wire::Headers h;
    size_t payload_len = 0;
    if (wire::parse(roce, roce_len, h, nullptr, &payload_len) != wire::ParseResult::Ok)
        return std::nullopt;

    PacketSummary p;
    p.ns = frame.ns;
    p.src = be32(ip + 12);
    p.dst = be32(ip + 16);
    p.opcode = h.opcode;
    p.opcode_name = wire::opcode_name(h.opcode);
    p.psn = h.psn;
    p.dest_qpn = h.dest_qpn;
    p.ack_req = h.ack_req;
    p.payload_len = payload_len;
    p.comment = frame.comment;
    p.hash = fnv1a(roce, roce_len);
    p.dropped = contains(p.comment, "never sent") || contains(p.comment, "lost:");
    p.refused = contains(p.comment, "dropped by this NIC");
    const wire::OpcodeInfo& info = wire::opcode_info(h.opcode);
    if (info.mask & wire::kHasReth) {
        p.has_remote = true;
        p.remote_va = h.reth.va;
        p.rkey = h.reth.rkey;
        p.dma_length = h.reth.length;
    } else if (info.mask & wire::kHasAtomicEth) {
        p.has_remote = true;
        p.remote_va = h.atomic_eth.va;
        p.rkey = h.atomic_eth.rkey;
        p.dma_length = 8;
    }
    if (h.dest_qpn == kQp1) {
        p.kind = PacketKind::Cm;
    } else if (info.mask & wire::kReadResponse) {
        p.kind = PacketKind::ReadResponse;
    } else if (info.mask & wire::kHasAeth) {
        wire::Syndrome s = wire::classify(h.aeth.syndrome);
        p.msn = h.aeth.msn;
        p.nak_code = s.value;
        p.kind = s.kind == wire::SyndromeKind::Nak      ? PacketKind::Nak
                 : s.kind == wire::SyndromeKind::RnrNak ? PacketKind::RnrNak
                                                        : PacketKind::Ack;
    } else if (info.mask & wire::kRequest) {
        p.kind = PacketKind::Request;
    }
    return p;
}

std::string packet_label(const PacketSummary& p) {
    char psn[16];
    std::snprintf(psn, sizeof psn, "0x%x", p.psn);
    std::string out;
    switch (p.kind) {
    case PacketKind::Ack:
        out = (p.opcode_name.find("ATOMIC") != std::string::npos ? "ATOMIC ACK psn " : "ACK psn ") +
              std::string(psn);
        break;
    case PacketKind::Nak:
        out = "NAK " + std::string(wire::nak_name(p.nak_code)) + " psn " + psn;
        break;
    case PacketKind::RnrNak:
        out = "RNR NAK psn " + std::string(psn) + " (receiver not ready)";
        break;
    case PacketKind::Cm:
        out = "CM MAD " + p.opcode_name;
        break;
    default:
        out = p.opcode_name + " psn " + psn;
        if (p.payload_len) out += " " + std::to_string(p.payload_len) + " B";
        break;
    }
    if (p.dropped) out += "  DROPPED";
    if (p.refused) out += "  REFUSED by the receiver";
    return out;
}

} // namespace rdmaemu::timeline
