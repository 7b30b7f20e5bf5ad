// Checks of every memory access the NIC makes, before a byte moves: the key names a live MR
// of the QP's PD, the range lies inside the MR, and the MR grants the access (IBA 10.6.3).
#pragma once

#include "dma/dma_engine.h"
#include "emu/ipc/rings.h"

#include <cstdint>
#include <vector>

namespace nicsim {

class Nic;
struct Mr;
struct Pd;
struct Qp;

// Resolves local SGEs (lkeys) into segments of their MRs' memory. `need` is the access the
// operation requires of each MR (IBV_ACCESS_LOCAL_WRITE where the NIC writes into the buffer,
// 0 to read it). Returns IBV_WC_SUCCESS or IBV_WC_LOC_PROT_ERR.
ibv_wc_status resolve_local(const Nic& nic, const Pd* pd, const emu::ipc::Sge* sges, uint32_t n,
                            uint32_t need, std::vector<DmaSegment>& out, uint64_t* total);

// The MR an rkey names — directly, or through a memory window bound to it — if a request of QP
// `qpn` in protection domain `pd` (the QP's, or for an XRC target the named XRC SRQ's) may
// access [va, va + len) with `need` (one of IBV_ACCESS_REMOTE_WRITE/READ/ATOMIC); nullptr
// otherwise.
Mr* check_remote(const Nic& nic, const Pd* pd, uint32_t qpn, uint32_t rkey, uint64_t va,
                 uint64_t len, uint32_t need);

// The address in the owner's memory of remote address `va` of `mr`.
uint64_t mr_address(const Mr& mr, uint64_t va);

} // namespace nicsim
