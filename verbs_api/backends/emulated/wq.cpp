// Receive work queues and indirection tables, the receive side of RSS QPs, reached through the
// verbs_context ops (ibv_create_wq and its kin are inline in <infiniband/verbs.h>).
#include "backends/emulated/dead_nic.h"
#include "backends/emulated/emu_objects.h"
#include "backends/emulated/ops.h"

#include <cerrno>
#include <new>

namespace verbs {
namespace ipc = emu::ipc;

ibv_wq* create_wq(ibv_context* ctx, ibv_wq_init_attr* attr) {
    if (!attr || !attr->pd || !attr->cq) return fail<ibv_wq>(EINVAL);
    ipc::CreateWqReq req{attr->pd->handle,
                         attr->cq->handle,
                         static_cast<uint32_t>(attr->wq_type),
                         attr->max_wr,
                         attr->max_sge,
                         attr->comp_mask,
                         attr->create_flags,
                         0};
    ipc::CreateWqReply r{};
    ipc::PassedFds fds;
    if (int err = control(ctx).call<ipc::Op::CreateWq>(req, r, &fds)) return fail<ibv_wq>(err);
    auto* ewq = new (std::nothrow) EmuWq{};
    int err = ewq ? ewq->memory.map_reply(fds, r.ring_bytes) : ENOMEM;
    if (err) {
        fds.close_all();
        delete ewq;
        control(ctx).call<ipc::Op::DestroyWq>({r.handle, 0});
        return fail<ibv_wq>(err);
    }
    ewq->ring = {static_cast<ipc::RingHeader*>(ewq->memory.data), r.entries, r.wqe_size, 0};
    ewq->max_sge = r.max_sge;
    ibv_wq& wq = ewq->wq;
    wq.context = ctx;
    wq.wq_context = attr->wq_context;
    wq.pd = attr->pd;
    wq.cq = attr->cq;
    wq.wq_num = r.wq_num;
    wq.handle = r.handle;
    wq.state = IBV_WQS_RESET;
    wq.wq_type = attr->wq_type;
    wq.post_recv = post_wq_recv;
    attr->max_wr = r.max_wr;
    attr->max_sge = r.max_sge;
    return &wq;
}

int modify_wq(ibv_wq* wq, ibv_wq_attr* attr) {
    ipc::ModifyWqReq req{wq->handle,
                         attr->attr_mask,
                         static_cast<uint32_t>(attr->wq_state),
                         static_cast<uint32_t>(attr->curr_wq_state),
                         attr->flags,
                         attr->flags_mask};
    if (int err = control(wq->context).call<ipc::Op::ModifyWq>(req)) return err;
    if (attr->attr_mask & IBV_WQ_ATTR_STATE) wq->state = attr->wq_state;
    return 0;
}

int destroy_wq(ibv_wq* wq) {
    if (int err = control(wq->context).call<ipc::Op::DestroyWq>({wq->handle, 0});
        err && !destroyed_with_nic(wq->context, err))
        return destroy_refused(err);
    pthread_cond_destroy(&wq->cond);
    pthread_mutex_destroy(&wq->mutex);
    delete emu_wq(wq);
    return 0;
}

ibv_rwq_ind_table* create_rwq_ind_table(ibv_context* ctx, ibv_rwq_ind_table_init_attr* attr) {
    if (!attr || attr->log_ind_tbl_size > ipc::kMaxRwqIndTableLog || !attr->ind_tbl)
        return fail<ibv_rwq_ind_table>(EINVAL);
    ipc::CreateRwqIndTableReq req{};
    req.log_size = attr->log_ind_tbl_size;
    req.comp_mask = attr->comp_mask;
    for (uint32_t i = 0; i < (1u << attr->log_ind_tbl_size); ++i) {
        if (!attr->ind_tbl[i]) return fail<ibv_rwq_ind_table>(EINVAL);
        req.wqs[i] = attr->ind_tbl[i]->handle;
    }
    ipc::CreateRwqIndTableReply r{};
    if (int err = control(ctx).call<ipc::Op::CreateRwqIndTable>(req, r))
        return fail<ibv_rwq_ind_table>(err);
    auto* table = new (std::nothrow) ibv_rwq_ind_table{};
    if (!table) {
        control(ctx).call<ipc::Op::DestroyRwqIndTable>({r.handle, 0});
        return fail<ibv_rwq_ind_table>(ENOMEM);
    }
    table->context = ctx;
    table->ind_tbl_handle = static_cast<int>(r.handle);
    table->ind_tbl_num = static_cast<int>(r.ind_tbl_num);
    return table;
}

int destroy_rwq_ind_table(ibv_rwq_ind_table* table) {
    auto handle = static_cast<uint32_t>(table->ind_tbl_handle);
    if (int err = control(table->context).call<ipc::Op::DestroyRwqIndTable>({handle, 0});
        err && !destroyed_with_nic(table->context, err))
        return destroy_refused(err);
    delete table;
    return 0;
}

} // namespace verbs
