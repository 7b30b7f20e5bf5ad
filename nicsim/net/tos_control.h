// The control message that gives one UDP datagram its own TOS byte (IPv4) or traffic class
// (IPv6), where the socket's is 0: the GRH's traffic class of the packets it carries.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <cstring>

namespace nicsim {

inline constexpr size_t kTosControlSpace = CMSG_SPACE(sizeof(int));

// Fills `c`, which has kTosControlSpace bytes of room.
inline void put_tos_control(cmsghdr* c, uint8_t tos, bool ipv6) {
    const int value = tos;
    c->cmsg_level = ipv6 ? IPPROTO_IPV6 : IPPROTO_IP;
    c->cmsg_type = ipv6 ? IPV6_TCLASS : IP_TOS;
    c->cmsg_len = CMSG_LEN(sizeof value);
    std::memcpy(CMSG_DATA(c), &value, sizeof value);
}

} // namespace nicsim
