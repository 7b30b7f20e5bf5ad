#include "emu/wire/ipv6_header.h"

#include "emu/wire/ipv4_header.h"

#include <cstring>

namespace emu::wire {

void put_ipv6_header(uint8_t* ip, const Ipv6Header& h) {
    // Version 6, then the traffic class and the flow label across bytes 0-3.
    const uint32_t first = 6u << 28 | uint32_t{h.traffic_class} << 20 | (h.flow_label & 0xFFFFF);
    ip[0] = static_cast<uint8_t>(first >> 24);
    ip[1] = static_cast<uint8_t>(first >> 16);
    ip[2] = static_cast<uint8_t>(first >> 8);
    ip[3] = static_cast<uint8_t>(first);
    ip[4] = static_cast<uint8_t>(h.payload_length >> 8);
    ip[5] = static_cast<uint8_t>(h.payload_length);
    ip[6] = kIpProtoUdp; // next header
    ip[7] = h.hop_limit;
    std::memcpy(ip + 8, h.src_addr.data(), 16);
    std::memcpy(ip + 24, h.dst_addr.data(), 16);
}

} // namespace emu::wire
