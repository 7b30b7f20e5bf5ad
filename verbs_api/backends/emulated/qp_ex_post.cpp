// The new post-send API (ibv_wr_start … ibv_wr_complete): each ibv_wr_<op> call starts a WQE
// in the SQ ring, the ibv_wr_set_* calls fill it, and ibv_wr_complete publishes the batch and
// rings the doorbell once. An invalid call poisons the batch: ibv_wr_complete then posts none
// of it and returns the error, as mlx5 does.
#include "backends/emulated/emu_objects.h"
#include "backends/emulated/ops.h"
#include "emu/wr_opcodes.h"

#include <cerrno>
#include <cstring>

namespace verbs {
namespace ipc = emu::ipc;

namespace {

ipc::SendWqe* wqe(EmuQp& q) {
    return reinterpret_cast<ipc::SendWqe*>(q.batch_wqe);
}

// Starts a WQE for `opcode`, or poisons the batch. Returns nullptr when poisoned. An opcode
// its QP type does not execute is EINVAL, as rxe_post_send_kernel refuses one its WR table
// gives no bits for that type (mlx5 offers no ibv_wr_* call for it).
ipc::SendWqe* begin(ibv_qp_ex* qpx, ibv_wr_opcode opcode) {
    EmuQp& q = *emu_qp(qpx);
    q.batch_wqe = nullptr;
    if (q.batch_err) return nullptr;
    if (!emu::wr_executes_on(opcode, q.qp()->qp_type)) {
        q.batch_err = EINVAL;
        return nullptr;
    }
    if (ring_full(q.sq)) {
        q.batch_err = ENOMEM;
        return nullptr;
    }
    q.batch_wqe = q.sq.slot(q.sq.index++);
    ipc::SendWqe* w = wqe(q);
    *w = {};
    w->wr_id = qpx->wr_id;
    w->opcode = opcode;
    w->send_flags = qpx->wr_flags & ~IBV_SEND_INLINE;
    return w;
}

void poison(ibv_qp_ex* qpx, int err) {
    EmuQp& q = *emu_qp(qpx);
    if (!q.batch_err) q.batch_err = err;
}

void wr_start(ibv_qp_ex* qpx) {
    EmuQp& q = *emu_qp(qpx);
    q.sq_mutex.lock();
    q.batch_start = q.sq.index;
    q.batch_wqe = nullptr;
    q.batch_err = 0;
}

int wr_complete(ibv_qp_ex* qpx) {
    EmuQp& q = *emu_qp(qpx);
    int err = q.batch_err;
    if (!err && q.qp()->state < IBV_QPS_RTS) err = EINVAL; // as ibv_post_send
    if (err) {
        q.sq.index = q.batch_start;
    } else if (q.sq.index != q.batch_start) {
        publish(q.sq);
        ring_doorbell(q.qp()->context, q.doorbell_slot);
    }
    q.batch_wqe = nullptr;
    q.sq_mutex.unlock();
    return err;
}

void wr_abort(ibv_qp_ex* qpx) {
    EmuQp& q = *emu_qp(qpx);
    q.sq.index = q.batch_start;
    q.batch_wqe = nullptr;
    q.sq_mutex.unlock();
}

void wr_send(ibv_qp_ex* qpx) {
    begin(qpx, IBV_WR_SEND);
}

void wr_send_imm(ibv_qp_ex* qpx, __be32 imm) {
    if (ipc::SendWqe* w = begin(qpx, IBV_WR_SEND_WITH_IMM)) w->imm_data = imm;
}

void wr_send_inv(ibv_qp_ex* qpx, uint32_t rkey) {
    if (ipc::SendWqe* w = begin(qpx, IBV_WR_SEND_WITH_INV)) w->imm_data = rkey;
}

void remote(ipc::SendWqe* w, uint32_t rkey, uint64_t addr) {
    if (!w) return;
    w->rkey = rkey;
    w->remote_addr = addr;
}

void wr_rdma_write(ibv_qp_ex* qpx, uint32_t rkey, uint64_t addr) {
    remote(begin(qpx, IBV_WR_RDMA_WRITE), rkey, addr);
}

void wr_rdma_write_imm(ibv_qp_ex* qpx, uint32_t rkey, uint64_t addr, __be32 imm) {
    ipc::SendWqe* w = begin(qpx, IBV_WR_RDMA_WRITE_WITH_IMM);
    remote(w, rkey, addr);
    if (w) w->imm_data = imm;
}

void wr_rdma_read(ibv_qp_ex* qpx, uint32_t rkey, uint64_t addr) {
    remote(begin(qpx, IBV_WR_RDMA_READ), rkey, addr);
}

void wr_atomic_cmp_swp(ibv_qp_ex* qpx, uint32_t rkey, uint64_t addr, uint64_t compare,
                       uint64_t swap) {
    ipc::SendWqe* w = begin(qpx, IBV_WR_ATOMIC_CMP_AND_SWP);
    remote(w, rkey, addr);
    if (!w) return;
    w->compare_add = compare;
    w->swap = swap;
}

void wr_atomic_fetch_add(ibv_qp_ex* qpx, uint32_t rkey, uint64_t addr, uint64_t add) {
    ipc::SendWqe* w = begin(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD);
    remote(w, rkey, addr);
    if (w) w->compare_add = add;
}

void wr_atomic_write(ibv_qp_ex* qpx, uint32_t rkey, uint64_t addr, const void* atomic_wr) {
    ipc::SendWqe* w = begin(qpx, IBV_WR_ATOMIC_WRITE);
    remote(w, rkey, addr);
    if (w) std::memcpy(&w->compare_add, atomic_wr, 8); // the NIC sends these 8 bytes
}

void wr_set_ud_addr(ibv_qp_ex* qpx, ibv_ah* ah, uint32_t remote_qpn, uint32_t remote_qkey) {
    EmuQp& q = *emu_qp(qpx);
    if (!q.batch_wqe || q.qp()->qp_type != IBV_QPT_UD) return poison(qpx, EINVAL);
    ipc::SendWqe* w = wqe(q);
    w->ah = ah->handle;
    w->remote_qpn = remote_qpn;
    w->remote_qkey = remote_qkey;
}

void wr_set_sge_list(ibv_qp_ex* qpx, size_t num_sge, const ibv_sge* sg_list) {
    EmuQp& q = *emu_qp(qpx);
    if (!q.batch_wqe) return poison(qpx, EINVAL);
    if (num_sge > q.cap.max_send_sge) return poison(qpx, EINVAL);
    ipc::SendWqe* w = wqe(q);
    w->num_sge = static_cast<uint32_t>(num_sge);
    w->inline_len = 0;
    std::memcpy(q.batch_wqe + sizeof(ipc::SendWqe), sg_list, num_sge * sizeof(ibv_sge));
}

void wr_set_sge(ibv_qp_ex* qpx, uint32_t lkey, uint64_t addr, uint32_t length) {
    ibv_sge sge{addr, length, lkey};
    wr_set_sge_list(qpx, 1, &sge);
}

// Inline data on a READ or an atomic, whose SGEs are where the answer lands, is EINVAL, as
// rxe_post_send_kernel refuses IB_SEND_INLINE on an opcode without WR_INLINE_MASK.
void wr_set_inline_data_list(ibv_qp_ex* qpx, size_t num_buf, const ibv_data_buf* buf_list) {
    EmuQp& q = *emu_qp(qpx);
    if (!q.batch_wqe || !emu::wr_has(wqe(q)->opcode, emu::kWrInline)) return poison(qpx, EINVAL);
    size_t total = 0;
    for (size_t i = 0; i < num_buf; ++i)
        total += buf_list[i].length;
    if (total > q.cap.max_inline_data) return poison(qpx, EINVAL);
    char* out = q.batch_wqe + sizeof(ipc::SendWqe);
    for (size_t i = 0; i < num_buf; ++i) {
        if (buf_list[i].length) std::memcpy(out, buf_list[i].addr, buf_list[i].length);
        out += buf_list[i].length;
    }
    ipc::SendWqe* w = wqe(q);
    w->num_sge = 0;
    w->inline_len = static_cast<uint32_t>(total);
    w->send_flags |= IBV_SEND_INLINE;
}

void wr_set_inline_data(ibv_qp_ex* qpx, void* addr, size_t length) {
    ibv_data_buf buf{addr, length};
    wr_set_inline_data_list(qpx, 1, &buf);
}

void wr_bind_mw(ibv_qp_ex* qpx, ibv_mw* mw, uint32_t rkey, const ibv_mw_bind_info* info) {
    if (!mw || !info) return poison(qpx, EINVAL);
    if (ipc::SendWqe* w = begin(qpx, IBV_WR_BIND_MW)) {
        uint32_t flags = w->send_flags;
        fill_bind_wqe(*w, mw, rkey, *info);
        w->send_flags = flags;
        mw->rkey = bound_rkey(mw, rkey); // the window's rkey once the bind executes
    }
}

void wr_local_inv(ibv_qp_ex* qpx, uint32_t rkey) {
    if (ipc::SendWqe* w = begin(qpx, IBV_WR_LOCAL_INV)) w->imm_data = rkey;
}

// The XRC SRQ an XRC_SEND WR goes to.
void wr_set_xrc_srqn(ibv_qp_ex* qpx, uint32_t remote_srqn) {
    EmuQp& q = *emu_qp(qpx);
    if (!q.batch_wqe || q.qp()->qp_type != IBV_QPT_XRC_SEND) return poison(qpx, EINVAL);
    wqe(q)->xrc_remote_srqn = remote_srqn;
}

// TSO is an Ethernet offload this device does not offer: the batch fails with EOPNOTSUPP.
void wr_send_tso(ibv_qp_ex* qpx, void*, uint16_t, uint16_t) {
    poison(qpx, EOPNOTSUPP);
}

} // namespace

void install_send_ops(EmuQp& q) {
    ibv_qp_ex& x = q.ex;
    x.wr_start = wr_start;
    x.wr_complete = wr_complete;
    x.wr_abort = wr_abort;
    x.wr_send = wr_send;
    x.wr_send_imm = wr_send_imm;
    x.wr_send_inv = wr_send_inv;
    x.wr_rdma_write = wr_rdma_write;
    x.wr_rdma_write_imm = wr_rdma_write_imm;
    x.wr_rdma_read = wr_rdma_read;
    x.wr_atomic_cmp_swp = wr_atomic_cmp_swp;
    x.wr_atomic_fetch_add = wr_atomic_fetch_add;
    x.wr_set_ud_addr = wr_set_ud_addr;
    x.wr_set_sge = wr_set_sge;
    x.wr_set_sge_list = wr_set_sge_list;
    x.wr_set_inline_data = wr_set_inline_data;
    x.wr_set_inline_data_list = wr_set_inline_data_list;
    x.wr_bind_mw = wr_bind_mw;
    x.wr_local_inv = wr_local_inv;
    x.wr_send_tso = wr_send_tso;
    x.wr_set_xrc_srqn = wr_set_xrc_srqn;
    x.wr_atomic_write = wr_atomic_write;
}

} // namespace verbs
