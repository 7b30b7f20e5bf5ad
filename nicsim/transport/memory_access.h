// Checks of every memory access the NIC makes, before a byte moves: the key names a live MR
// of the QP's PD, the range lies inside the MR, and the MR grants the access (IBA 10.6.3).
// A refused access can then be explained (access_faults.cpp): which rule, which key, which
// range against the MR's.
#pragma once

#include "dma/dma_engine.h"
#include "emu/ipc/rings.h"

#include <cstdint>
#include <string>
#include <vector>

namespace nicsim {

class Nic;
struct Mr;
struct Mw;
struct Pd;
struct Qp;

// The rule an access broke.
enum class AccessFault : uint8_t {
    None,
    NoPd,          // nothing to check against (an XRC request for an SRQ that is gone)
    UnknownKey,    // the key names no MR (nor window)
    OtherPd,       // the MR or window belongs to another protection domain
    NoRight,       // the MR or window does not grant the access
    OutOfRange,    // the range is not inside the MR or window
    WindowUnbound, // the window is bound to no MR
    WindowOtherQp, // a type 2 window bound through another QP (IBA 10.6.7.2)
};

// What a key check found: the MR (and the window it went through), or the rule broken.
struct KeyCheck {
    Mr* mr = nullptr;
    const Mw* mw = nullptr;
    AccessFault fault = AccessFault::None;
    // Where the access starts in the MR's iova space: the request's address, or for a
    // zero-based window the window's start plus that offset.
    uint64_t va = 0;
};

// One local SGE against its MR: `need` as for resolve_local.
KeyCheck check_local(const Nic& nic, const Pd* pd, const emu::ipc::Sge& sge, uint32_t need);

// Resolves local SGEs (lkeys) into segments of their MRs' memory. `need` is the access the
// operation requires of each MR (IBV_ACCESS_LOCAL_WRITE where the NIC writes into the buffer,
// 0 to read it). Returns IBV_WC_SUCCESS or IBV_WC_LOC_PROT_ERR.
ibv_wc_status resolve_local(const Nic& nic, const Pd* pd, const emu::ipc::Sge* sges, uint32_t n,
                            uint32_t need, std::vector<DmaSegment>& out, uint64_t* total);

// An rkey and the range a request of QP `qpn` in protection domain `pd` (the QP's, or for an
// XRC target the named XRC SRQ's) wants to access with `need` (one of
// IBV_ACCESS_REMOTE_WRITE/READ/ATOMIC).
struct RemoteAccess {
    const Pd* pd;
    uint32_t qpn;
    uint32_t rkey;
    uint64_t va, len;
    uint32_t need;
};

// The MR the rkey names — directly, or through a memory window bound to it — if the access is
// allowed; else the rule it breaks.
KeyCheck check_remote(const Nic& nic, const RemoteAccess& a);

// The same, for the callers that only need the MR: nullptr when refused.
inline Mr* remote_mr(const Nic& nic, const RemoteAccess& a) {
    return check_remote(nic, a).mr;
}

// The address in the owner's memory of remote address `va` of `mr`.
uint64_t mr_address(const Mr& mr, uint64_t va);

// The `len` bytes of an access check_remote allowed, in the owner's memory.
DmaSegment remote_segment(const KeyCheck& c, uint64_t len);

// --- explanations (access_faults.cpp), built only for a refused access ---

// Why a refused access was refused, and what would have been valid. `hint` names the keys of
// the protection domain: shown to the MR's owner, passed on to a remote requester only where
// the owner allows it (diag/peer_reasons.h).
struct Explanation {
    std::string what; // "rkey 0xd53a826c names no MR"
    std::string hint; // "the QP's PD has rkeys 0xd53a836c (mr#2, 4096 bytes at 0x7f...)"
    std::string text() const { return hint.empty() ? what : what + "; " + hint; }
};
Explanation explain_remote(const Nic& nic, const RemoteAccess& a);
// The first of `n` local SGEs that resolve_local refuses, as "sge[i] ...".
Explanation explain_local(const Nic& nic, const Pd* pd, const emu::ipc::Sge* sges, uint32_t n,
                          uint32_t need);

} // namespace nicsim
