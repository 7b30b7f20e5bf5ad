// Completion queues, classic and extended (ibv_create_cq_ex).
#include "backends/emulated/dead_nic.h"
#include "backends/emulated/emu_objects.h"
#include "backends/emulated/emulated_verbs.h"
#include "backends/emulated/ops.h"

#include <cerrno>
#include <new>

using namespace verbs;
namespace ipc = emu::ipc;

namespace verbs {

// The completion fields an extended CQ can report.
constexpr uint64_t kSupportedWcFlags =
    IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP |
    IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL | IBV_WC_EX_WITH_DLID_PATH_BITS |
    IBV_WC_EX_WITH_COMPLETION_TIMESTAMP | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK |
    IBV_WC_EX_WITH_TM_INFO;

ibv_cq_ex* create_cq_ex(ibv_context* ctx, ibv_cq_init_attr_ex* attr) {
    if (attr->comp_mask & ~uint32_t(IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD))
        return fail<ibv_cq_ex>(EINVAL);
    if (attr->wc_flags & ~kSupportedWcFlags) return fail<ibv_cq_ex>(EOPNOTSUPP);
    if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
        (attr->flags & ~uint32_t(IBV_CREATE_CQ_ATTR_SINGLE_THREADED)))
        return fail<ibv_cq_ex>(EOPNOTSUPP);
    if (attr->cqe > INT32_MAX) return fail<ibv_cq_ex>(EINVAL);
    ipc::CreateCqReq req{static_cast<int32_t>(attr->cqe),
                         attr->channel ? emu_channel(attr->channel)->handle : 0,
                         static_cast<int32_t>(attr->comp_vector), 0};
    ipc::CreateCqReply r{};
    ipc::PassedFds fds;
    if (int err = control(ctx).call<ipc::Op::CreateCq>(req, r, &fds)) return fail<ibv_cq_ex>(err);
    auto* ecq = new (std::nothrow) EmuCq{};
    int err = ecq ? ecq->memory.map_reply(fds, r.ring_bytes) : ENOMEM;
    if (err) {
        fds.close_all();
        delete ecq;
        control(ctx).call<ipc::Op::DestroyCq>({r.handle, 0});
        return fail<ibv_cq_ex>(err);
    }
    ecq->ring = {static_cast<ipc::RingHeader*>(ecq->memory.data), r.cqe, sizeof(ipc::Cqe), 0};
    ibv_cq_ex& cq = ecq->ex;
    cq.context = ctx;
    cq.channel = attr->channel;
    cq.cq_context = attr->cq_context;
    cq.handle = r.handle;
    cq.cqe = static_cast<int>(r.cqe);
    pthread_mutex_init(&cq.mutex, nullptr);
    pthread_cond_init(&cq.cond, nullptr);
    install_cq_ex_ops(cq);
    if (attr->channel) {
        pthread_mutex_lock(&ctx->mutex);
        ++attr->channel->refcnt;
        pthread_mutex_unlock(&ctx->mutex);
    }
    EmuSession& s = session(ctx);
    std::lock_guard lock(s.events_mutex);
    s.cqs[cq.handle] = ecq->cq();
    return &cq;
}

} // namespace verbs

ibv_cq* emulated::ibv_create_cq(ibv_context* ctx, int cqe, void* cq_context,
                                ibv_comp_channel* channel, int comp_vector) {
    if (cqe < 0 || comp_vector < 0) return fail<ibv_cq>(EINVAL);
    ibv_cq_init_attr_ex attr{};
    attr.cqe = static_cast<uint32_t>(cqe);
    attr.cq_context = cq_context;
    attr.channel = channel;
    attr.comp_vector = static_cast<uint32_t>(comp_vector);
    ibv_cq_ex* cq = create_cq_ex(ctx, &attr);
    return cq ? ibv_cq_ex_to_cq(cq) : nullptr;
}

int emulated::ibv_resize_cq(ibv_cq* cq, int cqe) {
    EmuCq* ecq = emu_cq(cq);
    std::lock_guard lock(ecq->poll_mutex);
    // Publish what we polled, so the NIC moves only unpolled completions to the new ring.
    ecq->ring.header->consumer.store(ecq->ring.index, std::memory_order_release);
    ipc::ResizeCqReply r{};
    ipc::PassedFds fds;
    if (int err = control(cq->context).call<ipc::Op::ResizeCq>({cq->handle, cqe}, r, &fds))
        return err;
    if (int err = ecq->memory.map_reply(fds, r.ring_bytes)) return err;
    ecq->ring = {static_cast<ipc::RingHeader*>(ecq->memory.data), r.cqe, sizeof(ipc::Cqe), 0};
    cq->cqe = static_cast<int>(r.cqe);
    return 0;
}

int emulated::ibv_destroy_cq(ibv_cq* cq) {
    ibv_context* ctx = cq->context;
    int err = control(ctx).call<ipc::Op::DestroyCq>({cq->handle, 0});
    const bool nic_gone = destroyed_with_nic(ctx, err);
    if (err) return destroy_refused(err);
    EmuSession& s = session(ctx);
    {
        std::lock_guard lock(s.events_mutex);
        s.cqs.erase(cq->handle);
    }
    EmuCq* ecq = emu_cq(cq);
    // As rdma-core: wait until the app has acked every event it was given for this CQ.
    if (!nic_gone) {
        wait_for_acks(*cq, cq->comp_events_completed, ecq->comp_events_reported);
        wait_for_acks(*cq, cq->async_events_completed, ecq->async_events_reported);
    }
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
