// Completion queues.
#include "emu_objects.h"
#include "export.h"
#include "ops.h"

#include <cerrno>
#include <new>

using namespace verbs;
namespace ipc = emu::ipc;

VERBS_EXPORT ibv_cq* ibv_create_cq(ibv_context* ctx, int cqe, void* cq_context,
                                   ibv_comp_channel* channel, int comp_vector) {
    uint32_t ch_handle = channel ? emu_channel(channel)->handle : 0;
    ipc::CreateCqReq req{cqe, ch_handle, comp_vector, 0};
    ipc::CreateCqReply r{};
    if (int err = control(ctx).call<ipc::Op::CreateCq>(req, r)) return fail<ibv_cq>(err);
    auto* ecq = new (std::nothrow) EmuCq{};
    if (!ecq) {
        control(ctx).call<ipc::Op::DestroyCq>({r.handle, 0});
        return fail<ibv_cq>(ENOMEM);
    }
    ibv_cq& cq = ecq->cq;
    cq.context = ctx;
    cq.channel = channel;
    cq.cq_context = cq_context;
    cq.handle = r.handle;
    cq.cqe = static_cast<int>(r.cqe);
    pthread_mutex_init(&cq.mutex, nullptr);
    pthread_cond_init(&cq.cond, nullptr);
    if (channel) {
        pthread_mutex_lock(&ctx->mutex);
        ++channel->refcnt;
        pthread_mutex_unlock(&ctx->mutex);
    }
    EmuContext* c = emu_context(ctx);
    std::lock_guard lock(c->events_mutex);
    c->cqs[cq.handle] = &cq;
    return &cq;
}

VERBS_EXPORT int ibv_resize_cq(ibv_cq* cq, int cqe) {
    ipc::ResizeCqReply r{};
    if (int err = control(cq->context).call<ipc::Op::ResizeCq>({cq->handle, cqe}, r)) return err;
    cq->cqe = static_cast<int>(r.cqe);
    return 0;
}

VERBS_EXPORT int ibv_destroy_cq(ibv_cq* cq) {
    ibv_context* ctx = cq->context;
    if (int err = control(ctx).call<ipc::Op::DestroyCq>({cq->handle, 0})) return err;
    EmuContext* c = emu_context(ctx);
    {
        std::lock_guard lock(c->events_mutex);
        c->cqs.erase(cq->handle);
    }
    auto* ecq = reinterpret_cast<EmuCq*>(cq);
    // As rdma-core: wait until the app has acked every event it was given for this CQ.
    wait_for_acks(*cq, cq->comp_events_completed, ecq->comp_events_reported);
    wait_for_acks(*cq, cq->async_events_completed, ecq->async_events_reported);
    if (cq->channel) {
        pthread_mutex_lock(&ctx->mutex);
        --cq->channel->refcnt;
        pthread_mutex_unlock(&ctx->mutex);
    }
    pthread_cond_destroy(&cq->cond);
    pthread_mutex_destroy(&cq->mutex);
    delete ecq;
    return 0;
}
