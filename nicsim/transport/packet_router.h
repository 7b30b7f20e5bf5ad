// Where a packet from the wire goes, after the checks a NIC makes before any QP sees it: a
// malformed packet, an unknown QP or P_Key, an opcode of another transport, or a connected QP's
// packet from anyone but its peer is counted and dropped. The daemon's Engine routes what its
// UDP link receives through it; the protocol rigs route what their in-process wire carries.
#pragma once

#include "emu/wire/ip_address.h"
#include "emu/wire/packet.h"
#include "net/ip_fields.h"
#include "net/link_counters.h"

#include <cstddef>
#include <cstdint>
#include <functional>

namespace nicsim {

class TransportEnv;
struct Qp;

class PacketRouter {
  public:
    // Packets for QP1 (the GSI: the CM's MADs) go here (nicsim/cm/gsi_port.h).
    using GsiReceiver =
        std::function<void(const emu::wire::IpEndpoint& from, const emu::wire::Headers& h,
                           const uint8_t* payload, size_t len)>;
    // Whether an address is a host of this set.
    using SetMembers = std::function<bool(const emu::wire::IpAddress& addr)>;

    // `set_port`: the UDP port every host of the set sends from.
    PacketRouter(TransportEnv& env, LinkCounters& counters, uint16_t set_port, SetMembers in_set);

    void set_gsi(GsiReceiver gsi) { gsi_ = std::move(gsi); }
    // `mgid`: the multicast group a datagram was sent to (nullptr: unicast); `ip`: the IP
    // header's fields the link saw.
    void route(const emu::wire::IpEndpoint& from, uint8_t* data, size_t len, const uint8_t* mgid,
               const IpFields& ip = {});

  private:
    bool from_peer(const Qp& qp, const emu::wire::IpEndpoint& from) const;

    TransportEnv& env_;
    LinkCounters& counters_;
    uint16_t set_port_;
    SetMembers in_set_;
    GsiReceiver gsi_;
};

} // namespace nicsim
