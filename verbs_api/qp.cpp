// Queue pairs: creation, the state machine (checked by the NIC), queries and destruction.
#include "emu_objects.h"
#include "export.h"

#include <cerrno>
#include <new>

using namespace verbs;
namespace ipc = emu::ipc;

VERBS_EXPORT ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
    if (!attr->send_cq || !attr->recv_cq) return fail<ibv_qp>(EINVAL);
    ibv_context* ctx = pd->context;
    ipc::CreateQpReq req{pd->handle,
                         attr->send_cq->handle,
                         attr->recv_cq->handle,
                         attr->srq ? attr->srq->handle : 0,
                         static_cast<uint32_t>(attr->qp_type),
                         static_cast<uint32_t>(attr->sq_sig_all),
                         attr->cap};
    ipc::CreateQpReply r{};
    ipc::PassedFds fds;
    if (int err = control(ctx).call<ipc::Op::CreateQp>(req, r, &fds)) return fail<ibv_qp>(err);
    auto* eqp = new (std::nothrow) EmuQp{};
    int err = !eqp ? ENOMEM : fds.count != 1 ? EIO : 0;
    if (!err) {
        err = eqp->memory.map(fds.fd[0], r.ring_bytes);
        fds.count = 0; // map() took it
    }
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
    ibv_qp& qp = eqp->qp;
    qp.context = ctx;
    qp.qp_context = attr->qp_context;
    qp.pd = pd;
    qp.send_cq = attr->send_cq;
    qp.recv_cq = attr->recv_cq;
    qp.srq = attr->srq;
    qp.handle = r.handle;
    qp.qp_num = r.qpn;
    qp.state = IBV_QPS_RESET;
    qp.qp_type = attr->qp_type;
    pthread_mutex_init(&qp.mutex, nullptr);
    pthread_cond_init(&qp.cond, nullptr);
    attr->cap = r.cap; // the caps the QP really has
    EmuContext* c = emu_context(ctx);
    std::lock_guard lock(c->events_mutex);
    c->qps[qp.handle] = &qp;
    return &qp;
}

VERBS_EXPORT int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask) {
    ipc::ModifyQpReq req{qp->handle, static_cast<uint32_t>(attr_mask), *attr};
    if (int err = control(qp->context).call<ipc::Op::ModifyQp>(req)) return err;
    if (attr_mask & IBV_QP_STATE) qp->state = attr->qp_state;
    return 0;
}

VERBS_EXPORT int ibv_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask,
                              ibv_qp_init_attr* init_attr) {
    ipc::QueryQpReply r{};
    if (int err =
            control(qp->context).call<ipc::Op::QueryQp>({qp->handle, uint32_t(attr_mask)}, r))
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

VERBS_EXPORT int ibv_destroy_qp(ibv_qp* qp) {
    ibv_context* ctx = qp->context;
    if (int err = control(ctx).call<ipc::Op::DestroyQp>({qp->handle, 0})) return err;
    EmuContext* c = emu_context(ctx);
    {
        std::lock_guard lock(c->events_mutex);
        c->qps.erase(qp->handle);
    }
    auto* eqp = reinterpret_cast<EmuQp*>(qp);
    wait_for_acks(*qp, qp->events_completed, eqp->events_reported);
    pthread_cond_destroy(&qp->cond);
    pthread_mutex_destroy(&qp->mutex);
    delete eqp;
    return 0;
}

// The ordering guarantee we promise for RDMA data: none beyond what the IBA requires.
VERBS_EXPORT int ibv_query_qp_data_in_order(ibv_qp*, ibv_wr_opcode, uint32_t) { return 0; }

// Enhanced Connection Establishment is a vendor feature; the emulated device has none.
VERBS_EXPORT int ibv_query_ece(ibv_qp*, ibv_ece*) { return EOPNOTSUPP; }
VERBS_EXPORT int ibv_set_ece(ibv_qp*, ibv_ece*) { return EOPNOTSUPP; }

// Only QPs created through ibv_create_qp_ex with send_ops_flags have the new post-send API;
// for all others rdma-core returns NULL, as here.
VERBS_EXPORT ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp*) { return nullptr; }
