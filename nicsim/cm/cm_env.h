// What the CM agent needs from its host: a clock, the wire (MADs to a peer's QP1), a wake-up
// and randomness. The daemon's is GsiPort (gsi_port.h); tests/protocol supplies a fake, so the
// state machine runs on hand-made MADs and a clock the test moves.
#pragma once

#include "emu/wire/ip_address.h"

#include <cstdint>

namespace nicsim::cm {

class CmEnv {
  public:
    virtual ~CmEnv() = default;
    virtual uint64_t now_ms() = 0;
    // One MAD (emu::wire::cm::kMadSize bytes) to QP1 of the host at `dst_addr`.
    virtual void send_mad(const emu::wire::IpAddress& dst_addr, const uint8_t* mad) = 0;
    // CmAgent::on_timer() is due at `at_ms`: call it then (an earlier request may stand).
    virtual void wake_at(uint64_t at_ms) = 0;
    virtual uint32_t random32() = 0;
    // Whether the host's network routes to `dst_addr` from `src_addr` (of one family): a peer
    // outside the set may be there (a Linux RoCE host, another machine's emulated host).
    virtual bool routable(const emu::wire::IpAddress& src_addr,
                          const emu::wire::IpAddress& dst_addr) = 0;
};

} // namespace nicsim::cm
