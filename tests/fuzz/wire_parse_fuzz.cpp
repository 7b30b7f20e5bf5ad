// Fuzz target: the RoCE v2 packet parser and the multicast trailer, as the link and the Engine
// meet untrusted datagrams (nicsim/net/udp_link.cpp, nicsim/daemon/engine.cpp). A packet that
// parses must keep its payload inside the datagram and encode back to the same header bytes, bar
// the reserved bits.
#include "emu/wire/multicast.h"
#include "emu/wire/packet.h"

#include <cstdlib>
#include <cstring>
#include <vector>

namespace wire = emu::wire;

namespace {

void check(bool ok) {
    if (!ok) std::abort();
}

void parse_packet(const uint8_t* data, size_t len) {
    wire::Headers h;
    const uint8_t* payload = nullptr;
    size_t payload_len = 0;
    if (wire::parse(data, len, h, &payload, &payload_len) != wire::ParseResult::Ok) return;
    const size_t header = wire::header_length(h.opcode);
    check(header >= 12 && payload == data + header);
    check(header + payload_len + h.pad_count + wire::kIcrcLength == len);
    // Encoding what was parsed gives a header that parses to the same fields.
    std::vector<uint8_t> again(len);
    check(wire::encode(h, again.data()) == header);
    std::memcpy(again.data() + header, payload, len - header);
    wire::Headers h2;
    const uint8_t* payload2 = nullptr;
    size_t payload_len2 = 0;
    check(wire::parse(again.data(), len, h2, &payload2, &payload_len2) == wire::ParseResult::Ok);
    check(h2.opcode == h.opcode && h2.psn == h.psn && h2.dest_qpn == h.dest_qpn &&
          h2.pkey == h.pkey && payload_len2 == payload_len && h2.reth.va == h.reth.va &&
          h2.reth.rkey == h.reth.rkey && h2.reth.length == h.reth.length &&
          h2.aeth.syndrome == h.aeth.syndrome && h2.aeth.msn == h.aeth.msn &&
          h2.atomic_eth.va == h.atomic_eth.va && h2.deth.qkey == h.deth.qkey && h2.imm == h.imm &&
          h2.xrc_srqn == h.xrc_srqn);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t len) {
    // An exact copy: a parser that reads one byte too far then hits ASan's redzone.
    std::vector<uint8_t> packet(data, data + len);
    const uint8_t* mgid = nullptr;
    size_t inner = 0;
    switch (wire::split_mcast_trailer(packet.data(), packet.size(), &mgid, &inner)) {
    case wire::TrailerResult::Ok:
        check(inner + wire::kMcastTrailerLength == len && mgid == packet.data() + inner);
        check(wire::is_multicast_gid(mgid));
        parse_packet(packet.data(), inner);
        break;
    case wire::TrailerResult::NotMulticast:
        parse_packet(packet.data(), packet.size());
        break;
    default:
        break;
    }
    return 0;
}
