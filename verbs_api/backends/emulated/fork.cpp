// Fork support. rdma-core marks registered memory MADV_DONTFORK so a child's copy-on-write cannot
// move pages under the NIC's DMA. Here the "DMA" is done by the emulator daemon reading and
// writing this process's memory through its /proc/self/mem by virtual address, so fork()
// is always safe: there is nothing to set up and nothing to protect.

#include "backends/emulated/emulated_verbs.h"

#include <infiniband/verbs.h>

#include <cstddef>

int verbs::emulated::ibv_fork_init(void) {
    return 0;
}

ibv_fork_status verbs::emulated::ibv_is_fork_initialized(void) {
    return IBV_FORK_UNNEEDED;
}

int verbs::emulated::ibv_dontfork_range(void*, size_t) {
    return 0;
}

int verbs::emulated::ibv_dofork_range(void*, size_t) {
    return 0;
}
