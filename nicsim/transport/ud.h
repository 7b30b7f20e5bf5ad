// The UD transport: datagrams addressed by AHs.
#pragma once

#include "emu/wire/ip_address.h"
#include "emu/wire/packet.h"
#include "engines.h"
#include "net/ip_fields.h"
#include "objects/qp_transport.h"

namespace nicsim::ud {

// Sends one UD WR as one packet. Returns its completion status.
ibv_wc_status send(TransportEnv& env, Qp& qp, SendOp& op);
// A UD packet for `qp` from `src_addr` to `dst_addr` (the packet's IP addresses, for the GRH
// the receiver gets: an IPv4 or an IPv6 header); `packet_len` is the whole UDP payload; `ip` the
// IP header's fields the link saw (the sender's traffic class, in the GRH too).
void receive(TransportEnv& env, Qp& qp, const emu::wire::IpAddress& src_addr,
             const emu::wire::IpAddress& dst_addr, const emu::wire::Headers& h,
             const uint8_t* payload, size_t len, size_t packet_len, const IpFields& ip = {});
// A UD packet (a UD opcode: the caller checks) to the multicast group `mgid` (16 bytes; BTH
// DestQP 0xFFFFFF) from `src_addr`, sent to the IP address `group`: a copy goes to every QP of
// this NIC attached to the group, each checking its state and Q_Key as for a unicast packet. No
// member: counted (McastCounters::no_member) and dropped.
void receive_multicast(TransportEnv& env, const emu::wire::IpAddress& src_addr,
                       const emu::wire::IpAddress& group, const uint8_t* mgid,
                       const emu::wire::Headers& h, const uint8_t* payload, size_t len,
                       size_t packet_len, const IpFields& ip = {});

} // namespace nicsim::ud
