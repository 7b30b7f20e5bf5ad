// Shared mappings of the NIC's memfds, and the doorbell.
#include "backends/emulated/dead_nic.h"
#include "backends/emulated/emu_objects.h"

#include <cerrno>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

namespace verbs {

int Mapping::map(int fd, size_t len) {
    reset();
    void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int err = p == MAP_FAILED ? errno : 0;
    ::close(fd);
    if (err) return err;
    data = p;
    bytes = len;
    return 0;
}

int Mapping::map_reply(emu::ipc::PassedFds& fds, size_t len) {
    if (fds.count != 1) {
        fds.close_all();
        return EIO;
    }
    fds.count = 0; // map() takes it
    return map(fds.fd[0], len);
}

void Mapping::reset() {
    if (data) ::munmap(data, bytes);
    data = nullptr;
    bytes = 0;
}

void ring_doorbell(ibv_context* ctx, uint32_t slot) {
    EmuSession& s = session(ctx);
    // Nobody rings for a dead NIC: what was posted completes with a flush error at once, as on
    // a QP in ERR.
    if (s.nic_dead.load(std::memory_order_relaxed)) return flush_outstanding(s);
    auto* page = static_cast<emu::ipc::DoorbellPage*>(s.doorbell_page.data);
    if (slot >= emu::ipc::kDoorbellSlots) slot = emu::ipc::kDoorbellAll;
    // Pairs with the NIC setting nic_sleeping and then looking at the bits (both seq_cst):
    // either it sees our bit, or we see that it sleeps.
    page->pending[slot / 64].fetch_or(uint64_t{1} << (slot % 64), std::memory_order_seq_cst);
    if (page->nic_sleeping.load(std::memory_order_seq_cst)) {
        if (page->nic_realtime.load(std::memory_order_relaxed))
            page->kicker_cpu.store(::sched_getcpu(), std::memory_order_relaxed); // no syscall
        uint64_t one = 1;
        [[maybe_unused]] ssize_t n = ::write(s.doorbell_fd, &one, sizeof one);
    }
}

} // namespace verbs
