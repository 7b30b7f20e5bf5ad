// Memory windows (IBA 10.6.7): binding through the send queue, invalidation locally (LOCAL_INV)
// and by the peer (SEND_WITH_INV).
#pragma once

#include "emu/ipc/rings.h"

#include <infiniband/verbs.h>

#include <cstdint>

namespace nicsim {

class Nic;
struct Mw;
struct Pd;
struct Qp;

// Executes a BIND_MW work request of `qp` (fields as emu::ipc::SendWqe documents them).
ibv_wc_status bind_window(Nic& nic, Qp& qp, const emu::ipc::SendWqe& w);
// LOCAL_INV: a type 2 window of the QP's PD, bound through this QP, stops granting access.
ibv_wc_status invalidate_local(Nic& nic, Qp& qp, uint32_t rkey);
// SEND_WITH_INV's invalidation at the responder QP `qpn`, whose requests use `pd` (the QP's,
// or an XRC SRQ's); false when `rkey` may not be invalidated.
bool invalidate_remote(Nic& nic, const Pd* pd, uint32_t qpn, uint32_t rkey);
void unbind_window(Mw& mw);

} // namespace nicsim
