// What the CM agent needs from its host: a clock, the wire (MADs to a peer's QP1), a wake-up
// and randomness. The daemon's is GsiPort (gsi_port.h); tests/protocol supplies a fake, so the
// state machine runs on hand-made MADs and a clock the test moves.
#pragma once

#include <cstdint>

namespace nicsim::cm {

class CmEnv {
  public:
    virtual ~CmEnv() = default;
    virtual uint64_t now_ms() = 0;
    // One MAD (emu::wire::cm::kMadSize bytes) to QP1 of the host at `dst_addr` (IPv4, network
    // order).
    virtual void send_mad(uint32_t dst_addr, const uint8_t* mad) = 0;
    // CmAgent::on_timer() is due at `at_ms`: call it then (an earlier request may stand).
    virtual void wake_at(uint64_t at_ms) = 0;
    virtual uint32_t random32() = 0;
    // Whether the host's network routes to `dst_addr` from `src_addr` (network order): a peer
    // outside the set may be there (a Linux RoCE host, another machine's emulated host).
    virtual bool routable(uint32_t src_addr, uint32_t dst_addr) = 0;
};

} // namespace nicsim::cm
