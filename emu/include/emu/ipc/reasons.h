// Why things failed, for the app to read (RDMAEMU_EXPLAIN, the verbs trace): a ring of records in
// the session's shared memory, right after its doorbell page. The NIC writes one record per
// failure and names it by id in what the app sees of it: a completion's Cqe::reason, a refused
// request's ReplyHeader::reason, an async event's AsyncEventRecord::reason. A Notice (a QP that
// waits, with no completion to name it: RNR NAKs without end) is found by scanning the ids up to
// `last`.
//
// The NIC only ever writes these pages and keeps its own count of ids; the app may scribble on
// them and hurt nobody but itself. A reader copies a record out and then checks that its id is
// still the one it wanted (a seqlock: the NIC may be reusing the slot meanwhile).
#pragma once

#include "emu/ipc/rings.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace emu::ipc {

enum class ReasonKind : uint32_t {
    Completion = 1, // an error completion (and the flushed ones after it)
    Refusal,        // a verb the NIC refused
    Event,          // an async event
    Notice,         // something a waiting app should know: no completion names it
};

inline constexpr size_t kReasonTextBytes = 496;
inline constexpr uint32_t kReasonRecords = 64;

struct ReasonRecord {
    std::atomic<uint32_t> id; // 0 while the NIC writes the record
    uint32_t kind;            // ReasonKind
    uint32_t qpn;             // the QP it is about; 0: none
    uint32_t reserved;
    char text[kReasonTextBytes]; // NUL-terminated
};
static_assert(sizeof(ReasonRecord) == 512);

struct ReasonRing {
    alignas(64) std::atomic<uint32_t> last; // the newest id written; record `id` is in slot id % N
    alignas(64) ReasonRecord records[kReasonRecords];
};

// The session's shared memory: the doorbell page, then the reason ring.
inline constexpr size_t kReasonRingOffset = kDoorbellPageSize;
inline constexpr size_t kSessionMemoryBytes =
    kReasonRingOffset +
    (sizeof(ReasonRing) + kDoorbellPageSize - 1) / kDoorbellPageSize * kDoorbellPageSize;

inline ReasonRing* reason_ring(void* session_memory) {
    return reinterpret_cast<ReasonRing*>(static_cast<char*>(session_memory) + kReasonRingOffset);
}

// NIC side: writes the next record after `*last_id` (the writer's own count, never the ring's)
// and returns its id, never 0. Text beyond kReasonTextBytes - 1 is cut.
uint32_t write_reason(ReasonRing& ring, uint32_t* last_id, ReasonKind kind, uint32_t qpn,
                      std::string_view text);

struct Reason {
    ReasonKind kind{};
    uint32_t qpn = 0;
    std::string text;
};
// App side: record `id`, when it is still (or already) there.
bool read_reason(const ReasonRing& ring, uint32_t id, Reason* out);

} // namespace emu::ipc
