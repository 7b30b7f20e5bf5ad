// The 40-byte IPv6 header of a RoCE v2 packet (RFC 8200, no extension headers, next header UDP):
// one builder for the places that write one (a UD receive's GRH area, the capture, the ICRC's
// masked copy). Over IPv6 the GRH area of a receive buffer is this header itself (IBA A17.4.5.1).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace emu::wire {

inline constexpr size_t kIpv6HeaderLength = 40;

struct Ipv6Header {
    uint8_t traffic_class = 0;
    uint32_t flow_label = 0; // 20 bits
    uint8_t hop_limit = 64;
    std::array<uint8_t, 16> src_addr{};
    std::array<uint8_t, 16> dst_addr{};
    uint16_t payload_length = 0; // the UDP datagram's length
};

// Writes the header into ip[0..40).
void put_ipv6_header(uint8_t* ip, const Ipv6Header& h);

} // namespace emu::wire
