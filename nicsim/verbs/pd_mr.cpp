#include "dma/mapped_memory.h"
#include "emu/access_flags.h"
#include "nic/device_limits.h"
#include "verbs.h"

#include <cerrno>
#include <cstring>
#include <unistd.h>

namespace nicsim {

int alloc_pd(VerbContext& c, const ipc::Empty&, ipc::HandleReply& r) {
    if (c.nic.totals().pd >= limits::kMaxPd) return ENOMEM;
    r.handle = c.objects.pds.add(std::make_unique<Pd>()).handle;
    ++c.nic.totals().pd;
    c.log.debug("{} pd#{} allocated", c.prefix, r.handle);
    return 0;
}

void free_pd(Nic& nic, SessionObjects& objs, Pd& pd) {
    --nic.totals().pd;
    objs.pds.erase(pd.handle);
}

int dealloc_pd(VerbContext& c, const ipc::HandleReq& q, ipc::Empty&) {
    static constexpr DestroyRule<Pd> rule{"PD", &Pd::users, "MR(s), MW(s), QP(s), SRQ(s) or AH(s)",
                                          "pd", "deallocated"};
    return destroy_unheld(c, c.objects.pds, q.handle, rule,
                          [&](Pd& pd) { free_pd(c.nic, c.objects, pd); });
}

namespace {

// The range checks of the kernel's ib_umem_get: within max_mr_size, no wrap-around, and at
// least one page to pin: a zero-length MR registers where its address lies inside a page (the
// kernel pins that page: ALIGN(addr) - ALIGN_DOWN(addr) is one page, as with mlx5 and rxe,
// which both pin through ib_umem_get) and is EINVAL at a page boundary (no page). Or an
// implicit on-demand MR: address 0, length SIZE_MAX, the whole address space.
int check_range(uint64_t addr, uint64_t length, uint32_t access) {
    if ((access & IBV_ACCESS_ON_DEMAND) && addr == 0 && length == UINT64_MAX) return 0;
    if (length > limits::kMaxMrSize) return EINVAL;
    if (addr + length < addr) return EINVAL;
    const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    if (length == 0 && addr % page == 0) return EINVAL;
    return 0;
}

} // namespace

namespace {

// The memory the sender of this request handed to the NIC; nullptr (and why, in the log) when
// it never did: a client that is not rdmaemu's libibverbs.
std::shared_ptr<Memory> caller_memory(VerbContext& c) {
    std::shared_ptr<Memory> m = c.objects.memories.of(c.pid);
    if (!m)
        c.log.warn("{} pid {} asked for memory access without handing its memory to the NIC "
                   "(its /proc/self/mem, sent by rdmaemu's libibverbs): EFAULT",
                   c.prefix, c.pid);
    return m;
}

// What an MR over [addr, addr + length) reaches: the caller's memory, with in front of it a
// mapping of the whole pages the library shared (the request's memfd), where it did. Null when
// the caller never handed its memory over.
std::shared_ptr<Memory> mr_memory(VerbContext& c, uint64_t addr, uint64_t length,
                                  const ipc::SharedPages& pages) {
    std::shared_ptr<Memory> process = caller_memory(c);
    if (!process || pages.length == 0) return process;
    const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    const char* refused = nullptr;
    if (c.request_fds.size() != 1)
        refused = "the request carries no memfd";
    else if (pages.start < addr || pages.length > length ||
             pages.start - addr > length - pages.length)
        refused = "the pages are not inside the MR";
    else if ((pages.start | pages.length | pages.offset) % page)
        refused = "not whole pages";
    int err = 0;
    std::shared_ptr<Memory> mapped;
    if (!refused) {
        mapped = MappedMemory::map(c.request_fds[0].get(), pages.offset, pages.start, pages.length,
                                   process, &err);
        if (!mapped)
            refused =
                err == EPERM ? "the memfd is not sealed against shrinking" : std::strerror(err);
    }
    if (refused) {
        c.log.warn("{} the shared pages of the MR at {:#x} are not used ({}): the NIC reaches them "
                   "through the process's memory",
                   c.prefix, addr, refused);
        return process;
    }
    return mapped;
}

} // namespace

int reg_mr(VerbContext& c, const ipc::RegMrReq& q, ipc::RegMrReply& r) {
    Pd* pd = c.objects.pds.get(q.pd);
    if (!pd) return EINVAL;
    if (int err = emu::check_mr_access(q.access)) return err;
    if (int err = check_range(q.addr, q.length, q.access)) return err;
    if (c.nic.totals().mr >= limits::kMaxMr) return ENOMEM;
    if (int err = over_share(c, emu::Share::Mr)) return err;
    std::shared_ptr<Memory> memory = mr_memory(c, q.addr, q.length, q.shared);
    if (!memory) return EFAULT;
    auto mr = std::make_unique<Mr>();
    mr->pd = pd;
    mr->memory = std::move(memory);
    mr->addr = q.addr;
    mr->length = q.length;
    mr->iova = q.iova;
    mr->access = q.access;
    mr->pid = c.pid;
    Mr& m = c.objects.mrs.add(std::move(mr));
    c.nic.register_mr(m);
    ++pd->users;
    ++c.nic.totals().mr;
    c.nic.shares().charge(emu::Share::Mr, m.pid);
    r.handle = m.handle;
    r.lkey = m.lkey;
    r.rkey = m.rkey;
    c.log.debug("{} mr#{} registered: addr {:#x} len {} iova {:#x} access {:#x} lkey {:#x} rkey "
                "{:#x} ({} memory)",
                c.prefix, m.handle, m.addr, m.length, m.iova, m.access, m.lkey, m.rkey,
                m.memory->engine());
    return 0;
}

int rereg_mr(VerbContext& c, const ipc::ReregMrReq& q, ipc::ReregMrReply& r) {
    Mr* mr = c.objects.mrs.get(q.mr);
    if (!mr || mr->dm) return EINVAL; // as ib_uverbs_rereg_mr: not an MR on device memory
    constexpr uint32_t known =
        IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_PD | IBV_REREG_MR_CHANGE_ACCESS;
    if (q.flags == 0 || (q.flags & ~known)) return EINVAL;
    Pd* pd = mr->pd;
    if (q.flags & IBV_REREG_MR_CHANGE_PD) {
        pd = c.objects.pds.get(q.pd);
        if (!pd) return EINVAL;
    }
    if ((q.flags & IBV_REREG_MR_CHANGE_ACCESS))
        if (int err = emu::check_mr_access(q.access)) return err;
    std::shared_ptr<Memory> memory = mr->memory;
    if ((q.flags & IBV_REREG_MR_CHANGE_TRANSLATION)) {
        if (int err = check_range(q.addr, q.length, q.access)) return err;
        // The new range is in the caller's memory (another process, after an import).
        if (!(memory = mr_memory(c, q.addr, q.length, q.shared))) return EFAULT;
    }
    // All checks passed: apply. Keys stay the same, as rxe and mlx5 keep them.
    if (q.flags & IBV_REREG_MR_CHANGE_PD) {
        --mr->pd->users;
        ++pd->users;
        mr->pd = pd;
    }
    if (q.flags & IBV_REREG_MR_CHANGE_ACCESS) mr->access = q.access;
    if (q.flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
        mr->memory = std::move(memory);
        mr->addr = q.addr;
        mr->length = q.length;
        mr->iova = q.iova;
    }
    r.lkey = mr->lkey;
    r.rkey = mr->rkey;
    c.log.debug("{} mr#{} re-registered (flags {:#x})", c.prefix, mr->handle, q.flags);
    return 0;
}

void free_mr(Nic& nic, SessionObjects& objs, Mr& mr) {
    nic.unregister_mr(mr);
    --mr.pd->users;
    if (mr.dm) --mr.dm->users;
    --nic.totals().mr;
    nic.shares().release(emu::Share::Mr, mr.pid);
    objs.mrs.erase(mr.handle);
}

int dereg_mr(VerbContext& c, const ipc::HandleReq& q, ipc::Empty&) {
    static constexpr DestroyRule<Mr> rule{"MR", &Mr::windows, "memory window(s) bound to it", "mr",
                                          "deregistered"};
    return destroy_unheld(c, c.objects.mrs, q.handle, rule,
                          [&](Mr& mr) { free_mr(c.nic, c.objects, mr); });
}

} // namespace nicsim
