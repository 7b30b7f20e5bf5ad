// Protection domains.
#include "emu_objects.h"
#include "export.h"

#include <cerrno>
#include <new>

using namespace verbs;
namespace ipc = emu::ipc;

VERBS_EXPORT ibv_pd* ibv_alloc_pd(ibv_context* ctx) {
    ipc::HandleReply r{};
    if (int err = control(ctx).call<ipc::Op::AllocPd>({}, r)) return fail<ibv_pd>(err);
    auto* pd = new (std::nothrow) ibv_pd{};
    if (!pd) {
        control(ctx).call<ipc::Op::DeallocPd>({r.handle, 0});
        return fail<ibv_pd>(ENOMEM);
    }
    pd->context = ctx;
    pd->handle = r.handle;
    return pd;
}

VERBS_EXPORT int ibv_dealloc_pd(ibv_pd* pd) {
    if (int err = control(pd->context).call<ipc::Op::DeallocPd>({pd->handle, 0})) return err;
    delete pd;
    return 0;
}

// Importing objects needs another process's kernel context fd: not supported.
VERBS_EXPORT ibv_pd* ibv_import_pd(ibv_context*, uint32_t) { return fail<ibv_pd>(EOPNOTSUPP); }
VERBS_EXPORT void ibv_unimport_pd(ibv_pd*) {}
