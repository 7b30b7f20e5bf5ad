// The verbs objects the daemon owns on behalf of its sessions. `users` counts the objects that
// refer to this one, so destroying it while in use fails with EBUSY as the kernel's does.
#pragma once

#include "data/shared_memory.h"
#include "emu/flow_match.h"
#include "emu/ipc/rings.h"
#include "objects/qp_transport.h"
#include "support/unique_fd.h"

#include <infiniband/verbs.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
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
    UniqueFd memfd; // handed out again when another context imports the DM
};

struct Mr {
    uint32_t handle = 0;
    uint32_t windows = 0; // memory windows bound to it: deregistering is EBUSY meanwhile
    Pd* pd = nullptr;
    pid_t pid = 0;    // the process that registered it (its share, --max-per-process)
    Dm* dm = nullptr; // an MR on device memory: addr is in the NIC's own mapping
    // Where its bytes are: the registering process's memory (the NIC's own for device memory).
    std::shared_ptr<Memory> memory;
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
    pid_t pid = 0; // the process that made it: its async events go to that process
    SessionObjects* owner = nullptr;
    SharedMemory memory;
    Ring ring;
    bool overrun = false; // the app let it fill up: completions are being lost
};

// An XRC domain (ibv_open_xrcd): device-wide, shared by every session that opens it through
// the same file. XRC SRQs and XRC_RECV QPs serve each other only within one domain.
struct Xrcd {
    uint32_t id = 0;
    uint32_t opens = 0;   // session handles on it; the domain goes with the last
    bool by_file = false; // named by a file (dev, ino), or private to one handle
    uint64_t dev = 0, ino = 0;
};

// A session's handle on a domain. `users` counts the XRC SRQs and XRC_RECV QPs made or opened
// through it: closing the handle is EBUSY meanwhile, as the kernel's.
struct XrcdHandle {
    uint32_t handle = 0;
    uint32_t users = 0;
    Xrcd* xrcd = nullptr;
};

// A tag posted to a tag-matching SRQ (ibv_post_srq_ops IBV_WR_TAG_ADD): the buffer a message
// whose tag matches (tag & mask) lands in.
struct TmTag {
    uint64_t tag = 0, mask = 0;
    uint64_t recv_wr_id = 0;
    std::vector<DmaSegment> local;
    uint64_t capacity = 0;
    // Added while the app's unexpected count agreed with the NIC's: only such tags match, the
    // others wait for an IBV_OPS_TM_SYNC that brings the counts in line (as mlx5).
    bool enabled = true;
};

// The tag list of an IBV_SRQT_TM SRQ.
struct TagMatching {
    uint32_t max_num_tags = 0;
    uint32_t max_ops = 0;
    std::map<uint32_t, TmTag> tags; // by handle; handles grow, so this is posting order
    uint32_t next_handle = 1;
    uint32_t unexpected = 0; // messages the NIC found no tag for
    uint32_t synced = 0;     // the unexpected count the app last reported
    uint64_t malformed = 0;  // SENDs without a valid TMH, refused
};

struct Srq {
    uint32_t handle = 0;
    uint32_t users = 0;
    uint32_t srqn = 0; // device-wide number (ibv_get_srq_num)
    ibv_srq_type type = IBV_SRQT_BASIC;
    Pd* pd = nullptr;
    // XRC: its domain (through this session's handle) and the CQ its receives complete on.
    XrcdHandle* xrcd = nullptr;
    Cq* cq = nullptr;
    ibv_srq_attr attr{};
    pid_t pid = 0;
    SessionObjects* owner = nullptr;
    SharedMemory memory;
    Ring ring;
    std::unique_ptr<TagMatching> tm; // IBV_SRQT_TM (whose receives also complete on `cq`)
};

// A receive work queue (ibv_create_wq): receives for the RSS QPs whose indirection tables name
// it, completed on its own CQ. Receives only in IBV_WQS_RDY.
struct Wq {
    uint32_t handle = 0;
    uint32_t users = 0; // indirection tables naming it
    uint32_t wq_num = 0;
    Pd* pd = nullptr;
    Cq* cq = nullptr;
    ibv_wq_state state = IBV_WQS_RESET;
    uint32_t max_sge = 0;
    SessionObjects* owner = nullptr;
    SharedMemory memory;
    Ring ring;
};

struct RwqIndTable {
    uint32_t handle = 0;
    uint32_t users = 0; // RSS QPs using it
    uint32_t ind_tbl_num = 0;
    std::vector<Wq*> wqs; // 2^log_size entries
};

struct Qp;

// A steering rule (ibv_create_flow): frames matching `rule` go to `qp`.
struct Flow {
    uint32_t handle = 0;
    Qp* qp = nullptr;
    uint16_t priority = 0;
    emu::flow::Rule rule;
};

struct Ah {
    uint32_t handle = 0;
    Pd* pd = nullptr;
    ibv_ah_attr attr{};
};

// XRC_SEND QPs have no receive side (recv_cq, rq: none). XRC_RECV QPs have no PD, CQs or
// queues of their own (a one-slot SQ that nothing posts to): each request names the XRC SRQ
// whose receives, PD and CQ it uses.
struct Qp {
    uint32_t handle = 0;
    uint32_t qpn = 0;
    ibv_qp_type type = IBV_QPT_RC;
    Pd* pd = nullptr;
    Cq* send_cq = nullptr;
    Cq* recv_cq = nullptr;
    Srq* srq = nullptr;
    XrcdHandle* xrcd = nullptr; // XRC_RECV: its domain, through this session's handle
    Xrcd* domain = nullptr;     // XRC_RECV: the domain itself (it outlives every handle's QP)
    // ibv_open_qp: this entry is another session's (or this one's) handle on `shared`, an
    // XRC_RECV QP; it has no state of its own. The shared QP lists its openers and lives on,
    // without an owner, until its creator and every opener have let go (as the kernel's).
    Qp* shared = nullptr;
    std::vector<Qp*> openers;
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
    // Why the QP went to ERR: the reason id its flushed WRs carry (emu/ipc/reasons.h); 0: none.
    uint32_t error_reason = 0;
    bool scheduled = false;       // in the engine's run queue
    uint64_t timer_queued_us = 0; // the engine's: its earliest deadline in the timer heap (0: none)
    uint32_t doorbell_slot = 0;   // its bit in the session's doorbell page (0: none of its own)
    uint32_t flows = 0; // steering rules delivering to it: destroying it is EBUSY meanwhile
    // RSS (a raw packet QP made by CreateRssQp): no rings; received frames go to the WQ the
    // hash picks.
    RwqIndTable* ind_table = nullptr;
    uint64_t rx_hash_fields = 0;
    std::vector<uint8_t> rx_hash_key;
    std::vector<Mgid> mcast; // the multicast groups this (UD) QP is attached to
};

} // namespace nicsim
