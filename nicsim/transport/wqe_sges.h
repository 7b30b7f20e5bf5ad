// A work request's scatter/gather list, copied out of its ring slot: the app owns the ring and
// may rewrite it while the NIC works, so the NIC reads the list once. It holds at most the
// device's max_sge (device_limits.h), which every QP's, SRQ's and WQ's max_sge is within.
#pragma once

#include "emu/ipc/protocol.h"
#include "nic/device_limits.h"

#include <cstdint>
#include <cstring>

namespace nicsim {

struct WqeSges {
    emu::ipc::Sge sge[limits::kMaxSge];
    uint32_t count = 0;

    // The `n` SGEs at `from`; false (nothing copied) when n is beyond the device's max_sge.
    bool load(const void* from, uint32_t n) {
        if (n > limits::kMaxSge) return false;
        std::memcpy(sge, from, n * sizeof(emu::ipc::Sge));
        count = n;
        return true;
    }
};

} // namespace nicsim
