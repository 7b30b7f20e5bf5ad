// Queue pairs: creation (classic and extended), the state machine (checked by the NIC),
// queries and destruction.
#include "backends/emulated/dead_nic.h"
#include "backends/emulated/emu_objects.h"
#include "backends/emulated/emulated_verbs.h"
#include "backends/emulated/ops.h"
#include "emu/wr_opcodes.h"

#include <cerrno>
#include <cstring>
#include <new>

using namespace verbs;
namespace ipc = emu::ipc;

namespace {

// The app's ibv_qp for a QP the NIC made.
EmuQp* new_qp(ibv_context* ctx, const ibv_qp_init_attr_ex& attr, const ipc::CreateQpReply& r) {
    auto* eqp = new (std::nothrow) EmuQp{};
    if (!eqp) return nullptr;
    ibv_qp& qp = *eqp->qp();
    qp.context = ctx;
    qp.qp_context = attr.qp_context;
    qp.pd = attr.pd;
    qp.send_cq = attr.send_cq;
    qp.recv_cq = attr.recv_cq;
    qp.srq = attr.srq;
    qp.handle = r.handle;
    qp.qp_num = r.qpn;
    eqp->doorbell_slot = r.doorbell_slot;
    qp.state = IBV_QPS_RESET;
    qp.qp_type = attr.qp_type;
    pthread_mutex_init(&qp.mutex, nullptr);
    pthread_cond_init(&qp.cond, nullptr);
    return eqp;
}

void track(ibv_context* ctx, ibv_qp& qp) {
    EmuSession& s = session(ctx);
    std::lock_guard lock(s.events_mutex);
    s.qps[qp.handle] = &qp;
}

// A receive-only raw packet QP that spreads frames over an indirection table's WQs.
ibv_qp* create_rss_qp(ibv_context* ctx, ibv_qp_init_attr_ex* attr) {
    constexpr uint32_t rss = IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH;
    if ((attr->comp_mask & rss) != rss || !attr->rwq_ind_tbl) return fail<ibv_qp>(EINVAL);
    if (attr->qp_type != IBV_QPT_RAW_PACKET) return fail<ibv_qp>(EINVAL);
    if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) return fail<ibv_qp>(EINVAL);
    const ibv_rx_hash_conf& h = attr->rx_hash_conf;
    if (!h.rx_hash_key || h.rx_hash_key_len == 0 || h.rx_hash_key_len > ipc::kMaxRxHashKeyLen)
        return fail<ibv_qp>(EINVAL);
    ipc::CreateRssQpReq req{};
    req.pd = attr->pd->handle;
    req.ind_table = static_cast<uint32_t>(attr->rwq_ind_tbl->ind_tbl_handle);
    req.hash_function = h.rx_hash_function;
    req.key_len = h.rx_hash_key_len;
    req.fields_mask = h.rx_hash_fields_mask;
    std::memcpy(req.key, h.rx_hash_key, h.rx_hash_key_len);
    ipc::CreateQpReply r{};
    if (int err = control(ctx).call<ipc::Op::CreateRssQp>(req, r)) return fail<ibv_qp>(err);
    EmuQp* eqp = new_qp(ctx, *attr, r);
    if (!eqp) {
        control(ctx).call<ipc::Op::DestroyQp>({r.handle, 0});
        return fail<ibv_qp>(ENOMEM);
    }
    attr->cap = {};
    track(ctx, *eqp->qp());
    return eqp->qp();
}

} // namespace

namespace verbs {

ibv_qp* create_qp_ex(ibv_context* ctx, ibv_qp_init_attr_ex* attr) {
    constexpr uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD |
                               IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
                               IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH;
    if (attr->comp_mask & ~known) return fail<ibv_qp>(EOPNOTSUPP); // TSO
    // As rdma-core's create_qp_ex_common: an XRC_RECV QP has a domain and nothing else, the
    // other types a PD and a send CQ, and all but XRC_SEND a receive CQ.
    const bool xrc_recv = attr->qp_type == IBV_QPT_XRC_RECV;
    const bool xrc_send = attr->qp_type == IBV_QPT_XRC_SEND;
    if (xrc_recv) {
        if (!(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !attr->xrcd) return fail<ibv_qp>(EINVAL);
    } else if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
        return fail<ibv_qp>(EINVAL);
    }
    if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags)
        return fail<ibv_qp>(EOPNOTSUPP);
    if (attr->comp_mask & (IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH))
        return create_rss_qp(ctx, attr);
    bool send_ops = attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    if (send_ops && (attr->send_ops_flags & ~emu::send_ops_of(attr->qp_type)))
        return fail<ibv_qp>(EOPNOTSUPP);
    if (!xrc_recv && (!attr->send_cq || (!xrc_send && !attr->recv_cq))) return fail<ibv_qp>(EINVAL);
    ibv_pd* pd = xrc_recv ? nullptr : attr->pd;
    ibv_cq* send_cq = xrc_recv ? nullptr : attr->send_cq;
    ibv_cq* recv_cq = xrc_recv || xrc_send ? nullptr : attr->recv_cq;
    ibv_srq* srq = xrc_recv || xrc_send ? nullptr : attr->srq;
    // Every object the QP names must be this context's (or one sharing its session).
    for (ibv_context* other : {pd ? pd->context : ctx, send_cq ? send_cq->context : ctx,
                               recv_cq ? recv_cq->context : ctx, srq ? srq->context : ctx})
        if (!shares_objects(ctx, other)) return fail<ibv_qp>(ENOENT);
    ipc::CreateQpReq req{pd ? pd->handle : 0,
                         send_cq ? send_cq->handle : 0,
                         recv_cq ? recv_cq->handle : 0,
                         srq ? srq->handle : 0,
                         static_cast<uint32_t>(attr->qp_type),
                         static_cast<uint32_t>(attr->sq_sig_all),
                         attr->cap,
                         xrc_recv ? emu_xrcd(attr->xrcd)->handle : 0,
                         0};
    ipc::CreateQpReply r{};
    ipc::PassedFds fds;
    if (int err = control(ctx).call<ipc::Op::CreateQp>(req, r, &fds)) return fail<ibv_qp>(err);
    EmuQp* eqp = new_qp(ctx, *attr, r);
    int err = eqp ? eqp->memory.map_reply(fds, r.ring_bytes) : ENOMEM;
    if (err) {
        fds.close_all();
        delete eqp;
        control(ctx).call<ipc::Op::DestroyQp>({r.handle, 0});
        return fail<ibv_qp>(err);
    }
    char* base = static_cast<char*>(eqp->memory.data);
    eqp->sq = {reinterpret_cast<ipc::RingHeader*>(base), r.sq_entries, r.sq_wqe_size, 0};
    if (r.rq_entries)
        eqp->rq = {reinterpret_cast<ipc::RingHeader*>(base + r.rq_offset), r.rq_entries,
                   r.rq_wqe_size, 0};
    eqp->cap = r.cap;
    ibv_qp& qp = *eqp->qp();
    // XRC QPs lack some of what the attr names (rdma-core leaves those NULL).
    qp.pd = pd;
    qp.send_cq = send_cq;
    qp.recv_cq = recv_cq;
    qp.srq = srq;
    if (send_ops) {
        eqp->has_send_ops = true;
        install_send_ops(*eqp);
    }
    attr->cap = r.cap; // the caps the QP really has
    track(ctx, qp);
    return &qp;
}

// ibv_open_qp: another handle on an XRC_RECV QP of the same domain, with the checks of
// rdma-core's ibv_cmd_open_qp. It has no queues of its own.
ibv_qp* open_qp(ibv_context* ctx, ibv_qp_open_attr* attr) {
    if (attr->comp_mask >= IBV_QP_OPEN_ATTR_RESERVED) return fail<ibv_qp>(EOPNOTSUPP);
    if (!(attr->comp_mask & IBV_QP_OPEN_ATTR_XRCD) || !(attr->comp_mask & IBV_QP_OPEN_ATTR_NUM) ||
        !(attr->comp_mask & IBV_QP_OPEN_ATTR_TYPE) || !attr->xrcd)
        return fail<ibv_qp>(EINVAL);
    ipc::OpenQpReq req{emu_xrcd(attr->xrcd)->handle, attr->qp_num,
                       static_cast<uint32_t>(attr->qp_type), 0};
    ipc::OpenQpReply r{};
    if (int err = control(ctx).call<ipc::Op::OpenQp>(req, r)) return fail<ibv_qp>(err);
    auto* eqp = new (std::nothrow) EmuQp{};
    if (!eqp) {
        control(ctx).call<ipc::Op::DestroyQp>({r.handle, 0});
        return fail<ibv_qp>(ENOMEM);
    }
    ibv_qp& qp = *eqp->qp();
    qp.context = ctx;
    if (attr->comp_mask & IBV_QP_OPEN_ATTR_CONTEXT) qp.qp_context = attr->qp_context;
    qp.handle = r.handle;
    qp.qp_num = attr->qp_num;
    qp.state = static_cast<ibv_qp_state>(r.state);
    qp.qp_type = attr->qp_type;
    pthread_mutex_init(&qp.mutex, nullptr);
    pthread_cond_init(&qp.cond, nullptr);
    EmuSession& s = session(ctx);
    std::lock_guard lock(s.events_mutex);
    s.qps[qp.handle] = &qp;
    return &qp;
}

} // namespace verbs

ibv_qp* emulated::ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
    ibv_qp_init_attr_ex ex{};
    ex.qp_context = attr->qp_context;
    ex.send_cq = attr->send_cq;
    ex.recv_cq = attr->recv_cq;
    ex.srq = attr->srq;
    ex.cap = attr->cap;
    ex.qp_type = attr->qp_type;
    ex.sq_sig_all = attr->sq_sig_all;
    ex.comp_mask = IBV_QP_INIT_ATTR_PD;
    ex.pd = pd;
    ibv_qp* qp = create_qp_ex(pd->context, &ex);
    if (qp) attr->cap = ex.cap;
    return qp;
}

namespace {

// Removes the QP's unpolled completions from a CQ, as mlx5's provider does when a QP goes
// back to RESET: the QP starts afresh and its old flush errors must not reach the app. Walks
// the unpolled range from the newest down, moving the other QPs' CQEs up over the removed
// ones, then releases the freed slots at the consumer end. The NIC only writes beyond the
// producer index, so it never meets a moved entry.
void clean_cq(ibv_cq* cq, uint32_t qpn) {
    if (!cq) return; // XRC QPs lack one or both
    EmuCq& c = *emu_cq(cq);
    std::lock_guard lock(c.poll_mutex);
    ShimRing& r = c.ring;
    uint32_t producer = r.header->producer.load(std::memory_order_acquire);
    if (producer - r.index > r.entries) return;
    uint32_t freed = 0;
    for (uint32_t i = producer; i-- != r.index;) {
        auto* cqe = reinterpret_cast<ipc::Cqe*>(r.slot(i));
        if (cqe->wc.qp_num == qpn)
            ++freed;
        else if (freed)
            std::memcpy(r.slot(i + freed), cqe, sizeof *cqe);
    }
    r.index += freed;
    r.header->consumer.store(r.index, std::memory_order_release);
}

} // namespace

int emulated::ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask) {
    ipc::ModifyQpReq req{qp->handle, static_cast<uint32_t>(attr_mask), *attr};
    if (int err = control(qp->context).call<ipc::Op::ModifyQp>(req)) return err;
    if (attr_mask & IBV_QP_STATE) {
        qp->state = attr->qp_state;
        if (attr->qp_state == IBV_QPS_RESET) {
            clean_cq(qp->send_cq, qp->qp_num);
            if (qp->recv_cq != qp->send_cq) clean_cq(qp->recv_cq, qp->qp_num);
        }
    }
    return 0;
}

int emulated::ibv_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask,
                           ibv_qp_init_attr* init_attr) {
    ipc::QueryQpReply r{};
    if (int err = control(qp->context).call<ipc::Op::QueryQp>({qp->handle, uint32_t(attr_mask)}, r))
        return err;
    *attr = r.attr;
    init_attr->qp_context = qp->qp_context;
    init_attr->send_cq = qp->send_cq;
    init_attr->recv_cq = qp->recv_cq;
    init_attr->srq = qp->srq;
    init_attr->cap = r.cap;
    init_attr->qp_type = static_cast<ibv_qp_type>(r.qp_type);
    init_attr->sq_sig_all = static_cast<int>(r.sq_sig_all);
    qp->state = r.attr.qp_state;
    return 0;
}

int emulated::ibv_destroy_qp(ibv_qp* qp) {
    ibv_context* ctx = qp->context;
    int err = control(ctx).call<ipc::Op::DestroyQp>({qp->handle, 0});
    const bool nic_gone = destroyed_with_nic(ctx, err);
    if (err) return destroy_refused(err);
    EmuSession& s = session(ctx);
    {
        std::lock_guard lock(s.events_mutex);
        s.qps.erase(qp->handle);
    }
    if (qp->send_cq) forget_cqes_of(*emu_cq(qp->send_cq), qp->qp_num);
    if (qp->recv_cq && qp->recv_cq != qp->send_cq) forget_cqes_of(*emu_cq(qp->recv_cq), qp->qp_num);
    EmuQp* eqp = emu_qp(qp);
    if (!nic_gone) wait_for_acks(*qp, qp->events_completed, eqp->events_reported);
    pthread_cond_destroy(&qp->cond);
    pthread_mutex_destroy(&qp->mutex);
    delete eqp;
    return 0;
}

// As rdma-core: only QPs created with send_ops_flags have the new post-send API.
ibv_qp_ex* emulated::ibv_qp_to_qp_ex(ibv_qp* qp) {
    EmuQp* eqp = emu_qp(qp);
    return eqp->has_send_ops ? &eqp->ex : nullptr;
}

// The ordering guarantee we promise for RDMA data: none beyond what the IBA requires.
int emulated::ibv_query_qp_data_in_order(ibv_qp*, ibv_wr_opcode, uint32_t) {
    return 0;
}

// Enhanced Connection Establishment is a vendor feature; the emulated device has none.
int emulated::ibv_query_ece(ibv_qp*, ibv_ece*) {
    return EOPNOTSUPP;
}
int emulated::ibv_set_ece(ibv_qp*, ibv_ece*) {
    return EOPNOTSUPP;
}
