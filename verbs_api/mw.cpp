// Memory windows. Allocation goes to the NIC; binding and invalidation are work requests on
// the send queue (type 1 through ibv_bind_mw), executed by the NIC in order.
#include "dead_nic.h"
#include "emu_objects.h"
#include "ops.h"

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
        return err;
    delete mw;
    return 0;
}

void fill_bind_wqe(ipc::SendWqe& w, ibv_mw* mw, uint32_t rkey, const ibv_mw_bind_info& info) {
    w.opcode = IBV_WR_BIND_MW;
    w.ah = mw->handle;
    w.rkey = rkey;
    w.remote_addr = info.addr;
    w.compare_add = info.length;
    w.swap = info.mr ? info.mr->handle : 0;
    w.remote_qkey = info.mw_access_flags;
}

int bind_mw(ibv_qp* qp, ibv_mw* mw, ibv_mw_bind* bind) {
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
