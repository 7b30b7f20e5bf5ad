#include "memory_access.h"

#include "nic/nic.h"
#include "objects/objects.h"

namespace nicsim {

namespace {

bool within(uint64_t va, uint64_t len, uint64_t start, uint64_t length) {
    return va >= start && va + len >= va && va + len <= start + length;
}

} // namespace

KeyCheck check_local(const Nic& nic, const Pd* pd, const emu::ipc::Sge& s, uint32_t need) {
    Mr* mr = nic.mr_by_lkey(s.lkey);
    if (!mr) return {nullptr, nullptr, AccessFault::UnknownKey};
    if (mr->pd != pd) return {nullptr, nullptr, AccessFault::OtherPd};
    // Local keys address by the MR's iova too (rxe, mlx5): the app's pointer for an ordinary
    // MR, from 0 for a zero-based one (device memory).
    if (s.addr < mr->iova || s.length > mr->length || s.addr - mr->iova > mr->length - s.length)
        return {nullptr, nullptr, AccessFault::OutOfRange};
    if ((mr->access & need) != need) return {nullptr, nullptr, AccessFault::NoRight};
    return {mr, nullptr, AccessFault::None};
}

ibv_wc_status resolve_local(const Nic& nic, const Pd* pd, const emu::ipc::Sge* sges, uint32_t n,
                            uint32_t need, std::vector<DmaSegment>& out, uint64_t* total) {
    out.clear();
    uint64_t sum = 0;
    for (uint32_t i = 0; i < n; ++i) {
        const emu::ipc::Sge& s = sges[i];
        if (s.length == 0) continue;
        Mr* mr = check_local(nic, pd, s, need).mr;
        if (!mr) return IBV_WC_LOC_PROT_ERR;
        out.push_back({mr_address(*mr, s.addr), s.length, mr->memory});
        sum += s.length;
    }
    *total = sum;
    return IBV_WC_SUCCESS;
}

KeyCheck check_remote(const Nic& nic, const RemoteAccess& a) {
    if (!a.pd) return {nullptr, nullptr, AccessFault::NoPd};
    if (Mr* mr = nic.mr_by_rkey(a.rkey)) {
        if (mr->pd != a.pd) return {nullptr, nullptr, AccessFault::OtherPd};
        if (!(mr->access & a.need)) return {nullptr, nullptr, AccessFault::NoRight};
        // Remote keys address by the MR's iova (= its address unless registered with an iova).
        if (!within(a.va, a.len, mr->iova, mr->length))
            return {nullptr, nullptr, AccessFault::OutOfRange};
        return {mr, nullptr, AccessFault::None, a.va};
    }
    // A window: its own rights and range, inside the MR's iova space; a type 2 window serves
    // only the QP it was bound through (IBA 10.6.7.2).
    const Mw* mw = nic.mw_by_rkey(a.rkey);
    if (!mw) return {nullptr, nullptr, AccessFault::UnknownKey};
    if (mw->pd != a.pd) return {nullptr, mw, AccessFault::OtherPd};
    if (!mw->mr) return {nullptr, mw, AccessFault::WindowUnbound};
    if (!(mw->access & a.need)) return {nullptr, mw, AccessFault::NoRight};
    if (mw->type == IBV_MW_TYPE_2 && mw->qpn != a.qpn)
        return {nullptr, mw, AccessFault::WindowOtherQp};
    // A zero-based (type 2) window is addressed from 0 at its start (ibv_bind_mw(3); mlx5 binds
    // it with start_addr 0, rxe adds the window's address as an offset).
    const bool zero_based = mw->access & IBV_ACCESS_ZERO_BASED;
    if (!within(a.va, a.len, zero_based ? 0 : mw->addr, mw->length))
        return {nullptr, mw, AccessFault::OutOfRange};
    return {mw->mr, mw, AccessFault::None, zero_based ? mw->addr + a.va : a.va};
}

uint64_t mr_address(const Mr& mr, uint64_t va) {
    return mr.addr + (va - mr.iova);
}

DmaSegment remote_segment(const KeyCheck& c, uint64_t len) {
    return {mr_address(*c.mr, c.va), len, c.mr->memory};
}

} // namespace nicsim
