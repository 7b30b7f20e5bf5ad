#include "memory_access.h"

#include "nic.h"
#include "objects/objects.h"

namespace nicsim {

ibv_wc_status resolve_local(const Nic& nic, const Pd* pd, const emu::ipc::Sge* sges, uint32_t n,
                            uint32_t need, std::vector<DmaSegment>& out, uint64_t* total) {
    out.clear();
    uint64_t sum = 0;
    for (uint32_t i = 0; i < n; ++i) {
        const emu::ipc::Sge& s = sges[i];
        if (s.length == 0) continue;
        Mr* mr = nic.mr_by_lkey(s.lkey);
        if (!mr || mr->pd != pd) return IBV_WC_LOC_PROT_ERR;
        // Local keys address by the MR's iova too (rxe, mlx5): the app's pointer for an
        // ordinary MR, from 0 for a zero-based one (device memory).
        if (s.addr < mr->iova || s.length > mr->length || s.addr - mr->iova > mr->length - s.length)
            return IBV_WC_LOC_PROT_ERR;
        if ((mr->access & need) != need) return IBV_WC_LOC_PROT_ERR;
        out.push_back({mr_address(*mr, s.addr), s.length, mr->memory});
        sum += s.length;
    }
    *total = sum;
    return IBV_WC_SUCCESS;
}

namespace {

bool within(uint64_t va, uint64_t len, uint64_t start, uint64_t length) {
    return va >= start && va + len >= va && va + len <= start + length;
}

} // namespace

Mr* check_remote(const Nic& nic, const Pd* pd, uint32_t qpn, uint32_t rkey, uint64_t va,
                 uint64_t len, uint32_t need) {
    if (!pd) return nullptr;
    if (Mr* mr = nic.mr_by_rkey(rkey)) {
        if (mr->pd != pd || !(mr->access & need)) return nullptr;
        // Remote keys address by the MR's iova (= its address unless registered with an iova).
        return within(va, len, mr->iova, mr->length) ? mr : nullptr;
    }
    // A window: its own rights and range, inside the MR's iova space; a type 2 window serves
    // only the QP it was bound through (IBA 10.6.7.2).
    Mw* mw = nic.mw_by_rkey(rkey);
    if (!mw || !mw->mr || mw->pd != pd || !(mw->access & need)) return nullptr;
    if (mw->type == IBV_MW_TYPE_2 && mw->qpn != qpn) return nullptr;
    return within(va, len, mw->addr, mw->length) ? mw->mr : nullptr;
}

uint64_t mr_address(const Mr& mr, uint64_t va) {
    return mr.addr + (va - mr.iova);
}

} // namespace nicsim
