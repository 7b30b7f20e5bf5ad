// A destroyed QP's CQEs leave its CQs: the NIC makes none after the destroy, and those already
// in the ring are skipped by the polls (mlx5's __mlx5_cq_clean and irdma's clean at destroy_qp;
// rxe leaves them).
#include "backends/emulated/emu_objects.h"

#include <algorithm>

namespace verbs {

void forget_cqes_of(EmuCq& cq, uint32_t qpn) {
    std::lock_guard lock(cq.poll_mutex);
    const uint32_t produced = cq.ring.header->producer.load(std::memory_order_acquire);
    if (produced != cq.ring.index) cq.destroyed_qps.push_back({qpn, produced});
}

bool forgotten_cqe(EmuCq& cq, uint32_t index, uint32_t qpn) {
    auto& gone = cq.destroyed_qps;
    if (gone.empty()) return false;
    // Ring indexes wrap: `index` is before `until` while their difference is negative.
    auto passed = [index](const EmuCq::DestroyedQp& d) {
        return static_cast<int32_t>(index - d.until) >= 0;
    };
    gone.erase(std::remove_if(gone.begin(), gone.end(), passed), gone.end());
    return std::any_of(gone.begin(), gone.end(),
                       [qpn](const EmuCq::DestroyedQp& d) { return d.qpn == qpn; });
}

} // namespace verbs
