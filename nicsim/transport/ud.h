// The UD transport: datagrams addressed by AHs.
#pragma once

#include "emu/wire/packet.h"
#include "engines.h"
#include "objects/qp_transport.h"

namespace nicsim::ud {

// Sends one UD WR as one packet. Returns its completion status.
ibv_wc_status send(TransportEnv& env, Qp& qp, SendOp& op);
// A UD packet for `qp` from `src_addr` to `dst_addr` (IPv4, network order: the packet's IP
// addresses, for the GRH the receiver gets); `packet_len` is the whole UDP payload; `tos` the IP
// header's TOS byte (the sender's traffic class, in the GRH too).
void receive(TransportEnv& env, Qp& qp, uint32_t src_addr, uint32_t dst_addr,
             const emu::wire::Headers& h, const uint8_t* payload, size_t len, size_t packet_len,
             uint8_t tos = 0);
// A UD packet (a UD opcode: the caller checks) to the multicast group `mgid` (16 bytes; BTH
// DestQP 0xFFFFFF) from `src_addr`: a copy goes to every QP of this NIC attached to the group,
// each checking its state and Q_Key as for a unicast packet. No member: counted
// (McastCounters::no_member) and dropped.
void receive_multicast(TransportEnv& env, uint32_t src_addr, const uint8_t* mgid,
                       const emu::wire::Headers& h, const uint8_t* payload, size_t len,
                       size_t packet_len, uint8_t tos = 0);

} // namespace nicsim::ud
