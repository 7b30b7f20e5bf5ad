// The host's RoCE v2 UDP endpoint: <address>:4791. Binding it claims the address, so two
// hosts can never share one. An IPv4 address gets an AF_INET socket, an IPv6 one an AF_INET6
// socket that speaks IPv6 alone (IPV6_V6ONLY): a host is of one family.
#pragma once

#include "emu/wire/ip_address.h"
#include "support/unique_fd.h"

#include <cstdint>

namespace nicsim {

inline constexpr uint16_t kRoceV2Port = 4791;

// Throws std::runtime_error when the port cannot be bound.
UniqueFd bind_roce_port(const emu::wire::IpAddress& address, uint16_t port = kRoceV2Port);

} // namespace nicsim
