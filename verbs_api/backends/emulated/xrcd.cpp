// XRC domains (ibv_open_xrcd, ibv_close_xrcd), with the checks of rdma-core's
// ibv_cmd_open_xrcd. The NIC finds the domain's file from our descriptor itself.
#include "backends/emulated/dead_nic.h"
#include "backends/emulated/emu_objects.h"
#include "backends/emulated/ops.h"

#include <cerrno>
#include <new>

namespace verbs {
namespace ipc = emu::ipc;

ibv_xrcd* open_xrcd(ibv_context* ctx, ibv_xrcd_init_attr* attr) {
    if (attr->comp_mask >= IBV_XRCD_INIT_ATTR_RESERVED) return fail<ibv_xrcd>(EOPNOTSUPP);
    if (!(attr->comp_mask & IBV_XRCD_INIT_ATTR_FD) ||
        !(attr->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS))
        return fail<ibv_xrcd>(EINVAL);
    auto* x = new (std::nothrow) EmuXrcd{};
    if (!x) return fail<ibv_xrcd>(ENOMEM);
    ipc::HandleReply r{};
    if (int err = control(ctx).call<ipc::Op::OpenXrcd>({attr->fd, attr->oflags}, r)) {
        delete x;
        return fail<ibv_xrcd>(err);
    }
    x->xrcd.context = ctx;
    x->handle = r.handle;
    return &x->xrcd;
}

int close_xrcd(ibv_xrcd* xrcd) {
    EmuXrcd* x = emu_xrcd(xrcd);
    if (int err = control(xrcd->context).call<ipc::Op::CloseXrcd>({x->handle, 0});
        err && !destroyed_with_nic(xrcd->context, err))
        return destroy_refused(err);
    delete x;
    return 0;
}

} // namespace verbs
