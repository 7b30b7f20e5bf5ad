// Protection domains, thread domains and parent domains.
#include "backends/emulated/dead_nic.h"
#include "backends/emulated/emu_objects.h"
#include "backends/emulated/emulated_verbs.h"
#include "backends/emulated/ops.h"

#include <atomic>
#include <cerrno>
#include <new>

using namespace verbs;
namespace ipc = emu::ipc;

namespace {

// A parent domain is a PD as far as the NIC is concerned: it carries the handle of the PD it
// was made from (rdma-core's ibv_alloc_parent_domain), plus a thread domain and allocator
// hooks. The NIC allocates queue memory itself, so the hooks are kept but never called.
struct EmuPd {
    ibv_pd pd;
    EmuPd* parent_of = nullptr; // the PD this parent domain stands for
    ibv_td* td = nullptr;
    std::atomic<int> parent_domains{0}; // parent domains made from this PD
};

struct EmuTd {
    ibv_td td;
    std::atomic<int> users{0};
};

EmuPd* emu_pd(ibv_pd* pd) {
    return reinterpret_cast<EmuPd*>(pd);
}

} // namespace

ibv_pd* emulated::ibv_alloc_pd(ibv_context* ctx) {
    ipc::HandleReply r{};
    if (int err = control(ctx).call<ipc::Op::AllocPd>({}, r)) return fail<ibv_pd>(err);
    auto* pd = new (std::nothrow) EmuPd{};
    if (!pd) {
        control(ctx).call<ipc::Op::DeallocPd>({r.handle, 0});
        return fail<ibv_pd>(ENOMEM);
    }
    pd->pd.context = ctx;
    pd->pd.handle = r.handle;
    return &pd->pd;
}

int emulated::ibv_dealloc_pd(ibv_pd* pd) {
    EmuPd* p = emu_pd(pd);
    if (p->parent_of) {
        --p->parent_of->parent_domains;
        if (p->td) --reinterpret_cast<EmuTd*>(p->td)->users;
        delete p;
        return 0;
    }
    if (p->parent_domains) return destroy_refused(EBUSY);
    if (int err = control(pd->context).call<ipc::Op::DeallocPd>({pd->handle, 0});
        err && !destroyed_with_nic(pd->context, err))
        return destroy_refused(err);
    delete p;
    return 0;
}

namespace verbs {

ibv_td* alloc_td(ibv_context* ctx, ibv_td_init_attr* attr) {
    if (attr->comp_mask) return fail<ibv_td>(EINVAL);
    auto* td = new (std::nothrow) EmuTd{};
    if (!td) return fail<ibv_td>(ENOMEM);
    td->td.context = ctx;
    return &td->td;
}

int dealloc_td(ibv_td* td) {
    auto* t = reinterpret_cast<EmuTd*>(td);
    if (t->users) return destroy_refused(EBUSY);
    delete t;
    return 0;
}

ibv_pd* alloc_parent_domain(ibv_context* ctx, ibv_parent_domain_init_attr* attr) {
    constexpr uint32_t known =
        IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
    if (!attr->pd || (attr->comp_mask & ~known)) return fail<ibv_pd>(EINVAL);
    if ((attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) && (!attr->alloc || !attr->free))
        return fail<ibv_pd>(EINVAL);
    EmuPd* base = emu_pd(attr->pd);
    if (base->parent_of) return fail<ibv_pd>(EINVAL); // not a parent domain of a parent domain
    auto* pd = new (std::nothrow) EmuPd{};
    if (!pd) return fail<ibv_pd>(ENOMEM);
    pd->pd.context = ctx;
    pd->pd.handle = attr->pd->handle;
    pd->parent_of = base;
    pd->td = attr->td;
    ++base->parent_domains;
    if (attr->td) ++reinterpret_cast<EmuTd*>(attr->td)->users;
    return &pd->pd;
}

} // namespace verbs

// A PD of this context's session, for a context made by ibv_import_device. Unimporting frees
// only this struct; the PD lives on until ibv_dealloc_pd.
ibv_pd* emulated::ibv_import_pd(ibv_context* ctx, uint32_t handle) {
    ipc::ImportObjectReply r{};
    ipc::ImportObjectReq req{static_cast<uint32_t>(ipc::ImportType::Pd), handle};
    if (int err = control(ctx).call<ipc::Op::ImportObject>(req, r)) return fail<ibv_pd>(err);
    auto* pd = new (std::nothrow) EmuPd{};
    if (!pd) return fail<ibv_pd>(ENOMEM);
    pd->pd.context = ctx;
    pd->pd.handle = handle;
    return &pd->pd;
}

void emulated::ibv_unimport_pd(ibv_pd* pd) {
    delete emu_pd(pd);
}
