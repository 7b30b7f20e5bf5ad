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
    ipc::PassedFds fds;
    if (int err = control(ctx).call<ipc::Op::CreateCq>(req, r, &fds)) return fail<ibv_cq>(err);
    auto* ecq = new (std::nothrow) EmuCq{};
    int err = !ecq ? ENOMEM : fds.count != 1 ? EIO : 0;
    if (!err) {
        err = ecq->memory.map(fds.fd[0], r.ring_bytes);
        fds.count = 0; // map() took it
    }
    if (err) {
        fds.close_all();
        delete ecq;
        control(ctx).call<ipc::Op::DestroyCq>({r.handle, 0});
        return fail<ibv_cq>(err);
    }
    ecq->ring = {static_cast<ipc::RingHeader*>(ecq->memory.data), r.cqe,
                 sizeof(ipc::Cqe), 0};
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
    auto* ecq = reinterpret_cast<EmuCq*>(cq);
    std::lock_guard lock(ecq->poll_mutex);
    // Publish what we polled, so the NIC moves only unpolled completions to the new ring.
    ecq->ring.header->consumer.store(ecq->ring.index, std::memory_order_release);
    ipc::ResizeCqReply r{};
    ipc::PassedFds fds;
    if (int err = control(cq->context).call<ipc::Op::ResizeCq>({cq->handle, cqe}, r, &fds))
        return err;
    if (fds.count != 1) {
        fds.close_all();
        return EIO;
    }
    if (int err = ecq->memory.map(fds.fd[0], r.ring_bytes)) return err;
    ecq->ring = {static_cast<ipc::RingHeader*>(ecq->memory.data), r.cqe, sizeof(ipc::Cqe), 0};
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
