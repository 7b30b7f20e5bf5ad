#include "backends/emulated/dead_nic.h"

#include "backends/emulated/emu_objects.h"
#include "verbs_log.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <poll.h>
#include <time.h>
#include <unistd.h>

namespace verbs {
namespace ipc = emu::ipc;

namespace {

constexpr uint64_t kWatchIntervalNs = 100'000'000; // detection within this, plus the flush

uint64_t clock_ns(clockid_t clock) {
    timespec ts;
    ::clock_gettime(clock, &ts);
    return uint64_t(ts.tv_sec) * 1'000'000'000ull + uint64_t(ts.tv_nsec);
}

// Becomes the producer of the CQ's ring (rings.h: library_producer); false when another process
// sharing the ring is.
bool produce_into(EmuCq& c) {
    std::atomic<uint32_t>& owner = c.ring.header->library_producer;
    const auto me = static_cast<uint32_t>(::getpid());
    uint32_t seen = owner.load(std::memory_order_acquire);
    return seen == me || (seen == 0 && owner.compare_exchange_strong(seen, me));
}

// One flush completion into the CQ, as the NIC writes it (nicsim/transport/qp_common.cpp).
// False when the CQ is full or another process produces into it.
bool post_flush(ibv_cq* cq, const ibv_wc& wc) {
    EmuCq& c = *emu_cq(cq);
    if (!produce_into(c)) return false;
    ipc::RingHeader* h = c.ring.header;
    uint32_t producer = h->producer.load(std::memory_order_acquire);
    if (producer - h->consumer.load(std::memory_order_acquire) >= c.ring.entries) return false;
    ipc::Cqe cqe{wc, clock_ns(CLOCK_MONOTONIC), clock_ns(CLOCK_REALTIME), 0, 0, 0};
    std::memcpy(c.ring.slot(producer), &cqe, sizeof cqe);
    h->producer.store(producer + 1, std::memory_order_release);
    return true;
}

// Completes the WRs between the ring's consumer (the NIC's: the oldest not completed) and its
// producer (the app's) with flush errors; the consumer follows, so each is flushed once.
template <typename Wqe> void flush_ring(ShimRing& ring, ibv_cq* cq, ibv_qp& qp, ibv_wc_opcode op) {
    if (!ring.header || !cq) return;
    ipc::RingHeader* h = ring.header;
    uint32_t consumer = h->consumer.load(std::memory_order_acquire);
    uint32_t producer = h->producer.load(std::memory_order_acquire);
    if (producer - consumer > ring.entries) consumer = producer - ring.entries;
    for (; consumer != producer; ++consumer) {
        Wqe w;
        std::memcpy(&w, ring.slot(consumer), sizeof w);
        ibv_wc wc{};
        wc.wr_id = w.wr_id;
        wc.status = IBV_WC_WR_FLUSH_ERR;
        wc.opcode = op;
        wc.qp_num = qp.qp_num;
        if (!post_flush(cq, wc)) break;
    }
    h->consumer.store(consumer, std::memory_order_release);
}

} // namespace

bool nic_gone(const EmuSession& s) {
    pollfd p{s.control.fd(), 0, 0};
    return ::poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR));
}

void watch_nic(EmuSession& s) {
    if (s.nic_dead.load(std::memory_order_relaxed)) return flush_outstanding(s);
    uint64_t now = clock_ns(CLOCK_MONOTONIC_COARSE); // the vDSO's: no syscall
    uint64_t last = s.nic_checked_ns.load(std::memory_order_relaxed);
    if (now - last < kWatchIntervalNs) return;
    if (!s.nic_checked_ns.compare_exchange_strong(last, now)) return; // another thread looks
    if (nic_gone(s)) nic_died(s);
}

void nic_died(EmuSession& s) {
    if (!s.nic_dead.exchange(true))
        log(LogLevel::Error,
            "rdmaemu: %s: the NIC closed the session (its daemon died or ended it): the device "
            "is fatal, outstanding work requests complete with IBV_WC_WR_FLUSH_ERR, verbs fail "
            "with EIO\n",
            s.device ? s.device->device.name : "?");
    flush_outstanding(s);
}

bool destroyed_with_nic(ibv_context* ctx, int& err) {
    static const bool allowed = std::getenv("RDMAV_ALLOW_DISASSOC_DESTROY") != nullptr;
    EmuSession& s = session(ctx);
    if (err != EIO || !allowed || !(s.nic_dead.load() || nic_gone(s))) return false;
    err = 0;
    return true;
}

void flush_outstanding(EmuSession& s) {
    std::lock_guard flush(s.flush_mutex);
    std::lock_guard lock(s.events_mutex);
    for (auto& [handle, qp] : s.qps) {
        EmuQp& q = *emu_qp(qp);
        flush_ring<ipc::SendWqe>(q.sq, qp->send_cq, *qp, IBV_WC_SEND);
        if (!qp->srq) flush_ring<ipc::RecvWqe>(q.rq, qp->recv_cq, *qp, IBV_WC_RECV);
    }
}

} // namespace verbs
