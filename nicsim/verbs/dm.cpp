// Device memory: NIC memory the app reaches by mapping it (ibv_memcpy_to/from_dm) and the NIC
// reaches by DMA on its own mapping, through MRs registered on it (ibv_reg_dm_mr).
#include "dma/process_memory.h"
#include "emu/access_flags.h"
#include "nic/device_limits.h"
#include "verbs.h"

#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

namespace nicsim {

int alloc_dm(VerbContext& c, const ipc::AllocDmReq& q, ipc::AllocDmReply& r) {
    // As mlx5: no comp_mask bits are defined; a length over max_dm_size is EINVAL, one that
    // does not fit in what is left is ENOMEM.
    if (q.comp_mask || q.length == 0 || q.length > limits::kMaxDmSize) return EINVAL;
    if (q.log_align_req > limits::kMaxDmLogAlign) return EINVAL;
    if (q.length > limits::kMaxDmSize - c.nic.totals().dm_bytes) return ENOMEM;
    uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    uint64_t bytes = (q.length + page - 1) / page * page;
    auto dm = std::make_unique<Dm>();
    UniqueFd fd;
    if (int err = SharedMemory::create("rdmaemu-dm", bytes, dm->memory, fd)) return err;
    dm->length = q.length;
    dm->memfd.reset(::fcntl(fd.get(), F_DUPFD_CLOEXEC, 0));
    if (!dm->memfd) return errno;
    Dm& d = c.objects.dms.add(std::move(dm));
    c.nic.totals().dm_bytes += d.length;
    c.pass_fds.push_back(std::move(fd));
    r.handle = d.handle;
    r.map_bytes = bytes;
    c.log.debug("{} dm#{} allocated: {} bytes", c.prefix, d.handle, d.length);
    return 0;
}

void free_dm(Nic& nic, SessionObjects& objs, Dm& dm) {
    nic.totals().dm_bytes -= dm.length;
    objs.dms.erase(dm.handle);
}

int dealloc_dm(VerbContext& c, const ipc::HandleReq& q, ipc::Empty&) {
    static constexpr DestroyRule<Dm> rule{"DM", &Dm::users, "MR(s) registered on it", "dm",
                                          "freed"};
    return destroy_unheld(c, c.objects.dms, q.handle, rule,
                          [&](Dm& dm) { free_dm(c.nic, c.objects, dm); });
}

int reg_dm_mr(VerbContext& c, const ipc::RegDmMrReq& q, ipc::RegMrReply& r) {
    Pd* pd = c.objects.pds.get(q.pd);
    Dm* dm = c.objects.dms.get(q.dm);
    if (!pd || !dm) return EINVAL;
    // The kernel's ib_uverbs_reg_dm_mr: zero-based only (the app has no address for it), and
    // the range inside the DM; an empty one is allowed.
    if (!(q.access & IBV_ACCESS_ZERO_BASED)) return EINVAL;
    if (int err = emu::check_mr_access(q.access)) return err;
    if (q.dm_offset > dm->length || q.length > dm->length - q.dm_offset) return EINVAL;
    if (c.nic.totals().mr >= limits::kMaxMr) return ENOMEM;
    if (int err = over_share(c, emu::Share::Mr)) return err;
    auto mr = std::make_unique<Mr>();
    mr->pd = pd;
    mr->dm = dm;
    mr->pid = c.pid;
    // The NIC reaches it in its own mapping, through its own memory like any app's.
    mr->memory = ProcessMemory::nic();
    mr->addr = reinterpret_cast<uint64_t>(dm->memory.data()) + q.dm_offset;
    mr->length = q.length;
    mr->iova = 0;
    mr->access = q.access;
    Mr& m = c.objects.mrs.add(std::move(mr));
    c.nic.register_mr(m);
    ++pd->users;
    ++dm->users;
    ++c.nic.totals().mr;
    c.nic.shares().charge(emu::Share::Mr, m.pid);
    r.handle = m.handle;
    r.lkey = m.lkey;
    r.rkey = m.rkey;
    c.log.debug("{} mr#{} registered on dm#{}: offset {} len {} access {:#x} lkey {:#x} rkey "
                "{:#x}",
                c.prefix, m.handle, dm->handle, q.dm_offset, m.length, m.access, m.lkey, m.rkey);
    return 0;
}

} // namespace nicsim
