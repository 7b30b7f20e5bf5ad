#include "emu/access_flags.h"

#include "emu/verbs_names.h"

#include <infiniband/verbs.h>

#include <cerrno>

namespace emu {
namespace {

// Every bit of enum ibv_access_flags below the optional range (rdma-core 44), the same set as
// the kernel's IB_ACCESS_SUPPORTED minus IB_ACCESS_OPTIONAL:
// - LOCAL_WRITE, REMOTE_WRITE, REMOTE_READ, REMOTE_ATOMIC, MW_BIND: the IBA MR access rights.
// - ZERO_BASED: accepted by ib_check_mr_access on every device; user space gets a zero-based
//   MR through ibv_reg_mr_iova(iova = 0), and drivers ignore the bit for user MRs.
// - ON_DEMAND: the kernel accepts it only from devices with IBK_ON_DEMAND_PAGING. The emulated
//   NIC never pins memory: it reaches the pages when an operation runs, which is what ODP
//   promises, so the device offers it (its attributes must advertise ODP to match).
// - HUGETLB: a hint that the range is backed by huge pages; always accepted, never required.
// Not here: the kernel's FLUSH_GLOBAL / FLUSH_PERSISTENT (bits 8, 9, kernel 6.2), which
// rdma-core 44 does not define, so no ibv_reg_mr caller can mean them.
constexpr uint32_t kSupported = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
                                IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED | IBV_ACCESS_ON_DEMAND |
                                IBV_ACCESS_HUGETLB;
static_assert(kSupported == 0xFF);

// Bits 20..29 (IBV_ACCESS_RELAXED_ORDERING is the first): "optional" flags a device may
// ignore. The kernel lets all of them through (IB_ACCESS_SUPPORTED includes
// IB_ACCESS_OPTIONAL), and rdma-core strips them itself when the kernel predates them, so
// an application never sees an error for one.
constexpr uint32_t kOptional = IBV_ACCESS_OPTIONAL_RANGE;
static_assert((kSupported & kOptional) == 0);

} // namespace

uint32_t supported_mr_access() {
    return kSupported;
}

int check_mr_access(uint32_t access) {
    // Local write must come with remote write or remote atomic: the responder writes into
    // the MR for both (ibv_reg_mr(3); ib_check_mr_access). MW_BIND is not part of the rule:
    // the kernel accepts an MR with MW_BIND alone; binding a window that grants remote
    // write/atomic to an MR without local write is what fails (IBA C10-74, rxe_check_bind_mw).
    if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) != 0 &&
        (access & IBV_ACCESS_LOCAL_WRITE) == 0)
        return EINVAL;
    if ((access & ~(kSupported | kOptional)) != 0) return EINVAL;
    return 0;
}

std::string mr_access_refusal(uint32_t access) {
    if (check_mr_access(access) == 0) return {};
    if (uint32_t unknown = access & ~(kSupported | kOptional))
        return "access " + names::access_flags(access) + " has bits no verbs device knows (" +
               names::access_flags(unknown) + ")";
    return "remote write and remote atomic need IBV_ACCESS_LOCAL_WRITE too (ibv_reg_mr(3)): "
           "access is " +
           names::access_flags(access);
}

int check_qp_access(uint32_t access) {
    // A QP acts only on REMOTE_WRITE, REMOTE_READ and REMOTE_ATOMIC, but nothing on the
    // real path rejects other bits: uverbs copies qp_access_flags through unchecked,
    // ib_modify_qp_is_ok looks at the mask only, rxe stores the value as given and mlx5
    // translates the three remote bits and drops the rest. Applications rely on this
    // (LOCAL_WRITE in qp_access_flags is common in tutorials and tests), so every value is
    // accepted and the responder must look only at the remote bits.
    (void)access;
    return 0;
}

} // namespace emu
