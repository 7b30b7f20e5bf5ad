#include "emu/ipc/reasons.h"

#include <algorithm>
#include <cstring>

namespace emu::ipc {

uint32_t write_reason(ReasonRing& ring, uint32_t* last_id, ReasonKind kind, uint32_t qpn,
                      std::string_view text) {
    uint32_t id = *last_id + 1;
    if (id == 0) id = 1; // 0 means "no reason" wherever an id travels
    *last_id = id;
    ReasonRecord& r = ring.records[id % kReasonRecords];
    r.id.store(0, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release); // readers see 0 before the new bytes
    r.kind = static_cast<uint32_t>(kind);
    r.qpn = qpn;
    size_t n = std::min(text.size(), kReasonTextBytes - 1);
    std::memcpy(r.text, text.data(), n);
    r.text[n] = '\0';
    r.id.store(id, std::memory_order_release);
    ring.last.store(id, std::memory_order_release);
    return id;
}

bool read_reason(const ReasonRing& ring, uint32_t id, Reason* out) {
    if (id == 0) return false;
    const ReasonRecord& r = ring.records[id % kReasonRecords];
    if (r.id.load(std::memory_order_acquire) != id) return false;
    Reason copy;
    copy.kind = static_cast<ReasonKind>(r.kind);
    copy.qpn = r.qpn;
    copy.text.assign(r.text, strnlen(r.text, kReasonTextBytes));
    std::atomic_thread_fence(std::memory_order_acquire); // the bytes before the second look
    if (r.id.load(std::memory_order_relaxed) != id) return false;
    *out = std::move(copy);
    return true;
}

} // namespace emu::ipc
