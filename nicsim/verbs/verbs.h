// The setup verbs as the daemon executes them: validate like hardware, then change state.
// Each returns 0 or the positive errno real libibverbs would return.
#pragma once

#include "emu/ipc/protocol.h"
#include "nic/nic.h"
#include "objects/session_objects.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/logger.h>

#include <cerrno>
#include <vector>

namespace nicsim {

struct VerbContext {
    Nic& nic;
    SessionObjects& objects;
    spdlog::logger& log;
    std::string prefix;             // "session#3" for log lines
    pid_t pid;                      // the process that sent the request
    std::vector<UniqueFd> pass_fds; // descriptors to send with the reply
    bool net_raw = true;            // the process may make raw packet QPs and flows (CAP_NET_RAW)
    std::vector<UniqueFd> request_fds = {}; // descriptors the request carried
    // Why the verb was refused (refuse()): the app reads it with the reply (reasons.h).
    std::string reason = {};
    uint32_t reason_qpn = 0; // the QP it is about; 0: none

    // Refuses the verb with `err`, saying why: `return c.refuse(EINVAL, "...")`.
    int refuse(int err, std::string why, uint32_t qpn = 0) {
        reason = std::move(why);
        reason_qpn = qpn;
        return err;
    }
};

namespace ipc = emu::ipc;

// A destroy verb's handle names nothing of this session (garbled, already destroyed, or
// another context's): ENOENT, as the kernel's object lookup answers it (uverbs looks handles
// up in the caller's own file only).
inline int no_object(VerbContext& c, const char* kind, uint32_t handle) {
    return c.refuse(ENOENT,
                    fmt::format("{} handle {} names no {} of this context", kind, handle, kind));
}

// A destroy verb's object is still held by `users` others (what `held_by` names): EBUSY, as
// uverbs answers while its usecnt is not zero, and the reason says what to destroy first.
inline int in_use(VerbContext& c, const char* kind, uint32_t handle, unsigned users,
                  const char* held_by) {
    return c.refuse(EBUSY, fmt::format("{} handle {} is still used by {} {}: destroy {} first",
                                       kind, handle, users, held_by, users == 1 ? "it" : "them"));
}

// What a destroy verb says of its kind of object: its name in reasons, the count of what still
// holds it and what that is, its name in the log and what the verb did.
template <typename T> struct DestroyRule {
    const char* kind;
    uint32_t T::*holders;
    const char* held_by;
    const char* log_name;
    const char* done;
};

// The destroy verbs' one shape: the handle names an object of this session (else ENOENT), which
// nothing holds any more (else EBUSY, saying what does); then `free` frees it.
template <typename T, typename Table, typename Free>
int destroy_unheld(VerbContext& c, Table& table, uint32_t handle, const DestroyRule<T>& rule,
                   Free&& free) {
    T* object = table.get(handle);
    if (!object) return no_object(c, rule.kind, handle);
    if (uint32_t n = object->*rule.holders) return in_use(c, rule.kind, handle, n, rule.held_by);
    free(*object);
    c.log.debug("{} {}#{} {}", c.prefix, rule.log_name, handle, rule.done);
    return 0;
}

// EAGAIN (logged) when the caller holds its whole share of `kind` (--max-per-process), else 0.
inline int over_share(VerbContext& c, emu::Share kind) {
    return c.nic.shares().refuses(kind, c.pid, c.log, c.prefix) ? EAGAIN : 0;
}

int query_device(VerbContext&, const ipc::Empty&, ipc::QueryDeviceReply&);
int query_port(VerbContext&, const ipc::QueryPortReq&, ipc::QueryPortReply&);
int query_gid(VerbContext&, const ipc::QueryGidReq&, ipc::QueryGidReply&);
int query_pkey(VerbContext&, const ipc::QueryPkeyReq&, ipc::QueryPkeyReply&);

int alloc_pd(VerbContext&, const ipc::Empty&, ipc::HandleReply&);
int dealloc_pd(VerbContext&, const ipc::HandleReq&, ipc::Empty&);
int reg_mr(VerbContext&, const ipc::RegMrReq&, ipc::RegMrReply&);
int rereg_mr(VerbContext&, const ipc::ReregMrReq&, ipc::ReregMrReply&);
int dereg_mr(VerbContext&, const ipc::HandleReq&, ipc::Empty&);
int alloc_mw(VerbContext&, const ipc::AllocMwReq&, ipc::AllocMwReply&);
int dealloc_mw(VerbContext&, const ipc::HandleReq&, ipc::Empty&);

int alloc_dm(VerbContext&, const ipc::AllocDmReq&, ipc::AllocDmReply&);
int dealloc_dm(VerbContext&, const ipc::HandleReq&, ipc::Empty&); // ibv_free_dm
int reg_dm_mr(VerbContext&, const ipc::RegDmMrReq&, ipc::RegMrReply&);

int create_comp_channel(VerbContext&, const ipc::Empty&, ipc::HandleReply&);
int destroy_comp_channel(VerbContext&, const ipc::HandleReq&, ipc::Empty&);
int create_cq(VerbContext&, const ipc::CreateCqReq&, ipc::CreateCqReply&);
int resize_cq(VerbContext&, const ipc::ResizeCqReq&, ipc::ResizeCqReply&);
int destroy_cq(VerbContext&, const ipc::HandleReq&, ipc::Empty&);

int create_qp(VerbContext&, const ipc::CreateQpReq&, ipc::CreateQpReply&);
int modify_qp(VerbContext&, const ipc::ModifyQpReq&, ipc::Empty&);
int query_qp(VerbContext&, const ipc::QueryQpReq&, ipc::QueryQpReply&);
int destroy_qp(VerbContext&, const ipc::HandleReq&, ipc::Empty&);
int create_rss_qp(VerbContext&, const ipc::CreateRssQpReq&, ipc::CreateQpReply&);

int create_flow(VerbContext&, const ipc::CreateFlowReq&, ipc::HandleReply&);
int destroy_flow(VerbContext&, const ipc::HandleReq&, ipc::Empty&);

int create_wq(VerbContext&, const ipc::CreateWqReq&, ipc::CreateWqReply&);
int modify_wq(VerbContext&, const ipc::ModifyWqReq&, ipc::Empty&);
int destroy_wq(VerbContext&, const ipc::HandleReq&, ipc::Empty&);
int create_rwq_ind_table(VerbContext&, const ipc::CreateRwqIndTableReq&,
                         ipc::CreateRwqIndTableReply&);
int destroy_rwq_ind_table(VerbContext&, const ipc::HandleReq&, ipc::Empty&);
// The QP a handle names: for an ibv_open_qp handle, the shared XRC_RECV QP it stands for.
Qp* find_qp(SessionObjects& objects, uint32_t handle);

int create_srq(VerbContext&, const ipc::CreateSrqReq&, ipc::CreateSrqReply&);
// ibv_post_srq_ops: one tag operation on a tag-matching SRQ.
int srq_ops(VerbContext&, const ipc::SrqOpReq&, ipc::SrqOpReply&);

// ibv_import_pd/mr/dm: an object of this session, for a context made by ibv_import_device.
int import_object(VerbContext&, const ipc::ImportObjectReq&, ipc::ImportObjectReply&);
int modify_srq(VerbContext&, const ipc::ModifySrqReq&, ipc::Empty&);
int query_srq(VerbContext&, const ipc::HandleReq&, ipc::QuerySrqReply&);
int destroy_srq(VerbContext&, const ipc::HandleReq&, ipc::Empty&);
int create_srq_ex(VerbContext&, const ipc::CreateSrqExReq&, ipc::CreateSrqReply&);

int open_xrcd(VerbContext&, const ipc::OpenXrcdReq&, ipc::HandleReply&);
int close_xrcd(VerbContext&, const ipc::HandleReq&, ipc::Empty&);
int open_qp(VerbContext&, const ipc::OpenQpReq&, ipc::OpenQpReply&);

int attach_mcast(VerbContext&, const ipc::McastReq&, ipc::Empty&);
int detach_mcast(VerbContext&, const ipc::McastReq&, ipc::Empty&);

int create_ah(VerbContext&, const ipc::CreateAhReq&, ipc::HandleReply&);
int destroy_ah(VerbContext&, const ipc::HandleReq&, ipc::Empty&);

// The object-freeing halves of the destroy verbs, for session teardown too.
void free_pd(Nic&, SessionObjects&, Pd&);
void free_mr(Nic&, SessionObjects&, Mr&);
void free_mw(Nic&, SessionObjects&, Mw&);
void free_dm(Nic&, SessionObjects&, Dm&);
void free_comp_channel(Nic&, SessionObjects&, CompChannel&);
void free_cq(Nic&, SessionObjects&, Cq&);
void free_qp(Nic&, SessionObjects&, Qp&);
void free_srq(Nic&, SessionObjects&, Srq&);
void free_ah(Nic&, SessionObjects&, Ah&);
void free_flow(Nic&, SessionObjects&, Flow&);
void free_wq(Nic&, SessionObjects&, Wq&);
void free_ind_table(Nic&, SessionObjects&, RwqIndTable&);
void free_xrcd(Nic&, SessionObjects&, XrcdHandle&);
// Everything a session owns, in the order the destroy verbs allow (a session's end).
void free_session_objects(Nic&, SessionObjects&);

} // namespace nicsim
