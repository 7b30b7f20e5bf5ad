// Memory windows. Allocation goes to the NIC; binding and invalidation are work requests on
// the send queue (type 1 through ibv_bind_mw), executed by the NIC in order.
#include "backends/emulated/dead_nic.h"
#include "backends/emulated/emu_objects.h"
#include "backends/emulated/ops.h"

#include <cerrno>
#include <new>

namespace verbs {
namespace ipc = emu::ipc;

ibv_mw* alloc_mw(ibv_pd* pd, ibv_mw_type type) {
    ipc::AllocMwReply r{};
    if (int err = control(pd->context).call<ipc::Op::AllocMw>({pd->handle, uint32_t(type)}, r))
        return fail<ibv_mw>(err);
    auto* mw = new (std::nothrow) ibv_mw{};
    if (!mw) {
        control(pd->context).call<ipc::Op::DeallocMw>({r.handle, 0});
        return fail<ibv_mw>(ENOMEM);
    }
    mw->context = pd->context;
    mw->pd = pd;
    mw->rkey = r.rkey;
    mw->handle = r.handle;
    mw->type = type;
    return mw;
}

int dealloc_mw(ibv_mw* mw) {
    if (int err = control(mw->context).call<ipc::Op::DeallocMw>({mw->handle, 0});
        err && !destroyed_with_nic(mw->context, err))
        return destroy_refused(err);
    delete mw;
    return 0;
}

void fill_bind_wqe(ipc::SendWqe& w, ibv_mw* mw, uint32_t rkey, const ibv_mw_bind_info& info) {
    // Keys, not handles, as the providers' WQEs (mlx5: the MW's rkey in the control segment,
    // the MR's lkey in the data segment): the NIC names the window by its rkey's index.
    w.opcode = IBV_WR_BIND_MW;
    w.imm_data = mw->rkey;
    w.rkey = rkey;
    w.remote_addr = info.addr;
    w.compare_add = info.length;
    w.swap = info.mr ? info.mr->lkey : 0;
    w.remote_qkey = info.mw_access_flags;
}

uint32_t bound_rkey(const ibv_mw* mw, uint32_t rkey) {
    return (mw->rkey & 0xFFFFFF00u) | (rkey & 0xFFu);
}

int bind_mw(ibv_qp* qp, ibv_mw* mw, ibv_mw_bind* bind) {
    // As mlx5_bind_mw and rxe_bind_mw: no zero-based type 1 window (IBA o10-36.2.2), none on a
    // zero-based MR (mlx5).
    if (bind->bind_info.mw_access_flags & IBV_ACCESS_ZERO_BASED) return EINVAL;
    if (bind->bind_info.mr && (emu_mr(bind->bind_info.mr)->access & IBV_ACCESS_ZERO_BASED))
        return EINVAL;
    ibv_send_wr wr{};
    wr.wr_id = bind->wr_id;
    wr.opcode = IBV_WR_BIND_MW;
    wr.send_flags = bind->send_flags;
    wr.bind_mw.mw = mw;
    wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
    wr.bind_mw.bind_info = bind->bind_info;
    ibv_send_wr* bad = nullptr;
    // post_send gives the window its new rkey, as the bind will.
    return post_send(qp, &wr, &bad);
}

} // namespace verbs
