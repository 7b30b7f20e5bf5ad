// The 20-byte IPv4 header of a RoCE v2 packet (RFC 791, no options) and the Internet checksum
// (RFC 1071): one builder for the three places that write one (a UD receive's GRH area, the
// capture, the ICRC's masked copy).
#pragma once

#include <cstddef>
#include <cstdint>

namespace emu::wire {

inline constexpr size_t kIpv4HeaderLength = 20;
inline constexpr uint8_t kIpProtoUdp = 17;

struct Ipv4Header {
    uint8_t tos = 0;
    uint16_t id = 0;
    uint16_t flags_frag = 0x4000; // DF, fragment offset 0: RoCE packets are never fragmented
    uint8_t ttl = 64;
    uint32_t src_addr = 0; // network order, as in_addr::s_addr
    uint32_t dst_addr = 0;
    uint16_t payload_length = 0; // the UDP datagram's length: total length minus this header
};

// Ones'-complement sum of big-endian 16-bit words, not yet folded or inverted.
inline uint32_t internet_sum(uint32_t sum, const uint8_t* p, size_t len) {
    for (; len >= 2; p += 2, len -= 2)
        sum += static_cast<uint32_t>(p[0] << 8 | p[1]);
    if (len) sum += static_cast<uint32_t>(p[0] << 8);
    return sum;
}

// The checksum field's value for a sum: folded to 16 bits and inverted.
inline uint16_t internet_checksum(uint32_t sum) {
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<uint16_t>(~sum);
}

// Writes the header, its checksum included, into ip[0..20).
void put_ipv4_header(uint8_t* ip, const Ipv4Header& h);
// The same with the checksum field left 0: for the ICRC's copy, which masks it (per packet, twice).
void put_ipv4_fields(uint8_t* ip, const Ipv4Header& h);

} // namespace emu::wire
