// The one consumer of receive queues (a QP's RQ, an SRQ, a WQ), for RC/UC/XRC, UD and raw
// packet QPs alike: take the next receive WQE and check its buffers, or take them all to flush.
#pragma once

#include "memory_access.h"
#include "objects/objects.h"
#include "objects/qp_transport.h"
#include "transport_env.h"

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>
#include <vector>

namespace nicsim {

// Where a receive comes from and completes: a QP's RQ or SRQ, an RSS QP's WQ, or the XRC SRQ
// a message names.
struct RecvTarget {
    Ring* ring = nullptr;   // nullptr: no receive queue (an XRC_SEND QP, a vanished XRC SRQ)
    Srq* srq = nullptr;     // the SRQ `ring` belongs to, for its limit event
    const Pd* pd = nullptr; // the receive buffers' PD (an SRQ's own, which may not be the QP's)
    uint32_t max_sge = 0;
    Cq* cq = nullptr;
    uint32_t qp_num = 0; // what the completion names: the QP's number, or the WQ's
};

// Takes the next receive WQE of `t` into `out` (the slot is free for the app again, and an
// SRQ's limit is checked) and resolves its buffers for writing into *status: SUCCESS;
// LOC_LEN_ERR, more SGEs than the queue allows; or resolve_local's status for a buffer outside
// its MR, keys or rights. *why (when given) says which. False when no receive is posted.
bool take_recv(TransportEnv& env, const RecvTarget& t, RecvBuffers& out, ibv_wc_status* status,
               std::string* why = nullptr);

// Takes every receive WQE still posted on `ring` and returns their wr_ids, oldest first. The
// slots are free before the caller posts the flush completions: an app that polls one may
// post again at once.
std::vector<uint64_t> drain_recvs(Ring& ring);

} // namespace nicsim
