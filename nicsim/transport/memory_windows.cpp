#include "memory_windows.h"

#include "nic/nic.h"
#include "objects/session_objects.h"

namespace nicsim {

namespace {

constexpr uint32_t kWindowAccess = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                                   IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_LOCAL_WRITE |
                                   IBV_ACCESS_ZERO_BASED;

// A type 2 window of this PD, bound through QP `qpn` (IBA C10-67: only its QP invalidates).
Mw* own_type2(Nic& nic, const Pd* pd, uint32_t qpn, uint32_t rkey) {
    Mw* mw = nic.mw_by_rkey(rkey);
    if (!mw || mw->type != IBV_MW_TYPE_2 || mw->pd != pd || !mw->mr || mw->qpn != qpn)
        return nullptr;
    return mw;
}

} // namespace

void unbind_window(Mw& mw) {
    if (mw.mr) --mw.mr->windows;
    mw.mr = nullptr;
    mw.addr = mw.length = 0;
    mw.access = 0;
    mw.qpn = 0;
}

ibv_wc_status bind_window(Nic& nic, Qp& qp, const emu::ipc::SendWqe& w) {
    // The window by its rkey's index and the MR by its lkey, as the providers' WQEs name them
    // (mlx5: the MW's rkey in the control segment, the MR's lkey in the KLM; rxe: mw_rkey,
    // mr_lkey). The handles of ibv_mw and ibv_mr are the kernel's and play no part.
    Mw* mw = nic.mw_by_index(w.imm_data);
    // The QP's PD must be the window's, for type 1 as for type 2 (IBA C10-72; mlx5).
    if (!mw || mw->pd != qp.pd) return IBV_WC_MW_BIND_ERR;
    uint32_t access = w.remote_qkey;
    // A type 1 window is never zero-based (IBA o10-36.2.2, rxe_check_bind_mw).
    if (mw->type == IBV_MW_TYPE_1 && (access & IBV_ACCESS_ZERO_BASED)) return IBV_WC_MW_BIND_ERR;
    if (mw->type == IBV_MW_TYPE_2 && mw->mr) return IBV_WC_MW_BIND_ERR; // invalidate first
    uint64_t length = w.compare_add;
    Mr* mr = nullptr;
    if (length) {
        mr = nic.mr_by_lkey(static_cast<uint32_t>(w.swap));
        if (!mr || mr->pd != qp.pd || !(mr->access & IBV_ACCESS_MW_BIND) ||
            (access & ~kWindowAccess))
            return IBV_WC_MW_BIND_ERR;
        // Not onto a zero-based MR (rxe_check_bind_mw; mlx5_bind_mw refuses it too).
        if (mr->access & IBV_ACCESS_ZERO_BASED) return IBV_WC_MW_BIND_ERR;
        // Remote write or atomic through a window needs local write on the MR (IBA C10-74).
        if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
            !(mr->access & IBV_ACCESS_LOCAL_WRITE))
            return IBV_WC_MW_BIND_ERR;
        if (w.remote_addr < mr->iova || w.remote_addr + length < w.remote_addr ||
            w.remote_addr + length > mr->iova + mr->length)
            return IBV_WC_MW_BIND_ERR;
    }
    // The new rkey: the window's index, the consumer's key byte. rxe (rxe_do_bind_mw) and mlx5
    // (set_umr_mkey_seg: only rkey & 0xFF goes into the WQE) ignore the WR's upper 24 bits.
    nic.rekey_mw(*mw, static_cast<uint8_t>(w.rkey & 0xFF));
    unbind_window(*mw);
    if (!mr) return IBV_WC_SUCCESS; // a zero-length bind unbinds a type 1 window
    mw->mr = mr;
    ++mr->windows;
    mw->addr = w.remote_addr;
    mw->length = length;
    mw->access = access;
    if (mw->type == IBV_MW_TYPE_2) mw->qpn = qp.qpn;
    return IBV_WC_SUCCESS;
}

ibv_wc_status invalidate_local(Nic& nic, Qp& qp, uint32_t rkey) {
    Mw* mw = own_type2(nic, qp.pd, qp.qpn, rkey);
    if (!mw) return IBV_WC_MW_BIND_ERR;
    unbind_window(*mw);
    return IBV_WC_SUCCESS;
}

bool invalidate_remote(Nic& nic, const Pd* pd, uint32_t qpn, uint32_t rkey) {
    Mw* mw = own_type2(nic, pd, qpn, rkey);
    if (!mw) return false;
    unbind_window(*mw);
    return true;
}

} // namespace nicsim
