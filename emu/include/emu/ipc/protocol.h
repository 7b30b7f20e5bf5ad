// The control protocol between libibverbs (verbs_api) and nicsimd: one fixed-layout request and
// one reply per setup verb on a SOCK_SEQPACKET unix socket, in the spirit of the kernel's uverbs
// ABI. File descriptors (event channels) travel with the reply as SCM_RIGHTS.
//
// Every request is a Header followed by exactly the op's request struct; every reply is a
// ReplyHeader followed by the op's reply struct (Status replies carry text of any length).
// The daemon treats every byte from a client as untrusted: a message with a wrong magic,
// version, op or length ends that session.
#pragma once

#include "emu/ipc/ops.h"

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>

namespace emu::ipc {

inline constexpr uint32_t kMagic = 0x554d4552; // "REMU" on the wire
inline constexpr uint16_t kVersion = 4;        // 4: BIND_MW WQEs name the MW and MR by key
// Largest request the daemon accepts and largest reply a client reads.
inline constexpr size_t kMaxRequest = 1024;
inline constexpr size_t kMaxReply = 256 * 1024;
inline constexpr size_t kDevNameLen = 64;

// How many ops there are (ops.h).
#define EMU_IPC_ONE_MORE(...) +1 // NOLINT(bugprone-macro-parentheses): a term of the sum
inline constexpr uint16_t kOpCount = 0 EMU_IPC_OPS(EMU_IPC_ONE_MORE);
#undef EMU_IPC_ONE_MORE

// Count is not an op: one past the last.
#define EMU_IPC_ENUMERATOR(op_, value_, ...) op_ = value_,
enum class Op : uint16_t { EMU_IPC_OPS(EMU_IPC_ENUMERATOR) Count = kOpCount + 1 };
#undef EMU_IPC_ENUMERATOR

namespace detail {
// The daemon's tables are indexed by wire value: each value is used once, from 1 up, no gap.
constexpr bool wire_values_run_without_gap() {
#define EMU_IPC_WIRE_VALUE(op_, value_, ...) value_,
    constexpr uint16_t values[] = {EMU_IPC_OPS(EMU_IPC_WIRE_VALUE)};
#undef EMU_IPC_WIRE_VALUE
    bool seen[kOpCount + 1] = {};
    for (uint16_t v : values) {
        if (v < 1 || v > kOpCount || seen[v]) return false;
        seen[v] = true;
    }
    return true;
}
} // namespace detail
static_assert(detail::wire_values_run_without_gap(), "ops.h: a wire value is reused or skipped");

const char* op_name(Op op);

// True for the rdma_cm ops (EMU_IPC_CM_OPS).
constexpr bool is_cm_op(uint16_t op) {
    switch (op) {
#define EMU_IPC_CASE(op_, value_, ...) case value_:
        EMU_IPC_CM_OPS(EMU_IPC_CASE)
#undef EMU_IPC_CASE
        return true;
    default:
        return false;
    }
}

struct Header {
    uint32_t magic;
    uint16_t version;
    uint16_t op;
    uint32_t length; // of the whole message, header included
    uint32_t seq;    // echoed in the reply
};
static_assert(sizeof(Header) == 16);

struct ReplyHeader {
    Header hdr;
    int32_t err;     // 0 or a positive errno, as the verb returns it
    uint32_t reason; // a refusal: the id of its reason in the session's ring (reasons.h); 0: none
};
static_assert(sizeof(ReplyHeader) == 24);

struct Empty {};

// Hello opens a session. kHelloContext makes it a device context (ibv_open_device): the reply
// then carries, in this order, the async-event socket, the doorbell eventfd and the session's
// shared memory (a memfd of kSessionMemoryBytes: the doorbell page, then the reason ring of
// reasons.h). Without it the session is a probe (device list,
// rdmaemu status).
inline constexpr uint32_t kHelloContext = 1;
// kHelloCm makes it a CM session (rdma_cm, cm_protocol.h): as opening the kernel's CM device.
inline constexpr uint32_t kHelloCm = 2;
struct HelloReq {
    uint32_t flags;
    uint32_t reserved;
};
// ReopenContext: another process holds the session's socket (ibv_import_device on a command fd
// passed to it) and needs the context's descriptors: the reply is Hello's, with the same three
// kinds of descriptor (an async-event socket of that process's own, for the events of the
// objects it makes; the doorbell eventfd and page again). Requests carry their sender
// (SO_PASSCRED), so the NIC reaches each process's memory for the objects it makes.
//
// Any request may carry one descriptor (SCM_RIGHTS): its sender's /proc/self/mem, opened
// read-write by that process. The NIC reaches the memory of the MRs the process registers from
// then on through it, so it can touch nothing the process could not touch itself, and nothing
// of another process that reuses the pid later. The library sends it with the first request of
// every process that uses the session (the opener, a child after fork(), an importer).
struct HelloReply {
    char dev_name[kDevNameLen];
    uint64_t node_guid; // network byte order, as ibv_get_device_guid returns it
    uint32_t session_id;
    uint32_t node_type; // enum ibv_node_type
    uint32_t transport_type;
    int32_t daemon_pid; // the NIC's process
};

struct QueryDeviceReply {
    ibv_device_attr attr;
    uint64_t max_dm_size; // ibv_device_attr_ex's: device memory the NIC offers, in bytes
};

struct QueryPortReq {
    uint32_t port;
};
struct QueryPortReply {
    ibv_port_attr attr;
};

struct QueryGidReq {
    uint32_t port;
    uint32_t index;
};
struct QueryGidReply {
    uint8_t gid[16];
    uint32_t gid_type; // enum ibv_gid_type (IBV_GID_TYPE_ROCE_V2)
    uint32_t valid;    // 0 for an empty table entry
};

struct QueryPkeyReq {
    uint32_t port;
    uint32_t index;
};
struct QueryPkeyReply {
    uint16_t pkey; // network byte order
    uint16_t reserved[3];
};

struct HandleReq {
    uint32_t handle;
    uint32_t reserved;
};
struct HandleReply {
    uint32_t handle;
    uint32_t reserved;
};

// The whole pages of an MR the library made a shared mapping of
// (verbs_api/backends/emulated/shared_pages.h): the request carries their memfd (sealed against
// shrinking) and the NIC maps it too. length 0: none, the NIC reaches the MR through the process's
// /proc/self/mem.
struct SharedPages {
    uint64_t start;  // the app's address of the first page
    uint64_t length; // bytes, whole pages, inside the MR's range
    uint64_t offset; // where `start` lies in the memfd
};

struct RegMrReq {
    uint32_t pd;
    uint32_t access; // enum ibv_access_flags
    uint64_t addr;
    uint64_t length;
    uint64_t iova;
    SharedPages shared;
};
struct RegMrReply {
    uint32_t handle;
    uint32_t lkey;
    uint32_t rkey;
    uint32_t reserved;
};

// Device memory (ibv_alloc_dm) is NIC memory: a memfd the NIC maps, sent with the reply for
// the library to map too, so ibv_memcpy_to/from_dm are plain loads and stores.
struct AllocDmReq {
    uint64_t length;
    uint32_t log_align_req;
    uint32_t comp_mask;
};
struct AllocDmReply { // with the memfd
    uint32_t handle;
    uint32_t reserved;
    uint64_t map_bytes; // the memfd's size: length rounded up to whole pages
};

// An MR on device memory, always zero-based (IBV_ACCESS_ZERO_BASED): its addresses run from
// 0 to length, at dm_offset into the DM.
struct AllocMwReq {
    uint32_t pd;
    uint32_t type; // enum ibv_mw_type
};
struct AllocMwReply {
    uint32_t handle;
    uint32_t rkey;
};

struct RegDmMrReq {
    uint32_t pd;
    uint32_t dm;
    uint32_t access;
    uint32_t reserved;
    uint64_t dm_offset;
    uint64_t length;
};

struct ReregMrReq {
    uint32_t mr;
    uint32_t flags; // enum ibv_rereg_mr_flags
    uint32_t pd;
    uint32_t access;
    uint64_t addr;
    uint64_t length;
    uint64_t iova;
    SharedPages shared; // IBV_REREG_MR_CHANGE_TRANSLATION: the new range's
};
struct ReregMrReply {
    uint32_t lkey;
    uint32_t rkey;
};

struct CreateCqReq {
    int32_t cqe;
    uint32_t channel; // 0: none
    int32_t comp_vector;
    uint32_t reserved;
};
// CQ, QP and SRQ replies carry their rings' memfd.
struct CreateCqReply {
    uint32_t handle;
    uint32_t cqe; // actual size (the ring's entries), at least the requested one
    uint64_t ring_bytes;
};

struct ResizeCqReq {
    uint32_t cq;
    int32_t cqe;
};
struct ResizeCqReply { // with the new ring's memfd; pending completions were moved into it
    uint32_t cqe;
    uint32_t reserved;
    uint64_t ring_bytes;
};

// XRC_SEND QPs have no receive side (recv_cq, srq ignored); XRC_RECV QPs have only an XRC
// domain (pd, CQs, srq and caps ignored).
struct CreateQpReq {
    uint32_t pd;
    uint32_t send_cq;
    uint32_t recv_cq;
    uint32_t srq;     // 0: none
    uint32_t qp_type; // enum ibv_qp_type
    uint32_t sq_sig_all;
    ibv_qp_cap cap;
    uint32_t xrcd; // XRC_RECV: the XRC domain's handle
    uint32_t reserved;
};
struct CreateQpReply { // one memfd: the SQ ring at offset 0, the RQ ring at rq_offset
    uint32_t handle;
    uint32_t qpn;
    ibv_qp_cap cap; // actual capabilities
    uint32_t sq_entries;
    uint32_t sq_wqe_size;
    uint32_t rq_entries; // 0 with an SRQ
    uint32_t rq_wqe_size;
    uint64_t rq_offset;
    uint64_t ring_bytes;
    uint32_t doorbell_slot; // the QP's bit in the session's DoorbellPage (rings.h)
    uint32_t reserved;
};

struct ModifyQpReq {
    uint32_t qp;
    uint32_t mask; // enum ibv_qp_attr_mask
    ibv_qp_attr attr;
};

struct QueryQpReq {
    uint32_t qp;
    uint32_t mask;
};
struct QueryQpReply {
    ibv_qp_attr attr;
    ibv_qp_cap cap;
    uint32_t qp_type;
    uint32_t sq_sig_all;
};

struct CreateSrqReq {
    uint32_t pd;
    uint32_t reserved;
    ibv_srq_attr attr;
};
struct CreateSrqReply { // with the ring's memfd
    uint32_t handle;
    uint32_t srqn;     // the device-wide SRQ number (ibv_get_srq_num), named by XRC senders
    ibv_srq_attr attr; // actual sizes
    uint32_t entries;
    uint32_t wqe_size;
    uint64_t ring_bytes;
};

// ibv_create_srq_ex: a basic or an XRC SRQ. An XRC SRQ belongs to an XRC domain, takes the
// receives of XRC SENDs that name it, and completes them on its own CQ.
struct CreateSrqExReq {
    uint32_t pd;
    uint32_t srq_type; // enum ibv_srq_type: IBV_SRQT_BASIC, IBV_SRQT_XRC or IBV_SRQT_TM
    uint32_t xrcd;     // XRC: the domain's handle
    uint32_t cq;       // XRC and TM: the CQ its receives and tag operations complete on
    ibv_srq_attr attr;
    uint32_t max_num_tags; // TM: tags posted at once (ibv_tm_cap)
    uint32_t max_ops;      // TM: outstanding tag operations
};

// Tag matching (IBV_SRQT_TM), as emu0 claims it in ibv_query_device_ex's tm_caps: RC only,
// one SGE per tag, rendezvous headers (TMH + RVH + user header) of up to 64 bytes.
inline constexpr uint32_t kTmMaxNumTags = 127;
inline constexpr uint32_t kTmMaxOps = 32;
inline constexpr uint32_t kTmMaxSge = 1;
inline constexpr uint32_t kTmMaxRndvHdrSize = 64;

// ibv_post_srq_ops, one operation: IBV_WR_TAG_ADD (tag, mask, recv_wr_id, at most one SGE),
// IBV_WR_TAG_DEL (handle) or IBV_WR_TAG_SYNC. Any of them with IBV_OPS_TM_SYNC reports
// unexpected_cnt. The completion (IBV_OPS_SIGNALED) is on the SRQ's CQ before the reply.
struct SrqOpReq {
    uint32_t srq;
    uint32_t opcode; // enum ibv_ops_wr_opcode
    uint32_t flags;  // enum ibv_ops_flags
    uint32_t unexpected_cnt;
    uint64_t wr_id;
    uint32_t handle; // DEL: the tag's
    uint32_t num_sge;
    uint64_t recv_wr_id;
    uint64_t tag;
    uint64_t mask;
    ibv_sge sge;
};
struct SrqOpReply {
    uint32_t handle; // ADD: the new tag's
    uint32_t reserved;
};

// ibv_open_xrcd. `fd` is the app's descriptor of the file that names a domain shared by all
// who open it (-1: a new domain of this session's own). The NIC finds the file itself through
// /proc/<pid>/fd/<fd>, so a client cannot join a domain whose file it has not opened.
struct OpenXrcdReq {
    int32_t fd;
    int32_t oflags; // O_CREAT: create the domain if the file names none; O_EXCL: fail if it does
};

// ibv_open_qp: another handle on an XRC_RECV QP of the same XRC domain, by its number.
struct OpenQpReq {
    uint32_t xrcd;
    uint32_t qpn;
    uint32_t qp_type; // must be IBV_QPT_XRC_RECV
    uint32_t reserved;
};
struct OpenQpReply {
    uint32_t handle;
    uint32_t state; // enum ibv_qp_state, now
};

struct ModifySrqReq {
    uint32_t srq;
    uint32_t mask; // enum ibv_srq_attr_mask
    ibv_srq_attr attr;
};

struct QuerySrqReply {
    ibv_srq_attr attr;
};

struct CreateAhReq {
    uint32_t pd;
    uint32_t reserved;
    ibv_ah_attr attr;
};

// ibv_create_flow: the ibv_flow_attr's fields, then its specs as the app laid them out (each
// starting with its type and size; emu/flow_match.h checks them). Replied with a HandleReply.
inline constexpr size_t kMaxFlowSpecBytes = 512;
struct CreateFlowReq {
    uint32_t qp;
    uint32_t comp_mask;
    uint32_t type; // enum ibv_flow_attr_type
    uint32_t flags;
    uint16_t priority;
    uint8_t num_of_specs;
    uint8_t port;
    uint32_t spec_bytes; // how many of `specs` are used
    uint8_t specs[kMaxFlowSpecBytes];
};

// Receive work queues (ibv_create_wq, IBV_WQT_RQ): a ring like an SRQ's, with its own CQ.
struct CreateWqReq {
    uint32_t pd;
    uint32_t cq;
    uint32_t wq_type; // enum ibv_wq_type
    uint32_t max_wr;
    uint32_t max_sge;
    uint32_t comp_mask;
    uint32_t create_flags;
    uint32_t reserved;
};
struct CreateWqReply { // with the ring's memfd
    uint32_t handle;
    uint32_t wq_num;
    uint32_t max_wr; // actual sizes
    uint32_t max_sge;
    uint32_t entries;
    uint32_t wqe_size;
    uint64_t ring_bytes;
};

struct ModifyWqReq {
    uint32_t wq;
    uint32_t attr_mask; // enum ibv_wq_attr_mask
    uint32_t wq_state;
    uint32_t curr_wq_state;
    uint32_t flags;
    uint32_t flags_mask;
};

// An indirection table of 2^log_size WQs (by handle), for RSS QPs.
inline constexpr uint32_t kMaxRwqIndTableLog = 7;
struct CreateRwqIndTableReq {
    uint32_t log_size;
    uint32_t comp_mask;
    uint32_t wqs[1u << kMaxRwqIndTableLog];
};
struct CreateRwqIndTableReply {
    uint32_t handle;
    uint32_t ind_tbl_num;
};

// A raw packet QP that only receives, spreading frames over an indirection table's WQs by a
// hash (ibv_create_qp_ex with IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH). It has
// no rings of its own: the reply's ring fields are 0 and no memfd comes with it.
inline constexpr size_t kMaxRxHashKeyLen = 128;
struct CreateRssQpReq {
    uint32_t pd;
    uint32_t ind_table;
    uint8_t hash_function; // enum ibv_rx_hash_function_flags
    uint8_t key_len;
    uint16_t reserved;
    uint32_t reserved2;
    uint64_t fields_mask; // enum ibv_rx_hash_fields
    uint8_t key[kMaxRxHashKeyLen];
};

// ibv_attach_mcast / ibv_detach_mcast: a UD QP joins or leaves the multicast group `gid` on its
// NIC. `lid` is the MLID; a RoCE port ignores it (RoCE annex A16/A17).
struct McastReq {
    uint32_t qp;
    uint16_t lid;
    uint16_t reserved;
    uint8_t gid[16];
};

// ibv_import_pd / ibv_import_mr / ibv_import_dm: what a context made by ibv_import_device
// needs to know about an object the session already owns. An imported DM comes with its memfd.
enum class ImportType : uint32_t { Pd = 1, Mr, Dm };
struct ImportObjectReq {
    uint32_t type; // ImportType
    uint32_t handle;
};
struct ImportObjectReply {
    uint64_t length;    // MR, DM
    uint64_t map_bytes; // DM: the memfd's size
    uint32_t lkey;      // MR
    uint32_t rkey;      // MR
    uint32_t access;    // MR
    uint32_t reserved;
};

// Async events (ibv_get_async_event) arrive on the context's async socket, one record per
// datagram. `handle` names the QP, CQ or SRQ, or is the port number for port events.
struct AsyncEventRecord {
    uint32_t event_type; // enum ibv_event_type
    uint32_t handle;
    uint32_t reason; // the id of its reason in the session's ring (reasons.h); 0: none
    uint32_t reserved;
};

// Completion events (ibv_get_cq_event) arrive on the channel's socket, one record per datagram.
struct CompEventRecord {
    uint32_t cq;
    uint32_t reserved;
};

// The request and reply struct of each op; cm_protocol.h declares the CM ops' with
// EMU_IPC_OP_TYPES too, after their structs.
template <Op> struct Types;
#define EMU_IPC_OP_TYPES(op_, value_, req_, reply_, handler_)                                      \
    template <> struct Types<Op::op_> {                                                            \
        using Req = req_;                                                                          \
        using Reply = reply_;                                                                      \
    };
EMU_IPC_VERB_OPS(EMU_IPC_OP_TYPES)

// Size of an op's request body as it travels (Empty travels as zero bytes).
template <typename T> constexpr size_t body_size() {
    if constexpr (sizeof(T) == 1 && __is_empty(T))
        return 0;
    else
        return sizeof(T);
}

// The exact length a request of `op` must have, or 0 when `op` is unknown.
size_t request_length(uint16_t op);

} // namespace emu::ipc
