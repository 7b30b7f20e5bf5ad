// The IP header fields of a RoCE v2 packet that vary from packet to packet and that the ICRC
// masks (all but the IPv4 ID): what the link learns of a received packet from its socket's
// control messages, what the capture writes, and what a UD receive's GRH area shows.
#pragma once

#include <cstdint>

namespace nicsim {

struct IpFields {
    uint8_t tos = 0;         // IPv4 TOS, IPv6 traffic class: the GRH traffic class
    uint16_t id = 0;         // IPv4 only; host order
    uint8_t ttl = 64;        // IPv4 TTL, IPv6 hop limit
    uint32_t flow_label = 0; // IPv6 only, 20 bits
};

} // namespace nicsim
