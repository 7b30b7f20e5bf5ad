// Device memory: the NIC's memory, mapped here, so ibv_memcpy_to/from_dm are plain copies.
#include "backends/emulated/dead_nic.h"
#include "backends/emulated/emu_objects.h"
#include "backends/emulated/emulated_verbs.h"
#include "backends/emulated/ops.h"

#include <cerrno>
#include <cstring>
#include <new>

using namespace verbs;
namespace ipc = emu::ipc;

namespace {

struct EmuDm {
    ibv_dm dm;
    uint64_t length = 0;
    Mapping memory;
};

EmuDm* emu_dm(ibv_dm* dm) {
    return reinterpret_cast<EmuDm*>(dm);
}

// mlx5's checks: the range inside the DM (EFAULT), offset and length multiples of 4 (EINVAL),
// since device memory is accessed in 4-byte words.
int check_access(const EmuDm& dm, uint64_t offset, size_t length) {
    if (offset > dm.length || length > dm.length - offset) return EFAULT;
    if ((offset & 3) || (length & 3)) return EINVAL;
    return 0;
}

int memcpy_to_dm(ibv_dm* dm, uint64_t offset, const void* host, size_t length) {
    EmuDm& d = *emu_dm(dm);
    if (int err = check_access(d, offset, length)) return err;
    if (length) std::memcpy(static_cast<char*>(d.memory.data) + offset, host, length);
    return 0;
}

int memcpy_from_dm(void* host, ibv_dm* dm, uint64_t offset, size_t length) {
    EmuDm& d = *emu_dm(dm);
    if (int err = check_access(d, offset, length)) return err;
    if (length) std::memcpy(host, static_cast<char*>(d.memory.data) + offset, length);
    return 0;
}

// The app's side of DM `handle`: the NIC's memfd in `fds`, mapped. nullptr and err on failure.
ibv_dm* map_dm(ibv_context* ctx, uint32_t handle, uint64_t length, uint64_t map_bytes,
               ipc::PassedFds& fds, int& err) {
    auto* dm = new (std::nothrow) EmuDm{};
    err = dm ? dm->memory.map_reply(fds, map_bytes) : ENOMEM;
    if (err) {
        fds.close_all();
        delete dm;
        return nullptr;
    }
    dm->length = length;
    dm->dm.context = ctx;
    dm->dm.memcpy_to_dm = memcpy_to_dm;
    dm->dm.memcpy_from_dm = memcpy_from_dm;
    dm->dm.handle = handle;
    return &dm->dm;
}

} // namespace

namespace verbs {

ibv_dm* alloc_dm(ibv_context* ctx, ibv_alloc_dm_attr* attr) {
    ipc::AllocDmReply r{};
    ipc::PassedFds fds;
    ipc::AllocDmReq req{attr->length, attr->log_align_req, attr->comp_mask};
    if (int err = control(ctx).call<ipc::Op::AllocDm>(req, r, &fds)) return fail<ibv_dm>(err);
    int err = 0;
    ibv_dm* dm = map_dm(ctx, r.handle, attr->length, r.map_bytes, fds, err);
    if (!dm) {
        control(ctx).call<ipc::Op::FreeDm>({r.handle, 0});
        return fail<ibv_dm>(err);
    }
    return dm;
}

int free_dm(ibv_dm* dm) {
    // EBUSY while MRs are registered on it; the DM then stays usable.
    if (int err = control(dm->context).call<ipc::Op::FreeDm>({dm->handle, 0});
        err && !destroyed_with_nic(dm->context, err))
        return destroy_refused(err);
    delete emu_dm(dm);
    return 0;
}

ibv_mr* reg_dm_mr(ibv_pd* pd, ibv_dm* dm, uint64_t dm_offset, size_t length, unsigned int access) {
    // As ibv_cmd_reg_dm_mr: DM MRs are zero-based, the app has no address for the memory.
    if (!(access & IBV_ACCESS_ZERO_BASED)) return fail<ibv_mr>(EINVAL);
    ipc::RegDmMrReq req{pd->handle, dm->handle, access, 0, dm_offset, length};
    ipc::RegMrReply r{};
    if (int err = control(pd->context).call<ipc::Op::RegDmMr>(req, r)) return fail<ibv_mr>(err);
    return wrap_mr(pd, r, nullptr, length); // released by ibv_dereg_mr, as any MR
}

} // namespace verbs

// A DM of this context's session, for a context made by ibv_import_device: the same NIC memory,
// mapped again. Unimporting unmaps it here only; the DM lives on until ibv_free_dm.
ibv_dm* emulated::ibv_import_dm(ibv_context* ctx, uint32_t handle) {
    ipc::ImportObjectReply r{};
    ipc::PassedFds fds;
    ipc::ImportObjectReq req{static_cast<uint32_t>(ipc::ImportType::Dm), handle};
    if (int err = control(ctx).call<ipc::Op::ImportObject>(req, r, &fds)) return fail<ibv_dm>(err);
    int err = 0;
    ibv_dm* dm = map_dm(ctx, handle, r.length, r.map_bytes, fds, err);
    return dm ? dm : fail<ibv_dm>(err);
}

void emulated::ibv_unimport_dm(ibv_dm* dm) {
    delete emu_dm(dm);
}
