// Completions: CQEs into the shared CQ ring, and completion events on the channel.
#include "emu/ipc/protocol.h"
#include "engines.h"
#include "nic/nic.h"
#include "nic/report.h"
#include "objects/session_objects.h"
#include "reasons.h"

#include <spdlog/fmt/fmt.h>

#include <cerrno>
#include <cstring>
#include <sys/socket.h>
#include <time.h>

namespace nicsim::transport {

namespace {

uint64_t clock_ns(clockid_t clock) {
    timespec ts;
    ::clock_gettime(clock, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

void overrun(TransportEnv& env, Cq& cq) {
    cq.overrun = true;
    if (!cq.owner) return;
    uint32_t reason = report(env.nic(), env.log(), cq.owner, emu::ipc::ReasonKind::Event, 0,
                             fmt::format("cq#{} overrun (IBV_EVENT_CQ_ERR)", cq.handle),
                             fmt::format("all its {} entries were full, so completions are being "
                                         "lost: poll it more often or make it bigger",
                                         cq.ring.entries));
    env.async_event(cq.owner->async_fd_of(cq.pid), IBV_EVENT_CQ_ERR, cq.handle, reason);
}

} // namespace

void post_completion(TransportEnv& env, Cq& cq, const ibv_wc& wc, bool solicited, uint64_t tm_tag,
                     uint32_t reason) {
    emu::ipc::RingHeader* ring = cq.ring.header;
    uint32_t producer = ring->producer.load(std::memory_order_relaxed);
    uint32_t consumer = ring->consumer.load(std::memory_order_acquire);
    if (producer - consumer >= cq.ring.entries) {
        // The app let the CQ fill up: the completion is lost, as on hardware (CQ overrun).
        if (!cq.overrun) overrun(env, cq);
        return;
    }
    if (wc.status != IBV_WC_SUCCESS)
        env.nic().hw().add(wc.status == IBV_WC_WR_FLUSH_ERR ? HwCounter::FlushedCompletions
                                                            : HwCounter::ErrorCompletions);
    emu::ipc::Cqe cqe{wc, clock_ns(CLOCK_MONOTONIC), clock_ns(CLOCK_REALTIME), tm_tag, 0, reason};
    std::memcpy(cq.ring.slot(producer), &cqe, sizeof cqe);
    ring->producer.store(producer + 1, std::memory_order_seq_cst);
    // Pairs with req_notify_cq storing `notify` and then polling again (both seq_cst).
    uint32_t notify = ring->notify.load(std::memory_order_seq_cst);
    bool wanted = notify == emu::ipc::kNotifyAny || (notify == emu::ipc::kNotifySolicited &&
                                                     (solicited || wc.status != IBV_WC_SUCCESS));
    if (!wanted || !cq.channel) return;
    if (!ring->notify.compare_exchange_strong(notify, emu::ipc::kNotifyNone)) return;
    emu::ipc::CompEventRecord rec{cq.handle, 0};
    // Non-blocking: an app that never reads its channel only loses events, the NIC never stalls.
    [[maybe_unused]] ssize_t n =
        ::send(cq.channel->daemon_end.get(), &rec, sizeof rec, MSG_DONTWAIT | MSG_NOSIGNAL);
}

void srq_consumed(TransportEnv& env, Srq& srq) {
    if (srq.attr.srq_limit == 0) return;
    uint32_t left = srq.ring.header->producer.load(std::memory_order_acquire) -
                    srq.ring.header->consumer.load(std::memory_order_relaxed);
    if (left >= srq.attr.srq_limit) return;
    srq.attr.srq_limit = 0;
    if (srq.owner)
        env.async_event(srq.owner->async_fd_of(srq.pid), IBV_EVENT_SRQ_LIMIT_REACHED, srq.handle,
                        0);
}

} // namespace nicsim::transport
