// Where a packet from the wire goes, after the checks a NIC makes before any QP sees it: a
// malformed packet, an unknown QP or P_Key, an opcode of another transport, or a connected QP's
// packet from anyone but its peer is counted and dropped. The daemon's Engine routes what its
// UDP link receives through it; the protocol rigs route what their in-process wire carries.
#pragma once

#include "emu/wire/packet.h"
#include "net/link_counters.h"

#include <netinet/in.h>

#include <cstddef>
#include <cstdint>
#include <functional>

namespace nicsim {

class TransportEnv;
struct Qp;

class PacketRouter {
  public:
    // Packets for QP1 (the GSI: the CM's MADs) go here (nicsim/cm/gsi_port.h).
    using GsiReceiver = std::function<void(const sockaddr_in& from, const emu::wire::Headers& h,
                                           const uint8_t* payload, size_t len)>;
    // Whether an address (IPv4, network order) is a host of this set.
    using SetMembers = std::function<bool(uint32_t addr)>;

    // `set_port`: the UDP port every host of the set sends from.
    PacketRouter(TransportEnv& env, LinkCounters& counters, uint16_t set_port, SetMembers in_set);

    void set_gsi(GsiReceiver gsi) { gsi_ = std::move(gsi); }
    // `mgid`: the multicast group a datagram was sent to (nullptr: unicast); `tos`: the IP
    // header's TOS byte.
    void route(const sockaddr_in& from, uint8_t* data, size_t len, const uint8_t* mgid,
               uint8_t tos);

  private:
    bool from_peer(const Qp& qp, const sockaddr_in& from) const;

    TransportEnv& env_;
    LinkCounters& counters_;
    uint16_t set_port_;
    SetMembers in_set_;
    GsiReceiver gsi_;
};

} // namespace nicsim
