// Memory registration. The NIC keeps the keys and checks every access against them.
#include "backends/emulated/dead_nic.h"
#include "backends/emulated/emu_objects.h"
#include "backends/emulated/emulated_verbs.h"
#include "backends/emulated/mr_pages.h"
#include "backends/emulated/ops.h"
#include "backends/emulated/shared_pages.h"
#include "verbs_log.h"

#include <cerrno>
#include <cstdint>
#include <new>
#include <string>

using namespace verbs;
namespace ipc = emu::ipc;

namespace {

// EFAULT, with the reason in the verbs log, when the kernel could not pin the MR's pages
// (mr_pages.h); else 0.
int pages_missing(const char* verb, void* addr, size_t length, unsigned access) {
    std::string why;
    int err = check_mr_pages(addr, length, access, why);
    if (err)
        log(LogLevel::Error, "rdmaemu: %s(addr %p, length %zu, access %#x): EFAULT: %s\n", verb,
            addr, length, access, why.c_str());
    return err;
}

} // namespace

namespace verbs {

ibv_mr* wrap_mr(ibv_pd* pd, const ipc::RegMrReply& r, void* addr, size_t length,
                uint64_t shared_region) {
    auto* m = new (std::nothrow) EmuMr{};
    if (!m) {
        control(pd->context).call<ipc::Op::DeregMr>({r.handle, 0});
        release_pages(shared_region);
        return fail<ibv_mr>(ENOMEM);
    }
    m->shared_region = shared_region;
    ibv_mr* mr = &m->mr;
    mr->context = pd->context;
    mr->pd = pd;
    mr->addr = addr;
    mr->length = length;
    mr->handle = r.handle;
    mr->lkey = r.lkey;
    mr->rkey = r.rkey;
    return mr;
}

} // namespace verbs

ibv_mr* emulated::ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova,
                                   unsigned int access) {
    // Optional bits (e.g. RELAXED_ORDERING) are hints a device may ignore: drop them, as
    // rdma-core does for devices that don't support them.
    access &= ~static_cast<unsigned int>(IBV_ACCESS_OPTIONAL_RANGE);
    if (int err = pages_missing("ibv_reg_mr", addr, length, access)) return fail<ibv_mr>(err);
    PageShare share = share_pages(addr, length, access);
    ipc::RegMrReq req{pd->handle, access, reinterpret_cast<uintptr_t>(addr),
                      length,     iova,   share.pages};
    ipc::RegMrReply r{};
    if (int err = control(pd->context).call<ipc::Op::RegMr>(req, r, nullptr, share.memfd)) {
        release_pages(share.region);
        return fail<ibv_mr>(err);
    }
    ibv_mr* mr = wrap_mr(pd, r, addr, length, share.region);
    if (mr) emu_mr(mr)->access = access;
    return mr;
}

// Older binaries call these by name; newer ones reach ibv_reg_mr_iova2 through the header.
ibv_mr*(emulated::ibv_reg_mr)(ibv_pd* pd, void* addr, size_t length, int access) {
    return emulated::ibv_reg_mr_iova2(pd, addr, length, reinterpret_cast<uintptr_t>(addr),
                                      static_cast<unsigned int>(access));
}

ibv_mr*(emulated::ibv_reg_mr_iova)(ibv_pd* pd, void* addr, size_t length, uint64_t iova,
                                   int access) {
    return emulated::ibv_reg_mr_iova2(pd, addr, length, iova, static_cast<unsigned int>(access));
}

int emulated::ibv_rereg_mr(ibv_mr* mr, int flags, ibv_pd* pd, void* addr, size_t length,
                           int access) {
    // rdma-core's own input checks; flags == 0 goes on to the NIC, which rejects it (ERR_CMD).
    bool bad_input = (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED) ||
                     ((flags & IBV_REREG_MR_CHANGE_PD) && !pd) ||
                     ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (!addr || !length)) ||
                     (!(flags & IBV_REREG_MR_CHANGE_ACCESS) && access);
    if (bad_input) {
        errno = EINVAL;
        return IBV_REREG_MR_ERR_INPUT;
    }
    unsigned int acc = static_cast<unsigned int>(access) & ~IBV_ACCESS_OPTIONAL_RANGE;
    uint64_t va = reinterpret_cast<uintptr_t>(addr);
    PageShare share;
    if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
        unsigned int new_access = (flags & IBV_REREG_MR_CHANGE_ACCESS) ? acc : emu_mr(mr)->access;
        if (int err = pages_missing("ibv_rereg_mr", addr, length, new_access)) {
            errno = err;
            return IBV_REREG_MR_ERR_CMD;
        }
        share = share_pages(addr, length, new_access);
    }
    ipc::ReregMrReq req{mr->handle,
                        static_cast<uint32_t>(flags),
                        (flags & IBV_REREG_MR_CHANGE_PD) ? pd->handle : 0,
                        acc,
                        va,
                        length,
                        va,
                        share.pages};
    ipc::ReregMrReply r{};
    if (int err = control(mr->context).call<ipc::Op::ReregMr>(req, r, nullptr, share.memfd)) {
        release_pages(share.region);
        errno = err;
        return IBV_REREG_MR_ERR_CMD;
    }
    if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
        release_pages(emu_mr(mr)->shared_region);
        emu_mr(mr)->shared_region = share.region;
    }
    if (flags & IBV_REREG_MR_CHANGE_PD) mr->pd = pd;
    if (flags & IBV_REREG_MR_CHANGE_ACCESS) emu_mr(mr)->access = acc;
    if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
        mr->addr = addr;
        mr->length = length;
    }
    mr->lkey = r.lkey;
    mr->rkey = r.rkey;
    return 0;
}

int emulated::ibv_dereg_mr(ibv_mr* mr) {
    if (int err = control(mr->context).call<ipc::Op::DeregMr>({mr->handle, 0});
        err && !destroyed_with_nic(mr->context, err))
        return destroy_refused(err);
    release_pages(emu_mr(mr)->shared_region);
    delete emu_mr(mr);
    return 0;
}

// dma-buf needs a kernel exporter (a GPU driver).
ibv_mr* emulated::ibv_reg_dmabuf_mr(ibv_pd*, uint64_t, size_t, uint64_t, int, int) {
    return fail<ibv_mr>(EOPNOTSUPP);
}

// An MR of this context's session, for a context made by ibv_import_device. As in rdma-core
// the importer learns keys, length and rights but no address (addr is NULL). Unimporting frees
// only this struct; the registration lives on until ibv_dereg_mr.
ibv_mr* emulated::ibv_import_mr(ibv_pd* pd, uint32_t handle) {
    ipc::ImportObjectReply r{};
    ipc::ImportObjectReq req{static_cast<uint32_t>(ipc::ImportType::Mr), handle};
    if (int err = control(pd->context).call<ipc::Op::ImportObject>(req, r))
        return fail<ibv_mr>(err);
    auto* m = new (std::nothrow) EmuMr{};
    if (!m) return fail<ibv_mr>(ENOMEM);
    ibv_mr* mr = &m->mr;
    mr->context = pd->context;
    mr->pd = pd;
    mr->length = r.length;
    mr->handle = handle;
    mr->lkey = r.lkey;
    mr->rkey = r.rkey;
    return mr;
}

void emulated::ibv_unimport_mr(ibv_mr* mr) {
    delete emu_mr(mr);
}

namespace verbs {

// Prefetching has nothing to do: the NIC touches pages only when it moves data (see the ODP
// caps). The arguments are still checked as the kernel does.
int advise_mr(ibv_pd*, ibv_advise_mr_advice advice, uint32_t flags, ibv_sge* sg_list,
              uint32_t num_sge) {
    if (advice != IBV_ADVISE_MR_ADVICE_PREFETCH && advice != IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
        advice != IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
        return EOPNOTSUPP;
    if ((flags & ~uint32_t(IBV_ADVISE_MR_FLAG_FLUSH)) || !sg_list || num_sge == 0) return EINVAL;
    return 0;
}

} // namespace verbs
