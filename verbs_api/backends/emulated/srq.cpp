// Shared receive queues: basic ones, and XRC SRQs (ibv_create_srq_ex, ibv_get_srq_num).
#include "backends/emulated/dead_nic.h"
#include "backends/emulated/emu_objects.h"
#include "backends/emulated/emulated_verbs.h"
#include "backends/emulated/ops.h"

#include <cerrno>
#include <new>

using namespace verbs;
namespace ipc = emu::ipc;

namespace {

// The app's SRQ for one the NIC made (destroyed again if that fails).
ibv_srq* wrap_srq(ibv_context* ctx, ibv_pd* pd, void* srq_context, const ipc::CreateSrqReply& r,
                  ipc::PassedFds& fds) {
    auto* esrq = new (std::nothrow) EmuSrq{};
    int err = esrq ? esrq->memory.map_reply(fds, r.ring_bytes) : ENOMEM;
    if (err) {
        fds.close_all();
        delete esrq;
        control(ctx).call<ipc::Op::DestroySrq>({r.handle, 0});
        return fail<ibv_srq>(err);
    }
    esrq->ring = {static_cast<ipc::RingHeader*>(esrq->memory.data), r.entries, r.wqe_size, 0};
    esrq->max_sge = r.attr.max_sge;
    esrq->srqn = r.srqn;
    ibv_srq& srq = esrq->srq;
    srq.context = ctx;
    srq.srq_context = srq_context;
    srq.pd = pd;
    srq.handle = r.handle;
    pthread_mutex_init(&srq.mutex, nullptr);
    pthread_cond_init(&srq.cond, nullptr);
    EmuSession& s = session(ctx);
    std::lock_guard lock(s.events_mutex);
    s.srqs[srq.handle] = &srq;
    return &srq;
}

} // namespace

ibv_srq* emulated::ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr* attr) {
    ibv_context* ctx = pd->context;
    ipc::CreateSrqReply r{};
    ipc::PassedFds fds;
    if (int err = control(ctx).call<ipc::Op::CreateSrq>({pd->handle, 0, attr->attr}, r, &fds))
        return fail<ibv_srq>(err);
    ibv_srq* srq = wrap_srq(ctx, pd, attr->srq_context, r, fds);
    if (srq) attr->attr = r.attr;
    return srq;
}

namespace verbs {

// ibv_create_srq_ex (what the inline verb does not turn into ibv_create_srq): XRC SRQs and
// tag-matching SRQs, with the checks of rdma-core's ibv_cmd_create_srq_ex.
ibv_srq* create_srq_ex(ibv_context* ctx, ibv_srq_init_attr_ex* attr) {
    const uint32_t mask = attr->comp_mask;
    if (mask >= IBV_SRQ_INIT_ATTR_RESERVED) return fail<ibv_srq>(EOPNOTSUPP);
    if (!(mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd) return fail<ibv_srq>(EINVAL);
    ibv_srq_type type = (mask & IBV_SRQ_INIT_ATTR_TYPE) ? attr->srq_type : IBV_SRQT_BASIC;
    if (type != IBV_SRQT_BASIC && type != IBV_SRQT_XRC && type != IBV_SRQT_TM)
        return fail<ibv_srq>(EINVAL);
    ipc::CreateSrqExReq req{attr->pd->handle, static_cast<uint32_t>(type), 0, 0, attr->attr, 0, 0};
    if (type == IBV_SRQT_TM) {
        if (!(mask & IBV_SRQ_INIT_ATTR_TM) || !(mask & IBV_SRQ_INIT_ATTR_CQ) || !attr->cq)
            return fail<ibv_srq>(EINVAL);
        req.cq = attr->cq->handle;
        req.max_num_tags = attr->tm_cap.max_num_tags;
        req.max_ops = attr->tm_cap.max_ops;
    }
    if (type == IBV_SRQT_XRC) {
        if (!(mask & IBV_SRQ_INIT_ATTR_XRCD) || !(mask & IBV_SRQ_INIT_ATTR_CQ) || !attr->xrcd ||
            !attr->cq)
            return fail<ibv_srq>(EINVAL);
        req.xrcd = emu_xrcd(attr->xrcd)->handle;
        req.cq = attr->cq->handle;
    }
    ipc::CreateSrqReply r{};
    ipc::PassedFds fds;
    if (int err = control(ctx).call<ipc::Op::CreateSrqEx>(req, r, &fds)) return fail<ibv_srq>(err);
    ibv_srq* srq = wrap_srq(ctx, attr->pd, attr->srq_context, r, fds);
    if (srq) attr->attr = r.attr;
    return srq;
}

// ibv_post_srq_ops: each operation is one request to the NIC, which completes it (when
// signaled) on the SRQ's CQ before it answers.
int post_srq_ops(ibv_srq* srq, ibv_ops_wr* wr, ibv_ops_wr** bad_wr) {
    for (; wr; wr = wr->next) {
        ipc::SrqOpReq req{};
        req.srq = srq->handle;
        req.opcode = static_cast<uint32_t>(wr->opcode);
        req.flags = static_cast<uint32_t>(wr->flags);
        req.unexpected_cnt = wr->tm.unexpected_cnt;
        req.wr_id = wr->wr_id;
        req.handle = wr->tm.handle;
        int err = 0;
        if (wr->opcode == IBV_WR_TAG_ADD) {
            if (wr->tm.add.num_sge < 0 || wr->tm.add.num_sge > int(ipc::kTmMaxSge) ||
                (wr->tm.add.num_sge && !wr->tm.add.sg_list))
                err = EINVAL;
            req.num_sge = static_cast<uint32_t>(wr->tm.add.num_sge);
            if (!err && req.num_sge) req.sge = wr->tm.add.sg_list[0];
            req.recv_wr_id = wr->tm.add.recv_wr_id;
            req.tag = wr->tm.add.tag;
            req.mask = wr->tm.add.mask;
        }
        ipc::SrqOpReply r{};
        if (!err) err = control(srq->context).call<ipc::Op::SrqOps>(req, r);
        if (err) {
            *bad_wr = wr;
            return err;
        }
        if (wr->opcode == IBV_WR_TAG_ADD) wr->tm.handle = r.handle;
    }
    return 0;
}

int get_srq_num(ibv_srq* srq, uint32_t* srq_num) {
    *srq_num = reinterpret_cast<EmuSrq*>(srq)->srqn;
    return 0;
}

} // namespace verbs

int emulated::ibv_modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int attr_mask) {
    return control(srq->context)
        .call<ipc::Op::ModifySrq>({srq->handle, static_cast<uint32_t>(attr_mask), *attr});
}

int emulated::ibv_query_srq(ibv_srq* srq, ibv_srq_attr* attr) {
    ipc::QuerySrqReply r{};
    if (int err = control(srq->context).call<ipc::Op::QuerySrq>({srq->handle, 0}, r)) return err;
    *attr = r.attr;
    return 0;
}

int emulated::ibv_destroy_srq(ibv_srq* srq) {
    ibv_context* ctx = srq->context;
    int err = control(ctx).call<ipc::Op::DestroySrq>({srq->handle, 0});
    const bool nic_gone = destroyed_with_nic(ctx, err);
    if (err) return destroy_refused(err);
    EmuSession& s = session(ctx);
    {
        std::lock_guard lock(s.events_mutex);
        s.srqs.erase(srq->handle);
    }
    auto* esrq = reinterpret_cast<EmuSrq*>(srq);
    if (!nic_gone) wait_for_acks(*srq, srq->events_completed, esrq->events_reported);
    pthread_cond_destroy(&srq->cond);
    pthread_mutex_destroy(&srq->mutex);
    delete esrq;
    return 0;
}
