#include "objects/ring_factory.h"

namespace nicsim {

Ring place_ring(void* at, uint32_t entries, uint32_t entry_size) {
    auto* header = static_cast<emu::ipc::RingHeader*>(at);
    header->entries = entries;
    header->entry_size = entry_size;
    return {header, entries, entry_size};
}

int create_ring(const char* name, uint32_t entries, uint32_t entry_size, SharedMemory& memory,
                UniqueFd& fd, Ring& ring) {
    if (int err = SharedMemory::create(name, emu::ipc::ring_bytes(entries, entry_size), memory, fd))
        return err;
    ring = place_ring(memory.data(), entries, entry_size);
    return 0;
}

} // namespace nicsim
