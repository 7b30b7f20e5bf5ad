// Shared receive queues.
#include "emu_objects.h"
#include "emulated_verbs.h"
#include "export.h"

#include <cerrno>
#include <new>

using namespace verbs;
namespace ipc = emu::ipc;

ibv_srq* emulated::ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr* attr) {
    ibv_context* ctx = pd->context;
    ipc::CreateSrqReply r{};
    ipc::PassedFds fds;
    if (int err = control(ctx).call<ipc::Op::CreateSrq>({pd->handle, 0, attr->attr}, r, &fds))
        return fail<ibv_srq>(err);
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
    ibv_srq& srq = esrq->srq;
    srq.context = ctx;
    srq.srq_context = attr->srq_context;
    srq.pd = pd;
    srq.handle = r.handle;
    pthread_mutex_init(&srq.mutex, nullptr);
    pthread_cond_init(&srq.cond, nullptr);
    attr->attr = r.attr;
    EmuContext* c = emu_context(ctx);
    std::lock_guard lock(c->events_mutex);
    c->srqs[srq.handle] = &srq;
    return &srq;
}

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
    if (int err = control(ctx).call<ipc::Op::DestroySrq>({srq->handle, 0})) return err;
    EmuContext* c = emu_context(ctx);
    {
        std::lock_guard lock(c->events_mutex);
        c->srqs.erase(srq->handle);
    }
    auto* esrq = reinterpret_cast<EmuSrq*>(srq);
    wait_for_acks(*srq, srq->events_completed, esrq->events_reported);
    pthread_cond_destroy(&srq->cond);
    pthread_mutex_destroy(&srq->mutex);
    delete esrq;
    return 0;
}
