// The library's own halves of the verbs objects. Each wraps the public struct the app sees
// (always the first member, so a pointer to one is a pointer to the other) and adds what the
// library needs to reach the NIC.
#pragma once

#include "emu/ipc/control_client.h"
#include "emu/ipc/rings.h"

#include <infiniband/verbs.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace verbs {

struct EmuDevice {
    ibv_device device;
    // Where rdma-core's struct verbs_device keeps its provider ops: zero, so that probes such
    // as mlx5dv_is_supported() and efadv_query_device() see a device that is not theirs.
    void* verbs_device_ops = nullptr;
    std::string socket_path;
    uint64_t node_guid = 0; // network byte order
    int index = 0;
};

// A ring mapped from the NIC, with this side's private copy of its geometry and index.
struct ShimRing {
    emu::ipc::RingHeader* header = nullptr;
    uint32_t entries = 0;
    uint32_t entry_size = 0;
    uint32_t index = 0; // producer (SQ, RQ, SRQ) or consumer (CQ)
    char* slot(uint32_t i) const { return emu::ipc::ring_slot(header, i, entries, entry_size); }
};

// The producer side of SQ/RQ/SRQ rings.
inline bool ring_full(const ShimRing& r) {
    return r.index - r.header->consumer.load(std::memory_order_acquire) >= r.entries;
}
inline void publish(ShimRing& r) {
    r.header->producer.store(r.index, std::memory_order_seq_cst);
}

// A shared mapping of `bytes` from a memfd the NIC sent; unmapped by the destructor.
struct Mapping {
    void* data = nullptr;
    size_t bytes = 0;
    Mapping() = default;
    Mapping(const Mapping&) = delete;
    Mapping& operator=(const Mapping&) = delete;
    ~Mapping() { reset(); }
    int map(int fd, size_t len); // 0 or errno; closes fd
    // Maps the one memfd a create reply carries (closing any other). 0 or errno.
    int map_reply(emu::ipc::PassedFds& fds, size_t len);
    void reset();
};

// One control session with the host's NIC and what comes with it. The context that opened it
// and every context ibv_import_device made from its command fd share it, as contexts on one
// kernel uverbs file share its objects.
struct EmuSession {
    EmuDevice* device = nullptr;
    emu::ipc::ControlClient control;
    int async_fd = -1;
    int doorbell_fd = -1;
    Mapping doorbell_page;                 // and the reason ring after it (emu/ipc/reasons.h)
    std::atomic<uint32_t> reasons_seen{0}; // the newest reason id explain::notices looked at

    // Objects that async and completion events can name, by their NIC handle.
    std::mutex events_mutex;
    std::unordered_map<uint32_t, ibv_qp*> qps;
    std::unordered_map<uint32_t, ibv_cq*> cqs;
    std::unordered_map<uint32_t, ibv_srq*> srqs;

    // The NIC is gone (dead_nic.h): set once, never cleared.
    std::atomic<bool> nic_dead{false};
    std::atomic<uint64_t> nic_checked_ns{0}; // when a poll last looked (CLOCK_MONOTONIC_COARSE)
    std::mutex flush_mutex;                  // one flusher at a time in this process

    EmuSession() = default;
    EmuSession(const EmuSession&) = delete;
    EmuSession& operator=(const EmuSession&) = delete;
    ~EmuSession(); // ends the session: the NIC frees everything it still owns
};

struct EmuContext {
    verbs_context vctx; // its last member is the ibv_context the app holds
    std::shared_ptr<EmuSession> session;
    int own_cmd_fd = -1;                     // an imported context owns the fd it was made from
    std::atomic<bool> fatal_reported{false}; // IBV_EVENT_DEVICE_FATAL went to the app
};

inline EmuContext* emu_context(ibv_context* ctx) {
    return reinterpret_cast<EmuContext*>(reinterpret_cast<char*>(ctx) -
                                         offsetof(verbs_context, context));
}

inline EmuSession& session(ibv_context* ctx) {
    return *emu_context(ctx)->session;
}

inline emu::ipc::ControlClient& control(ibv_context* ctx) {
    return session(ctx).control;
}

// Whether an object of context `other` may be named in a request on `ctx`: contexts on one NIC
// session (ibv_import_device) share their objects, others do not. The kernel looks a handle up
// in the caller's own uverbs file only, so another context's object is not found there (ENOENT);
// the library refuses it before its handle could name an object of this session.
bool shares_objects(ibv_context* ctx, ibv_context* other);

// The device of the host whose NIC answers at `path` with `hello` (device_list.cpp): one per
// host for the life of the process.
EmuDevice* emulated_device(const std::string& path, const emu::ipc::HelloReply& hello);

inline EmuDevice* emu_device(ibv_device* dev) {
    return reinterpret_cast<EmuDevice*>(dev);
}

struct EmuCompChannel {
    ibv_comp_channel channel;
    uint32_t handle = 0;
};

inline EmuCompChannel* emu_channel(ibv_comp_channel* ch) {
    return reinterpret_cast<EmuCompChannel*>(ch);
}

// Tells the NIC that work was posted, if it sleeps (a syscall only then).
// New work on the queues of doorbell slot `slot` (rings.h; kDoorbellAll: SRQs and WQs).
void ring_doorbell(ibv_context* ctx, uint32_t slot);

// Whether the session's NIC runs at real-time priority (rings.h, DoorbellPage::nic_realtime).
inline bool nic_realtime(EmuSession& s) {
    const auto* page = static_cast<const emu::ipc::DoorbellPage*>(s.doorbell_page.data);
    return page && page->nic_realtime.load(std::memory_order_relaxed);
}

// An MR, and the shared pages it claims (shared_pages.h).
struct EmuMr {
    ibv_mr mr{};
    unsigned access = 0; // as registered (ibv_mr has no field for it)
    uint64_t shared_region = 0;
};

inline EmuMr* emu_mr(ibv_mr* mr) {
    return reinterpret_cast<EmuMr*>(mr);
}

// A CQ is always an ibv_cq_ex: its first part is a valid ibv_cq (ibv_cq_ex_to_cq is a cast).
struct EmuCq {
    ibv_cq_ex ex;
    uint32_t comp_events_reported = 0;  // delivered by ibv_get_cq_event
    uint32_t async_events_reported = 0; // delivered by ibv_get_async_event
    std::mutex poll_mutex;
    Mapping memory;
    ShimRing ring;
    uint32_t empty_polls = 0;               // consecutive polls that found nothing
    uint32_t last_reason_said = 0;          // explain's last reason for this CQ (flushes: once)
    const emu::ipc::Cqe* current = nullptr; // the CQE an extended poll is looking at
    // QPs destroyed with CQEs still unpolled here: each QPN with the producer index at its
    // destroy. Polls skip that QP's CQEs before that index (under poll_mutex), as mlx5's and
    // irdma's destroy_qp clean them out of the CQ: libfabric's rxm closes an endpoint, then
    // polls, and would repost a buffer to the endpoint it freed for each CQE left.
    struct DestroyedQp {
        uint32_t qpn;
        uint32_t until;
    };
    std::vector<DestroyedQp> destroyed_qps;
    ibv_cq* cq() { return reinterpret_cast<ibv_cq*>(&ex); }
};

// ibv_destroy_qp succeeded: the CQEs `qpn` left in `cq` are no longer seen by polls.
void forget_cqes_of(EmuCq& cq, uint32_t qpn);
// Whether the CQE at ring index `index`, of QP `qpn`, is one forget_cqes_of hid. Called under
// poll_mutex, for each CQE in order; drops what the consumer index `index` has passed.
bool forgotten_cqe(EmuCq& cq, uint32_t index, uint32_t qpn);

inline EmuCq* emu_cq(ibv_cq* cq) {
    return reinterpret_cast<EmuCq*>(cq);
}
inline EmuCq* emu_cq(ibv_cq_ex* cq) {
    return reinterpret_cast<EmuCq*>(cq);
}

// Called when a poll finds nothing: apps busy-poll, and on a small machine the NIC processes
// need the CPU to produce what the app waits for; an empty CQ is also where an app would wait
// forever for a dead NIC, so now and then it looks whether the NIC is gone (cq_ex_poll.cpp).
void empty_poll_backoff(EmuCq& cq);

// A QP is always an ibv_qp_ex (its first member is the ibv_qp); the new post-send API is
// offered only when the QP was created with send_ops_flags, as in rdma-core.
struct EmuQp {
    ibv_qp_ex ex;
    uint32_t events_reported = 0;
    std::mutex sq_mutex, rq_mutex;
    Mapping memory;
    ShimRing sq, rq;
    uint32_t doorbell_slot = emu::ipc::kDoorbellAll;
    ibv_qp_cap cap{};
    bool has_send_ops = false;
    // ibv_wr_start .. ibv_wr_complete: the batch being built (sq_mutex is held meanwhile).
    uint32_t batch_start = 0;
    char* batch_wqe = nullptr; // the WQE the ibv_wr_set_* calls fill
    int batch_err = 0;
    ibv_qp* qp() { return &ex.qp_base; }
};

inline EmuQp* emu_qp(ibv_qp* qp) {
    return reinterpret_cast<EmuQp*>(qp);
}
inline EmuQp* emu_qp(ibv_qp_ex* qp) {
    return reinterpret_cast<EmuQp*>(qp);
}

// Installs the ibv_wr_* functions.
void install_send_ops(EmuQp& qp);

struct EmuSrq {
    ibv_srq srq;
    uint32_t events_reported = 0;
    std::mutex mutex;
    Mapping memory;
    ShimRing ring;
    uint32_t max_sge = 0;
    uint32_t srqn = 0; // the NIC's SRQ number (ibv_get_srq_num)
};

// A receive work queue (ibv_create_wq): its ring, posted to with ibv_post_wq_recv.
struct EmuWq {
    ibv_wq wq;
    std::mutex mutex;
    Mapping memory;
    ShimRing ring;
    uint32_t max_sge = 0;
};

inline EmuWq* emu_wq(ibv_wq* wq) {
    return reinterpret_cast<EmuWq*>(wq);
}

// An XRC domain handle (ibv_open_xrcd).
struct EmuXrcd {
    ibv_xrcd xrcd;
    uint32_t handle = 0;
};

inline EmuXrcd* emu_xrcd(ibv_xrcd* x) {
    return reinterpret_cast<EmuXrcd*>(x);
}

// Waits (on the object's own mutex and cond) until the app has acked `reported` events.
template <typename Obj> void wait_for_acks(Obj& obj, uint32_t& completed, uint32_t reported) {
    pthread_mutex_lock(&obj.mutex);
    while (completed != reported)
        pthread_cond_wait(&obj.cond, &obj.mutex);
    pthread_mutex_unlock(&obj.mutex);
}

// Pointer-returning verbs report failure as NULL with errno set.
template <typename T> T* fail(int err) {
    errno = err;
    return nullptr;
}

} // namespace verbs
