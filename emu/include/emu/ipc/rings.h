// The data path's shared-memory queues. Each SQ, RQ, SRQ and CQ is a single-producer,
// single-consumer ring in a memfd the NIC creates and the library maps: posting and polling
// touch only this memory, never a socket.
//
// Memory ordering: the producer writes an entry, then stores `producer` with release; the
// consumer loads `producer` with acquire, reads the entry, then stores `consumer` with release.
// Indices run freely (mod 2^32); slot = index & (entries - 1).
//
// The NIC trusts nothing in these pages: the app can write any value at any time, so the NIC
// copies an entry out before checking it, and checks indices against the ring size.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace emu::ipc {

struct RingHeader {
    alignas(64) std::atomic<uint32_t> producer;
    alignas(64) std::atomic<uint32_t> consumer;
    // CQs: the notification request (ibv_req_notify_cq). The app sets it, the NIC clears it
    // when it sends the completion event.
    alignas(64) std::atomic<uint32_t> notify;
    uint32_t entries;    // a power of two
    uint32_t entry_size; // bytes
    // CQs: 0 while the NIC produces. Once the NIC is gone (its session ended) the library writes
    // the flush completions itself; the first process to take this word (its pid) is the one
    // producer from then on, so processes sharing the ring (fork, import) never both write.
    std::atomic<uint32_t> library_producer;
};
inline constexpr size_t kRingDataOffset = 256;
static_assert(sizeof(RingHeader) <= kRingDataOffset);

enum Notify : uint32_t { kNotifyNone = 0, kNotifyAny = 1, kNotifySolicited = 2 };

struct Sge {
    uint64_t addr;
    uint32_t length;
    uint32_t lkey;
};
static_assert(sizeof(Sge) == sizeof(ibv_sge));

// A send work request as posted. IBV_WR_BIND_MW reuses fields: `imm_data` the MW's rkey as the
// app holds it (its index names the window, as mlx5's WQE does), `rkey` the new rkey (the NIC
// takes only its low byte, the consumer's key), `remote_addr`/`compare_add` the bound range's
// address and length, `swap` the MR's lkey, `remote_qkey` the window's access flags. Handles
// play no part: the providers' WQEs carry keys only. IBV_WR_LOCAL_INV: `imm_data` the rkey.
// Followed by `num_sge` Sges, or by `inline_len` bytes of data when IBV_SEND_INLINE was given
// (copied at post time: the app may reuse its buffer at once).
struct SendWqe {
    uint64_t wr_id;
    uint32_t opcode; // enum ibv_wr_opcode
    uint32_t send_flags;
    uint32_t imm_data; // big-endian as the app gave it; the rkey for SEND_WITH_INV
    uint32_t num_sge;
    uint32_t inline_len;
    uint32_t rkey;
    uint64_t remote_addr;
    uint64_t compare_add;
    uint64_t swap;
    // UD only
    uint32_t ah; // the AH's handle
    uint32_t remote_qpn;
    uint32_t remote_qkey;
    uint32_t xrc_remote_srqn; // XRC_SEND only: the target's XRC SRQ (wr.qp_type.xrc.remote_srqn)
};
static_assert(sizeof(SendWqe) == 72);

struct RecvWqe {
    uint64_t wr_id;
    uint32_t num_sge;
    uint32_t reserved;
};
static_assert(sizeof(RecvWqe) == 16);

// A completion: the work completion the app polls, and when it happened. The NIC's clock
// (ibv_query_rt_values_ex, hca_core_clock 1 GHz) is CLOCK_MONOTONIC in nanoseconds.
// Tag matching completions carry the matched tag (ibv_wc_read_tm_info).
struct Cqe {
    ibv_wc wc;
    uint64_t timestamp;    // NIC clock, ns
    uint64_t wallclock_ns; // CLOCK_REALTIME, ns
    uint64_t tm_tag;       // IBV_WC_TM_MATCH: the message's tag
    uint32_t tm_priv;      // the TMH's application context
    uint32_t reason;       // an error: the id of its reason in the session's ring (reasons.h)
};
static_assert(sizeof(Cqe) == 80);

// One page per session, the doorbell. Posting work sets the queue's bit in `pending` (each QP has
// a slot, CreateQpReply::doorbell_slot; slot 0 means "look at every queue of the session": SRQs
// and WQs), so the NIC finds new work without scanning every QP. While the NIC is awake it
// watches the bits; before it sleeps it sets `nic_sleeping` and looks once more, and an app that
// then sees `nic_sleeping` after setting its bit kicks the session's eventfd (both seq_cst: one
// of them sees the other). An awake NIC costs the app no syscall. `nic_realtime`: the NIC runs at
// real-time priority (nicsimd --scheduling: by default where it may), so a wakeup preempts a
// polling app at once and the app's poll need not give the CPU up for it. `kicker_cpu`: the CPU an
// app kicked from, written before the kick when the NIC is real-time: woken on that CPU, the NIC
// moves off it (poll_loop.h) rather than preempt the app at every post.
inline constexpr size_t kDoorbellPageSize = 4096;
inline constexpr uint32_t kDoorbellWords = (kDoorbellPageSize - 64) / 8;
inline constexpr uint32_t kDoorbellSlots = kDoorbellWords * 64;
inline constexpr uint32_t kDoorbellAll = 0;
struct DoorbellPage {
    alignas(64) std::atomic<uint32_t> nic_sleeping;
    std::atomic<uint32_t> nic_realtime;
    std::atomic<int32_t> kicker_cpu;
    alignas(64) std::atomic<uint64_t> pending[kDoorbellWords];
};
static_assert(sizeof(DoorbellPage) <= kDoorbellPageSize);

constexpr uint32_t round_up_pow2(uint32_t v) {
    uint32_t p = 1;
    while (p < v)
        p <<= 1;
    return p;
}

constexpr uint32_t send_wqe_size(uint32_t max_sge, uint32_t max_inline) {
    uint32_t tail = max_sge * sizeof(Sge);
    if (max_inline > tail) tail = max_inline;
    return (sizeof(SendWqe) + tail + 63) / 64 * 64;
}

constexpr uint32_t recv_wqe_size(uint32_t max_sge) {
    return (sizeof(RecvWqe) + max_sge * sizeof(Sge) + 15) / 16 * 16;
}

// A ring's header and slots, up to a whole cache line: where a ring placed after it may start.
constexpr size_t ring_span(uint32_t entries, uint32_t entry_size) {
    return (kRingDataOffset + size_t(entries) * entry_size + 63) / 64 * 64;
}

constexpr size_t pages_for(size_t bytes) {
    return (bytes + 4095) / 4096 * 4096;
}

constexpr size_t ring_bytes(uint32_t entries, uint32_t entry_size) {
    return pages_for(ring_span(entries, entry_size));
}

// Each side keeps the geometry it was told at creation: the header's copy is the app's to
// scribble on.
inline char* ring_slot(void* ring, uint32_t index, uint32_t entries, uint32_t entry_size) {
    return static_cast<char*>(ring) + kRingDataOffset + size_t(index & (entries - 1)) * entry_size;
}

} // namespace emu::ipc
