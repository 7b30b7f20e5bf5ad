// RoCE v2 packets built for the timeline's tests, with emu's codec (as nicsimd builds them).
#pragma once

#include "emu/wire/packet.h"

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <vector>

namespace timeline_packets {

inline sockaddr_in endpoint(const char* ip) {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(emu::wire::kRoceV2Port);
    REQUIRE(inet_pton(AF_INET, ip, &sa.sin_addr) == 1);
    return sa;
}

inline std::vector<uint8_t> build(const emu::wire::Headers& h, size_t payload) {
    std::vector<uint8_t> bytes(emu::wire::packet_length(h.opcode, payload));
    std::vector<uint8_t> data(payload, 0xab);
    REQUIRE(emu::wire::build(h, data.data(), payload, bytes.data()) == bytes.size());
    return bytes;
}

inline std::vector<uint8_t> rc(uint8_t opcode, uint32_t psn, uint32_t qpn, size_t payload) {
    emu::wire::Headers h;
    h.opcode = opcode;
    h.psn = psn;
    h.dest_qpn = qpn;
    h.ack_req = true;
    return build(h, payload);
}

inline std::vector<uint8_t> ack(uint32_t psn, uint32_t qpn, uint8_t syndrome) {
    emu::wire::Headers h;
    h.opcode = emu::wire::opcode::kRcAcknowledge;
    h.psn = psn;
    h.dest_qpn = qpn;
    h.aeth.syndrome = syndrome;
    return build(h, 0);
}

inline std::vector<uint8_t> write_only(uint32_t psn, uint32_t qpn, uint64_t va, uint32_t rkey,
                                       uint32_t len) {
    emu::wire::Headers h;
    h.opcode = emu::wire::opcode::kWriteOnly;
    h.psn = psn;
    h.dest_qpn = qpn;
    h.reth = {va, rkey, len};
    return build(h, len);
}

} // namespace timeline_packets
