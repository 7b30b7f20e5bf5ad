// The UD transport: datagrams addressed by AHs.
#pragma once

#include "emu/wire/packet.h"
#include "qp_transport.h"
#include "rc.h"

namespace nicsim::ud {

// Sends one UD WR as one packet. Returns its completion status.
ibv_wc_status send(TransportEnv& env, Qp& qp, SendOp& op);
// A UD packet for `qp` from `src_addr` (IPv4, network order); `packet_len` is the whole UDP
// payload, for the GRH the receiver gets.
void receive(TransportEnv& env, Qp& qp, uint32_t src_addr, const emu::wire::Headers& h,
             const uint8_t* payload, size_t len, size_t packet_len);

} // namespace nicsim::ud
