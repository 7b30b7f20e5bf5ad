// The verbs objects the daemon owns on behalf of its sessions. `users` counts the objects that
// refer to this one, so destroying it while in use fails with EBUSY as the kernel's does.
#pragma once

#include "data/shared_memory.h"
#include "emu/ipc/rings.h"
#include "transport/qp_transport.h"
#include "unique_fd.h"

#include <infiniband/verbs.h>

#include <array>
#include <cstdint>
#include <sys/types.h>
#include <vector>

namespace nicsim {

struct SessionObjects;

// A multicast group's GID (ibv_attach_mcast), as the 16 raw bytes.
using Mgid = std::array<uint8_t, 16>;

struct Pd {
    uint32_t handle = 0;
    uint32_t users = 0;
};

// Device memory: NIC memory the app maps too (ibv_alloc_dm).
struct Dm {
    uint32_t handle = 0;
    uint32_t users = 0; // MRs on it
    uint64_t length = 0;
    SharedMemory memory;
};

struct Mr {
    uint32_t handle = 0;
    uint32_t windows = 0; // memory windows bound to it: deregistering is EBUSY meanwhile
    Pd* pd = nullptr;
    Dm* dm = nullptr; // an MR on device memory: pid is the NIC's own, addr in its mapping
    pid_t pid = 0;    // the process whose memory this is
    uint64_t addr = 0;
    uint64_t length = 0;
    uint64_t iova = 0;
    uint32_t access = 0;
    uint32_t lkey = 0;
    uint32_t rkey = 0;
};

// A memory window (IBA 10.6.7): remote access to part of an MR under its own rkey. Type 1 is
// bound by ibv_bind_mw, type 2 by a BIND_MW work request and then belongs to that QP.
struct Mw {
    uint32_t handle = 0;
    Pd* pd = nullptr;
    uint32_t type = IBV_MW_TYPE_1;
    uint32_t rkey = 0;
    Mr* mr = nullptr; // bound to this MR; nullptr: unbound
    uint64_t addr = 0, length = 0;
    uint32_t access = 0;
    uint32_t qpn = 0; // type 2: the QP it was bound through
};

struct CompChannel {
    uint32_t handle = 0;
    uint32_t users = 0;
    UniqueFd daemon_end; // completion events are written here
};

// A shared ring of `entries` slots of `entry_size` bytes; geometry kept on the NIC's side.
struct Ring {
    emu::ipc::RingHeader* header = nullptr;
    uint32_t entries = 0;
    uint32_t entry_size = 0;
    char* slot(uint32_t index) const {
        return emu::ipc::ring_slot(header, index, entries, entry_size);
    }
};

struct Cq {
    uint32_t handle = 0;
    uint32_t users = 0;
    uint32_t cqe = 0;
    CompChannel* channel = nullptr;
    int comp_vector = 0;
    SessionObjects* owner = nullptr;
    SharedMemory memory;
    Ring ring;
    bool overrun = false; // the app let it fill up: completions are being lost
};

struct Srq {
    uint32_t handle = 0;
    uint32_t users = 0;
    Pd* pd = nullptr;
    ibv_srq_attr attr{};
    pid_t pid = 0;
    SessionObjects* owner = nullptr;
    SharedMemory memory;
    Ring ring;
};

struct Ah {
    uint32_t handle = 0;
    Pd* pd = nullptr;
    ibv_ah_attr attr{};
};

struct Qp {
    uint32_t handle = 0;
    uint32_t qpn = 0;
    ibv_qp_type type = IBV_QPT_RC;
    Pd* pd = nullptr;
    Cq* send_cq = nullptr;
    Cq* recv_cq = nullptr;
    Srq* srq = nullptr;
    ibv_qp_cap cap{};
    bool sq_sig_all = false;
    ibv_qp_attr attr{}; // current attributes; attr.qp_state is the state
    pid_t pid = 0;      // the owning process
    SessionObjects* owner = nullptr;
    SharedMemory memory;
    Ring sq, rq; // rq.entries == 0 with an SRQ
    RequesterState req;
    ResponderState resp;
    QpCounters counters;
    bool scheduled = false;  // in the engine's run queue
    std::vector<Mgid> mcast; // the multicast groups this (UD) QP is attached to
};

} // namespace nicsim
