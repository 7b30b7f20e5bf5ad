// The data path: posting writes WQEs into the shared rings and rings the doorbell; polling
// reads CQEs from shared memory. No socket, and a syscall only to wake a sleeping NIC.
#include "backends/emulated/emu_objects.h"
#include "backends/emulated/ops.h"
#include "emu/verbs_names.h"
#include "emu/wr_opcodes.h"
#include "explain/explain.h"

#include <cerrno>
#include <cstring>
#include <sched.h>
#include <string>

namespace verbs {
namespace ipc = emu::ipc;

namespace {

// Fills the slot for one send WR. Returns 0 or the errno ibv_post_send reports.
int write_send_wqe(EmuQp& q, const ibv_send_wr& wr, char* slot) {
    if (!emu::wr_posts_on(wr.opcode, q.ex.qp_base.qp_type)) return EINVAL;
    if (wr.num_sge < 0 || static_cast<uint32_t>(wr.num_sge) > q.cap.max_send_sge) return EINVAL;
    auto* w = reinterpret_cast<ipc::SendWqe*>(slot);
    *w = {};
    w->wr_id = wr.wr_id;
    w->opcode = wr.opcode;
    w->send_flags = wr.send_flags;
    if (q.ex.qp_base.qp_type == IBV_QPT_XRC_SEND) w->xrc_remote_srqn = wr.qp_type.xrc.remote_srqn;
    w->imm_data = emu::wr_has(wr.opcode, emu::kWrInvalidate) ? wr.invalidate_rkey : wr.imm_data;
    if (wr.opcode == IBV_WR_BIND_MW) {
        ibv_mw* mw = wr.bind_mw.mw;
        if (!mw) return EINVAL;
        // Windows, MRs and QPs of different PDs: the bind completes with IBV_WC_MW_BIND_ERR,
        // as on mlx5 (whose post_send checks nothing of it).
        fill_bind_wqe(*w, mw, wr.bind_mw.rkey, wr.bind_mw.bind_info);
        // The window's rkey once the bind executes. rxe and mlx5 leave ibv_mw.rkey alone for
        // a bind through the send queue (irdma sets it): apps that read it after a bind find
        // the window's key here, its index with their key byte.
        mw->rkey = bound_rkey(mw, wr.bind_mw.rkey);
        return 0;
    }
    if (emu::wr_has(wr.opcode, emu::kWrLocal)) return 0; // LOCAL_INV: its rkey is all it has
    if (q.ex.qp_base.qp_type == IBV_QPT_UD) {
        if (!wr.wr.ud.ah) return EINVAL;
        w->ah = wr.wr.ud.ah->handle;
        w->remote_qpn = wr.wr.ud.remote_qpn;
        w->remote_qkey = wr.wr.ud.remote_qkey;
    } else if (emu::wr_has(wr.opcode, emu::kWrAtomic)) {
        w->remote_addr = wr.wr.atomic.remote_addr;
        w->rkey = wr.wr.atomic.rkey;
        w->compare_add = wr.wr.atomic.compare_add;
        w->swap = wr.wr.atomic.swap;
    } else {
        w->remote_addr = wr.wr.rdma.remote_addr;
        w->rkey = wr.wr.rdma.rkey;
    }
    char* tail = slot + sizeof(ipc::SendWqe);
    // IBV_SEND_INLINE on a READ or an atomic is dropped: their SGEs are where the answer lands.
    bool inline_data = (wr.send_flags & IBV_SEND_INLINE) && emu::wr_has(wr.opcode, emu::kWrInline);
    if (inline_data) {
        // Copied now: the app may reuse its buffer as soon as this call returns.
        uint64_t total = 0;
        for (int i = 0; i < wr.num_sge; ++i)
            total += wr.sg_list[i].length;
        if (total > q.cap.max_inline_data) return EINVAL;
        for (int i = 0; i < wr.num_sge; ++i) {
            if (wr.sg_list[i].length)
                std::memcpy(tail, reinterpret_cast<const void*>(wr.sg_list[i].addr),
                            wr.sg_list[i].length);
            tail += wr.sg_list[i].length;
        }
        w->inline_len = static_cast<uint32_t>(total);
    } else {
        w->send_flags &= ~IBV_SEND_INLINE;
        w->num_sge = static_cast<uint32_t>(wr.num_sge);
        if (wr.num_sge) std::memcpy(tail, wr.sg_list, sizeof(ibv_sge) * wr.num_sge);
    }
    return 0;
}

// Why write_send_wqe refused `wr` (called only for a refused WR, when explaining).
std::string send_wqe_fault(const EmuQp& q, const ibv_send_wr& wr) {
    const ibv_qp_type type = q.ex.qp_base.qp_type;
    if (!emu::wr_posts_on(wr.opcode, type))
        return emu::names::wr_opcode(wr.opcode) + " is not an operation of a " +
               emu::names::qp_type_short(type) + " QP";
    if (wr.num_sge < 0 || static_cast<uint32_t>(wr.num_sge) > q.cap.max_send_sge)
        return "wr_id " + std::to_string(wr.wr_id) + " has " + std::to_string(wr.num_sge) +
               " SGEs, more than max_send_sge " + std::to_string(q.cap.max_send_sge);
    if (wr.opcode == IBV_WR_BIND_MW) return "the bind names no window (wr.bind_mw.mw is NULL)";
    if (type == IBV_QPT_UD && !wr.wr.ud.ah) return "a UD send needs wr.ud.ah";
    return "inline data of more than max_inline_data " + std::to_string(q.cap.max_inline_data) +
           " bytes";
}

std::string recv_wqe_fault(const ibv_recv_wr& wr, uint32_t max_sge) {
    return "wr_id " + std::to_string(wr.wr_id) + " has " + std::to_string(wr.num_sge) +
           " SGEs, more than max_recv_sge " + std::to_string(max_sge);
}

// Why the QP takes no WRs of this kind now.
std::string state_fault(const ibv_qp* qp, bool send) {
    if (send && qp->qp_type == IBV_QPT_XRC_RECV) return "an XRC_RECV QP has no send queue";
    if (!send && qp->srq) return "the QP takes its receives from its SRQ (ibv_post_srq_recv)";
    if (send)
        return "the QP is in " + emu::names::qp_state_short(qp->state) +
               "; it sends from RTS on (RESET->INIT->RTR->RTS first)";
    return "the QP is in RESET; it takes receives from INIT on";
}

int write_recv_wqe(const ibv_recv_wr& wr, uint32_t max_sge, char* slot) {
    if (wr.num_sge < 0 || static_cast<uint32_t>(wr.num_sge) > max_sge) return EINVAL;
    auto* w = reinterpret_cast<ipc::RecvWqe*>(slot);
    w->wr_id = wr.wr_id;
    w->num_sge = static_cast<uint32_t>(wr.num_sge);
    if (wr.num_sge)
        std::memcpy(slot + sizeof(ipc::RecvWqe), wr.sg_list, sizeof(ibv_sge) * wr.num_sge);
    return 0;
}

template <typename Wr, typename Fill, typename Fault>
int post(ibv_context* ctx, uint32_t slot, ShimRing& ring, Wr* wr, Wr** bad_wr, Fill fill,
         const char* verb, uint32_t qpn, Fault fault) {
    int err = 0;
    uint32_t start = ring.index;
    for (; wr; wr = wr->next) {
        if (ring_full(ring)) {
            err = ENOMEM;
            break;
        }
        if ((err = fill(*wr, ring.slot(ring.index)))) break;
        ++ring.index;
    }
    if (err) {
        *bad_wr = wr;
        if (explain::wanted())
            explain::refused(verb, err, qpn,
                             err == ENOMEM ? "the queue is full: " + std::to_string(ring.entries) +
                                                 " WRs outstanding; poll their completions first"
                                           : fault(*wr));
    }
    if (ring.index != start) {
        publish(ring);
        ring_doorbell(ctx, slot);
    }
    return err;
}

} // namespace

int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
    EmuQp& q = *emu_qp(qp);
    // As rxe: a QP sends from RTS on (ERR flushes). An XRC_RECV QP has no send queue.
    if (qp->state < IBV_QPS_RTS || qp->qp_type == IBV_QPT_XRC_RECV || !q.sq.header) {
        *bad_wr = wr;
        explain::refused("ibv_post_send", EINVAL, qp->qp_num, state_fault(qp, true));
        return EINVAL;
    }
    std::lock_guard lock(q.sq_mutex);
    return post(
        qp->context, q.doorbell_slot, q.sq, wr, bad_wr,
        [&q](const ibv_send_wr& w, char* slot) { return write_send_wqe(q, w, slot); },
        "ibv_post_send", qp->qp_num, [&q](const ibv_send_wr& w) { return send_wqe_fault(q, w); });
}

int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
    EmuQp& q = *emu_qp(qp);
    // Receives come from the SRQ when there is one (or an RSS QP's WQs; XRC QPs have no
    // receive queue either); a QP takes them from INIT on.
    if (qp->srq || !q.rq.header || qp->state == IBV_QPS_RESET) {
        *bad_wr = wr;
        explain::refused("ibv_post_recv", EINVAL, qp->qp_num,
                         qp->srq || qp->state == IBV_QPS_RESET ? state_fault(qp, false)
                                                               : "the QP has no receive queue");
        return EINVAL;
    }
    std::lock_guard lock(q.rq_mutex);
    uint32_t max_sge = q.cap.max_recv_sge;
    return post(
        qp->context, q.doorbell_slot, q.rq, wr, bad_wr,
        [max_sge](const ibv_recv_wr& w, char* slot) { return write_recv_wqe(w, max_sge, slot); },
        "ibv_post_recv", qp->qp_num,
        [max_sge](const ibv_recv_wr& w) { return recv_wqe_fault(w, max_sge); });
}

int post_srq_recv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
    auto& s = *reinterpret_cast<EmuSrq*>(srq);
    std::lock_guard lock(s.mutex);
    uint32_t max_sge = s.max_sge;
    return post(
        srq->context, ipc::kDoorbellAll, s.ring, wr, bad_wr,
        [max_sge](const ibv_recv_wr& w, char* slot) { return write_recv_wqe(w, max_sge, slot); },
        "ibv_post_srq_recv", 0,
        [max_sge](const ibv_recv_wr& w) { return recv_wqe_fault(w, max_sge); });
}

int post_wq_recv(ibv_wq* wq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
    EmuWq& w = *emu_wq(wq);
    std::lock_guard lock(w.mutex);
    uint32_t max_sge = w.max_sge;
    return post(
        wq->context, ipc::kDoorbellAll, w.ring, wr, bad_wr,
        [max_sge](const ibv_recv_wr& r, char* slot) { return write_recv_wqe(r, max_sge, slot); },
        "ibv_post_wq_recv", 0,
        [max_sge](const ibv_recv_wr& r) { return recv_wqe_fault(r, max_sge); });
}

int poll_cq(ibv_cq* cq, int num_entries, ibv_wc* wc) {
    EmuCq& c = *emu_cq(cq);
    std::lock_guard lock(c.poll_mutex);
    ShimRing& r = c.ring;
    uint32_t available = r.header->producer.load(std::memory_order_acquire) - r.index;
    if (available > r.entries) available = r.entries;
    int n = 0;
    uint32_t taken = 0;
    for (; n < num_entries && taken < available; ++taken) {
        const char* slot = r.slot(r.index + taken);
        std::memcpy(&wc[n], slot + offsetof(ipc::Cqe, wc), sizeof(ibv_wc));
        if (forgotten_cqe(c, r.index + taken, wc[n].qp_num)) continue;
        if (wc[n].status != IBV_WC_SUCCESS && explain::wanted())
            explain::completion(session(cq->context), c, wc[n],
                                reinterpret_cast<const ipc::Cqe*>(slot)->reason);
        ++n;
    }
    if (taken) {
        r.index += taken;
        r.header->consumer.store(r.index, std::memory_order_release);
    }
    if (n) {
        c.empty_polls = 0;
    } else {
        if (explain::wanted()) explain::notices(session(cq->context));
        empty_poll_backoff(c);
    }
    return n;
}

// Always 0, as mlx5's (a doorbell; neither the CQ's channel nor its handle is looked at) and
// irdma's: rxe alone asks the kernel.
int req_notify_cq(ibv_cq* cq, int solicited_only) {
    EmuCq& c = *emu_cq(cq);
    const uint32_t want = solicited_only ? ipc::kNotifySolicited : ipc::kNotifyAny;
    std::atomic<uint32_t>& notify = c.ring.header->notify;
    uint32_t now = notify.load(std::memory_order_seq_cst);
    // A CQ armed for the next completion stays so: a solicited-only request does not narrow it
    // (rxe_req_notify_cq keeps IB_CQ_NEXT_COMP; so does mlx5: google/rdma-unit-test's
    // CompChannelTest.DowngradeRequest is no mlx5 deviation there).
    // The NIC disarms it (to kNotifyNone) when it raises the event.
    do {
        if (want == ipc::kNotifySolicited && now == ipc::kNotifyAny) return 0;
    } while (!notify.compare_exchange_weak(now, want, std::memory_order_seq_cst));
    return 0;
}

} // namespace verbs
