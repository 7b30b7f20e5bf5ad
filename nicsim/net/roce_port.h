// The host's RoCE v2 UDP endpoint: <address>:4791. Binding it claims the address, so two
// hosts can never share one.
#pragma once

#include "support/unique_fd.h"

#include <cstdint>
#include <netinet/in.h>

namespace nicsim {

inline constexpr uint16_t kRoceV2Port = 4791;

// Throws std::runtime_error when the port cannot be bound.
UniqueFd bind_roce_port(in_addr address, uint16_t port = kRoceV2Port);

} // namespace nicsim
