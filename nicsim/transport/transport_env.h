// What the transport engines need from the NIC around them. The engines take the clock, the
// packet sink, timers and DMA from here, so tests drive them with a fake clock and no sockets.
#pragma once

#include "diag/peer_reasons.h"
#include "dma/dma_engine.h"
#include "emu/wire/ip_address.h"

#include <infiniband/verbs.h>
#include <spdlog/logger.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <sys/types.h>

namespace nicsim {

class Nic;
struct Qp;

class TransportEnv {
  public:
    virtual ~TransportEnv() = default;
    virtual uint64_t now_us() = 0;
    // Room for one packet of up to transport::kMaxPacket bytes where the link sends it from: a
    // packet built here and then handed to transmit() is not copied. Valid until the next call.
    virtual uint8_t* packet_buffer() = 0;
    // Sends one packet (BTH .. pad, with 4 bytes left for the ICRC) to `dst_addr` (the
    // destination GID: an address of the host's family). The NIC adds the ICRC and the UDP/IP
    // headers; `tclass` is the GRH traffic class, the IPv4 TOS byte or IPv6 traffic class.
    virtual void transmit(Qp& qp, const emu::wire::IpAddress& dst_addr, uint8_t* packet, size_t len,
                          uint8_t tclass) = 0;
    // Sends one UD packet (as transmit) to the multicast group `mgid` (16 bytes): the fabric
    // delivers a copy to every host of the set, this one included.
    virtual void transmit_multicast(Qp& qp, const uint8_t* mgid, uint8_t* packet, size_t len,
                                    uint8_t tclass) = 0;
    // The QP has packets it could not send within its budget: run it again soon.
    virtual void schedule(Qp& qp) = 0;
    // Calls the transport's on_timer for `qp` at `at_us` (replacing any earlier deadline).
    virtual void set_timer(Qp& qp, uint64_t at_us) = 0;
    virtual DmaEngine& dma() = 0;
    virtual Nic& nic() = 0;
    // Delivers an async event to the app owning the object (`handle` as the app knows it), with
    // the id of its reason in the app's reason ring (0: none).
    virtual void async_event(int async_fd, ibv_event_type type, uint32_t handle,
                             uint32_t reason) = 0;
    // Tells the NIC at `peer_addr` why a request of its QP was refused, before the NAK goes;
    // and finds what a peer said about a NAK that came (nothing when the peer is not an
    // emulated host of this set, or said nothing).
    virtual void tell_peer(const emu::wire::IpAddress& peer_addr, const PeerReason& reason) = 0;
    virtual std::optional<PeerReason> peer_reason(const emu::wire::IpAddress& peer_addr,
                                                  uint32_t qpn, uint32_t psn) = 0;
    virtual spdlog::logger& log() = 0;
};

} // namespace nicsim
