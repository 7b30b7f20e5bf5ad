// Every shared ring the NIC makes (CQ, SQ, RQ, SRQ, WQ) is laid out the same way: a RingHeader
// carrying its geometry, which the app's library reads back, then the slots.
#pragma once

#include "data/shared_memory.h"
#include "objects/objects.h"
#include "support/unique_fd.h"

#include <cstdint>

namespace nicsim {

// A ring of `entries` slots of `entry_size` bytes at `at`, which must hold
// emu::ipc::ring_bytes(entries, entry_size) zeroed bytes of shared memory.
Ring place_ring(void* at, uint32_t entries, uint32_t entry_size);

// A ring in a memfd of its own (`name` shows in the app's /proc/PID/maps): *memory maps it
// here, *fd is for the app. Returns 0 or an errno.
int create_ring(const char* name, uint32_t entries, uint32_t entry_size, SharedMemory& memory,
                UniqueFd& fd, Ring& ring);

} // namespace nicsim
