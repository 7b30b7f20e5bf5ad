// QP1 of this host on the wire: CM MADs travel as UD SEND Only packets to QP 1 with the GSI
// Q_Key (IBA 13.5.1), through the host's link like every other packet, so one daemon owns every
// packet of its host and the capture shows them. It is the CM agent's CmEnv: the wire, the
// event loop's clock and a timer.
#pragma once

#include "cm_env.h"
#include "emu/wire/packet.h"
#include "net/udp_link.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <random>

namespace nicsim::cm {

class CmAgent;

class GsiPort final : public CmEnv {
  public:
    GsiPort(boost::asio::io_context& io, UdpLink& link);
    void attach(CmAgent& agent) { agent_ = &agent; }

    // A parsed packet the engine found addressed to QP 1: a GSI datagram goes to the agent (from
    // the set's port when a host of the set sent it); anything else is counted and dropped.
    void receive(const emu::wire::IpEndpoint& from, const emu::wire::Headers& h,
                 const uint8_t* payload, size_t len);

    uint64_t now_ms() override;
    void send_mad(const emu::wire::IpAddress& dst_addr, const uint8_t* mad) override;
    void wake_at(uint64_t at_ms) override;
    uint32_t random32() override { return rng_(); }
    bool routable(const emu::wire::IpAddress& src_addr,
                  const emu::wire::IpAddress& dst_addr) override;

  private:
    boost::asio::io_context& io_;
    UdpLink& link_;
    CmAgent* agent_ = nullptr;
    boost::asio::steady_timer timer_;
    uint64_t armed_for_ = 0;
    uint32_t psn_ = 0; // QP1's send PSN
    std::mt19937 rng_;
};

} // namespace nicsim::cm
