// The responder: validates incoming requests in rxe's order (PSN, opcode sequence, access,
// resources, length, rkey), executes them against app memory, and acknowledges.
#include "emu/verbs_names.h"
#include "emu/wire/psn.h"
#include "engines.h"
#include "memory_access.h"
#include "memory_windows.h"
#include "nic/nic.h"
#include "objects/session_objects.h"
#include "reasons.h"
#include "recv_queue.h"
#include "tag_matching.h"

#include <spdlog/fmt/fmt.h>

#include <cstring>

namespace nicsim::transport {

namespace wire = emu::wire;
using wire::psn_add;
using wire::psn_diff;

namespace {

bool is_rc(const Qp& qp) {
    return reliable(qp);
}

// Where a request's receive WQE, memory checks and completion go: the QP's own RQ (or SRQ),
// PD and receive CQ; for an XRC_RECV QP, those of the XRC SRQ its message names (nothing when
// that SRQ is gone).
struct Target {
    const Pd* access_pd = nullptr; // rkeys (WRITE, READ, atomics) and SEND_WITH_INV's rkey
    RecvTarget recv;
};

Target target_of(TransportEnv& env, Qp& qp, uint32_t srqn) {
    if (qp.type == IBV_QPT_XRC_RECV) {
        Srq* srq = xrc_srq(env, qp, srqn);
        if (!srq) return {};
        return {srq->pd, {&srq->ring, srq, srq->pd, srq->attr.max_sge, srq->cq, qp.qpn}};
    }
    // An SRQ may be of another PD than its QPs: receives taken from it are checked against the
    // SRQ's PD, remote accesses against the QP's (mlx5; google/rdma-unit-test's
    // SrqRecvMrSrqMatch, SrqRecvMrSrqMismatch and QpSrqPdMismatchWriteWithImm pass there).
    // rxe checks both against the QP's.
    if (qp.srq)
        return {qp.pd,
                {&qp.srq->ring, qp.srq, qp.srq->pd, qp.srq->attr.max_sge, qp.recv_cq, qp.qpn}};
    if (!qp.rq.header) return {qp.pd, {nullptr, nullptr, qp.pd, 0, qp.recv_cq, qp.qpn}}; // XRC_SEND
    return {qp.pd, {&qp.rq, nullptr, qp.pd, qp.cap.max_recv_sge, qp.recv_cq, qp.qpn}};
}

// The target of the request being handled.
Target target_of(TransportEnv& env, Qp& qp) {
    return target_of(env, qp, qp.resp.srqn);
}

// Sends an ACK or NAK now, or queues it behind READ responses still going out.
void respond(TransportEnv& env, Qp& qp, uint32_t psn, uint8_t syndrome) {
    ResponderState& s = qp.resp;
    if (s.responses.empty()) return send_ack(env, qp, psn, syndrome);
    env.nic().hw().add(HwCounter::AckDeferred);
    ResponseJob job;
    job.kind = ResponseJob::Kind::Ack;
    job.psn = psn;
    job.syndrome = syndrome;
    s.responses.push_back(job);
}

// The ways a responder refuses a request and ends the connection (IBA 9.7.5.2.x, rxe's
// RESPST_ERR_* exits), one row each: what the NAK tells the requester (or that none is sent:
// the requester hears nothing, retries, then gives up), what the receive in progress completes
// with, the async event our side raises, and the host counter that counts it (mlx5's name where
// mlx5 has one).
//
// RemoteAccess's receive in progress is a WRITE with immediate's: "Local Access Error", the
// responder's status for a protection error on its memory during an inbound RDMA Write with
// Immediate (ibv_poll_cq(3); mlx5's MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR; rxe reports
// REM_ACCESS_ERR). InvalidateRkey is IBA 9.9.6.3's class J: the receive completes in error, the
// QP goes to ERR, no NAK (mlx5; rxe's RESPST_ERR_INVALIDATE_RKEY completes the receive with
// REM_INV_REQ_ERR).
#define NICSIM_REFUSALS(X)                                                                         \
    /* not allowed, malformed or out of sequence */                                                \
    X(InvalidRequest, InvalidRequest, true, IBV_WC_REM_INV_REQ_ERR, IBV_EVENT_QP_REQ_ERR,          \
      RespInvalidRequests)                                                                         \
    /* a SEND longer than the receive buffer */                                                    \
    X(RecvOverflow, InvalidRequest, true, IBV_WC_LOC_LEN_ERR, IBV_EVENT_QP_REQ_ERR,                \
      RespLocalLengthError)                                                                        \
    /* rkey, range or rights */                                                                    \
    X(RemoteAccess, RemoteAccessError, true, IBV_WC_LOC_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR,       \
      RespRemoteAccessErrors)                                                                      \
    /* the receive WQE itself is bad (too many SGEs) */                                            \
    X(RecvWqeLength, RemoteOperationalError, true, IBV_WC_LOC_LEN_ERR, IBV_EVENT_QP_FATAL,         \
      RespLocalLengthError)                                                                        \
    /* the receive buffer's lkey or memory */                                                      \
    X(RecvWqeProtection, RemoteOperationalError, true, IBV_WC_LOC_PROT_ERR, IBV_EVENT_QP_FATAL,    \
      RespLocalProtectionErrors)                                                                   \
    /* SEND_WITH_INV names an rkey this QP may not invalidate */                                   \
    X(InvalidateRkey, InvalidRequest, false, IBV_WC_REM_INV_REQ_ERR, IBV_EVENT_QP_ACCESS_ERR,      \
      RespInvalidRequests)

#define NICSIM_REFUSAL_ENUMERATOR(id, nak, sends_nak, status, event, counter) id,
enum class Refusal : uint8_t { NICSIM_REFUSALS(NICSIM_REFUSAL_ENUMERATOR) };
#undef NICSIM_REFUSAL_ENUMERATOR

struct RefusalClass {
    wire::NakCode nak;
    bool sends_nak;
    ibv_wc_status recv_status;
    ibv_event_type event;
    HwCounter counter;
};

#define NICSIM_REFUSAL_ROW(id, nak, sends_nak, status, event, counter)                             \
    {wire::NakCode::nak, sends_nak, status, event, HwCounter::counter},
constexpr RefusalClass kRefusals[] = {NICSIM_REFUSALS(NICSIM_REFUSAL_ROW)};
#undef NICSIM_REFUSAL_ROW

// Refuses the request and ends the connection: says why (our log, status, the app's reason
// ring, and the requester's NIC), NAKs the requester, completes the receive in progress, raises
// the async event, goes to ERR. `why` names the rule; `hint` what would have been valid (keys of
// the PD: only for their owner).
void fatal(TransportEnv& env, Qp& qp, const wire::Headers& h, Refusal refusal,
           const std::string& why, const std::string& hint = {}) {
    ResponderState& s = qp.resp;
    const RefusalClass& c = kRefusals[static_cast<size_t>(refusal)];
    env.nic().hw().add(HwCounter::RequestsRefused);
    env.nic().hw().add(c.counter);
    std::string headline =
        c.sends_nak
            ? fmt::format("{} psn {:#x} from {} refused (NAK {}; QP to ERR)",
                          wire::opcode_name(h.opcode), h.psn, peer_of(qp), wire::nak_name(c.nak))
            : fmt::format("{} psn {:#x} from {} refused (no NAK; QP to ERR)",
                          wire::opcode_name(h.opcode), h.psn, peer_of(qp));
    uint32_t reason = explain(env, qp, emu::ipc::ReasonKind::Event, headline,
                              hint.empty() ? why : why + "; " + hint);
    if (is_rc(qp) && c.sends_nak) {
        // Before the NAK leaves: the requester's NIC finds it when the NAK comes.
        env.tell_peer(dest_addr(qp),
                      {qp.attr.dest_qp_num, h.psn, qp.owner ? qp.owner->uid : 0, why, hint});
        ++qp.counters.naks_sent;
        env.nic().hw().add(HwCounter::NaksSent);
        respond(env, qp, h.psn, wire::aeth_nak(c.nak));
    }
    if (s.have_recv) {
        ibv_wc wc{};
        wc.wr_id = s.recv.wr_id;
        wc.status = c.recv_status;
        wc.opcode = IBV_WC_RECV;
        wc.qp_num = qp.qpn;
        if (Cq* cq = recv_cq_of(env, qp)) post_completion(env, *cq, wc, false, 0, reason);
        s.have_recv = false;
    }
    qp_event(env, qp, c.event, reason);
    qp.error_reason = reason;
    if (s.responses.empty())
        to_error(env, qp, reason);
    else
        s.failing = true; // the READ responses before the NAK go out first
}

// Takes the next receive WQE from the SRQ or the RQ. False when there is none. A WQE the NIC
// cannot use sets *status, and *why to the reason.
bool take_recv(TransportEnv& env, Qp& qp, ibv_wc_status* status, std::string* why) {
    RecvOp& r = qp.resp.recv;
    r.received = 0;
    if (!take_recv(env, target_of(env, qp).recv, r, status, why)) return false;
    qp.resp.have_recv = true;
    return true;
}

void complete_recv(TransportEnv& env, Qp& qp, const wire::Headers& h, ibv_wc_opcode opcode,
                   uint32_t byte_len) {
    ResponderState& s = qp.resp;
    ibv_wc wc{};
    wc.wr_id = s.recv.wr_id;
    wc.status = IBV_WC_SUCCESS;
    wc.opcode = opcode;
    wc.byte_len = byte_len;
    wc.qp_num = qp.qpn;
    wc.src_qp = qp.attr.dest_qp_num;
    if (wire::has(h.opcode, wire::kHasImmDt)) {
        wc.wc_flags |= IBV_WC_WITH_IMM;
        wc.imm_data = h.imm;
    }
    if (wire::has(h.opcode, wire::kHasIeth)) {
        wc.wc_flags |= IBV_WC_WITH_INV;
        wc.invalidated_rkey = h.ieth_rkey;
    }
    uint64_t tag = 0;
    switch (s.tm) {
    case TmMessage::Matched:
        wc.opcode = IBV_WC_TM_RECV;
        wc.wc_flags |= IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID;
        tag = s.tm_tag;
        break;
    case TmMessage::Unexpected: // the app counts it and syncs (IBV_OPS_TM_SYNC)
        wc.opcode = IBV_WC_TM_RECV;
        break;
    case TmMessage::NoTag:
        wc.opcode = IBV_WC_TM_NO_TAG;
        break;
    default:
        break;
    }
    s.tm = TmMessage::None;
    s.have_recv = false;
    env.nic().hw().add(HwCounter::RdmaRecvs);
    // An XRC target completes on its XRC SRQ's CQ, with its own QPN (as mlx5 reports it).
    if (Cq* cq = recv_cq_of(env, qp)) post_completion(env, *cq, wc, h.se, tag);
}

// No receive posted: says so at the first RNR NAK of a streak, then at 10, 100, ... (at most
// once a second): an app whose peer waits forever hears of it.
void notice_no_recv(TransportEnv& env, Qp& qp, const wire::Headers& h) {
    ResponderState& s = qp.resp;
    ++s.rnr_streak;
    uint64_t now = env.now_us();
    if (!notice_due(s.rnr_streak) || (s.rnr_noticed_us && now - s.rnr_noticed_us < 1000000)) return;
    s.rnr_noticed_us = now;
    explain(env, qp, emu::ipc::ReasonKind::Notice, "",
            fmt::format("{} psn {:#x} from {}: no receive posted, answered with an RNR NAK ({} "
                        "so far); post receives before the peer sends",
                        wire::opcode_name(h.opcode), h.psn, peer_of(qp),
                        count_of(s.rnr_streak, "RNR NAK")));
}

// Makes sure a receive WQE is at hand. False when the request was answered (RNR NAK, error).
bool need_recv(TransportEnv& env, Qp& qp, const wire::Headers& h) {
    if (qp.resp.have_recv) return true;
    ibv_wc_status status;
    std::string why;
    if (!take_recv(env, qp, &status, &why)) {
        // No receive posted: RNR NAK, the requester retries after min_rnr_timer (IBA 9.7.5.2.8).
        if (is_rc(qp)) {
            ++qp.counters.rnr_naks_sent;
            env.nic().hw().add(HwCounter::SendRnrErr);
            notice_no_recv(env, qp, h);
            respond(env, qp, h.psn, wire::aeth_rnr_nak(qp.attr.min_rnr_timer));
        }
        return false;
    }
    qp.resp.rnr_streak = 0;
    if (status != IBV_WC_SUCCESS) {
        fatal(env, qp, h,
              status == IBV_WC_LOC_LEN_ERR ? Refusal::RecvWqeLength : Refusal::RecvWqeProtection,
              why);
        return false;
    }
    return true;
}

// FIRST/MIDDLE packets carry exactly one MTU, LAST and ONLY at most one (IBA C9-24..C9-26).
bool payload_size_ok(const Qp& qp, uint8_t opcode, size_t len) {
    uint32_t mtu = mtu_bytes(qp);
    if (wire::has_any(opcode, wire::kLast)) return len <= mtu;
    return len == mtu;
}

// The first packet of a SEND into a tag-matching SRQ: decides from its TMH where the message
// goes (tag_matching.h). `skip` is set to the bytes of it that are not data. False when the
// request was answered (RNR NAK, NAK).
bool start_tm_message(TransportEnv& env, Qp& qp, Srq& srq, const wire::Headers& h,
                      const uint8_t* payload, size_t len, size_t* skip) {
    ResponderState& s = qp.resp;
    TagMatching& tm = *srq.tm;
    std::optional<tm::Tmh> tmh = tm::parse_tmh(payload, len);
    if (!tmh) {
        ++tm.malformed;
        ++qp.counters.tm_malformed;
        fatal(env, qp, h, Refusal::InvalidRequest,
              fmt::format("a SEND of {} bytes into tag-matching srq#{} without a valid TMH (a FIN "
                          "or unknown opcode, too short, or a RNDV without its RVH)",
                          len, srq.handle));
        return false;
    }
    s.tm_tag = 0;
    std::optional<TmTag> tag;
    if (tmh->opcode != IBV_TMH_NO_TAG) tag = tm::take_match(tm, tmh->tag);
    if (!tag) { // NO_TAG or unexpected: whole into an ordinary receive of the SRQ
        if (!need_recv(env, qp, h)) return false;
        if (tmh->opcode == IBV_TMH_NO_TAG) {
            s.tm = TmMessage::NoTag;
        } else {
            s.tm = TmMessage::Unexpected;
            ++tm.unexpected;
        }
        return true;
    }
    s.tm_tag = tmh->tag;
    if (tmh->opcode == IBV_TMH_RNDV) {
        // The match is reported now; the data follows the READ (IBV_WC_TM_DATA_VALID).
        ibv_wc wc{};
        wc.wr_id = tag->recv_wr_id;
        wc.status = IBV_WC_SUCCESS;
        wc.opcode = IBV_WC_TM_RECV;
        wc.wc_flags = IBV_WC_TM_MATCH;
        wc.qp_num = qp.qpn;
        if (Cq* cq = recv_cq_of(env, qp)) post_completion(env, *cq, wc, false, tmh->tag);
        tm::start_rndv(env, qp, std::move(*tag), *tmh, tm::parse_rvh(payload));
        s.tm = TmMessage::Rndv;
        return true;
    }
    RecvOp& r = s.recv;
    r = RecvOp{};
    r.wr_id = tag->recv_wr_id;
    r.local = std::move(tag->local);
    r.capacity = tag->capacity;
    s.have_recv = true;
    s.tm = TmMessage::Matched;
    *skip = tm::kTmhSize;
    return true;
}

bool execute_send(TransportEnv& env, Qp& qp, const wire::Headers& h, const uint8_t* payload,
                  size_t len) {
    ResponderState& s = qp.resp;
    Target t = target_of(env, qp);
    if (t.recv.srq && t.recv.srq->tm && wire::has_any(h.opcode, wire::kFirst)) {
        size_t skip = 0;
        if (!start_tm_message(env, qp, *t.recv.srq, h, payload, len, &skip)) return false;
        payload += skip;
        len -= skip;
    }
    if (s.tm == TmMessage::Rndv) { // the RVH and any user header: not delivered
        if (wire::has_any(h.opcode, wire::kLast)) s.tm = TmMessage::None;
        return true;
    }
    if (!need_recv(env, qp, h)) return false;
    RecvOp& r = qp.resp.recv;
    if (r.received + len > r.capacity) {
        fatal(env, qp, h, Refusal::RecvOverflow,
              fmt::format("the SEND does not fit the receive wr_id {}: {} bytes posted, {} "
                          "arrived so far",
                          r.wr_id, r.capacity, r.received + len));
        return false;
    }
    if (len) {
        if (env.dma().write(r.local, r.received, payload, len) != 0) {
            fatal(env, qp, h, Refusal::RecvWqeProtection,
                  fmt::format("writing into the receive wr_id {} failed: its buffer's memory is "
                              "gone (unmapped since it was registered)",
                              r.wr_id));
            return false;
        }
    }
    r.received += len;
    if (wire::has_any(h.opcode, wire::kLast)) {
        // SEND with invalidate: the named window stops granting access before the receive
        // completes (IBA 10.6.7.2.4).
        if (wire::has(h.opcode, wire::kHasIeth) &&
            !invalidate_remote(env.nic(), target_of(env, qp).access_pd, qp.qpn, h.ieth_rkey)) {
            fatal(env, qp, h, Refusal::InvalidateRkey,
                  fmt::format("SEND with invalidate names rkey {:#x}, which is no type 2 window of "
                              "the QP's PD bound through this QP (IBA 10.6.7.2.4)",
                              h.ieth_rkey));
            return false;
        }
        ibv_wc_opcode op = IBV_WC_RECV;
        complete_recv(env, qp, h, op, static_cast<uint32_t>(r.received));
    }
    return true;
}

bool execute_write(TransportEnv& env, Qp& qp, const wire::Headers& h, const uint8_t* payload,
                   size_t len) {
    ResponderState& s = qp.resp;
    // A WRITE with immediate in one packet takes its receive WQE before its rkey is checked,
    // as rxe orders CHK_RESOURCE before CHK_RKEY: a refusal then completes that receive
    // (IBV_WC_LOC_ACCESS_ERR, kRefusals) rather than leaving it to be flushed.
    if (wire::has(h.opcode, wire::kHasReth) && wire::has(h.opcode, wire::kNeedsRecvWqe) &&
        !need_recv(env, qp, h))
        return false;
    if (wire::has(h.opcode, wire::kHasReth)) {
        s.write_rkey = h.reth.rkey;
        s.write_va = h.reth.va;
        s.write_remaining = s.write_length = h.reth.length;
        RemoteAccess a{target_of(env, qp).access_pd, qp.qpn, h.reth.rkey, h.reth.va, h.reth.length,
                       IBV_ACCESS_REMOTE_WRITE};
        if (h.reth.length && !remote_mr(env.nic(), a)) {
            Explanation e = explain_remote(env.nic(), a);
            fatal(env, qp, h, Refusal::RemoteAccess, e.what, e.hint);
            return false;
        }
    }
    bool last = wire::has_any(h.opcode, wire::kLast);
    if (len > s.write_remaining || (last && len != s.write_remaining)) {
        fatal(env, qp, h, Refusal::InvalidRequest,
              fmt::format("the WRITE's packets carry more or fewer bytes than its RETH's length "
                          "{} ({} left, {} in this packet)",
                          s.write_length, s.write_remaining, len));
        return false;
    }
    // WRITE with immediate consumes a receive WQE: find one before touching memory.
    if (last && wire::has(h.opcode, wire::kNeedsRecvWqe) && !need_recv(env, qp, h)) return false;
    if (len) {
        // Looked up again for every packet: the MR may have been deregistered meanwhile.
        RemoteAccess a{target_of(env, qp).access_pd, qp.qpn, s.write_rkey, s.write_va, len,
                       IBV_ACCESS_REMOTE_WRITE};
        KeyCheck c = check_remote(env.nic(), a);
        if (!c.mr) { // deregistered (or its window unbound) since the WRITE began
            Explanation e = explain_remote(env.nic(), a);
            fatal(env, qp, h, Refusal::RemoteAccess, e.what, e.hint);
            return false;
        }
        DmaSegment seg = remote_segment(c, len);
        if (env.dma().write({&seg, 1}, 0, payload, len) != 0) {
            fatal(env, qp, h, Refusal::RemoteAccess,
                  fmt::format("writing into mr#{} failed: its memory is gone (unmapped since it "
                              "was registered)",
                              c.mr->handle));
            return false;
        }
    }
    s.write_va += len;
    s.write_remaining -= len;
    if (last && wire::has(h.opcode, wire::kNeedsRecvWqe))
        complete_recv(env, qp, h, IBV_WC_RECV_RDMA_WITH_IMM, static_cast<uint32_t>(s.write_length));
    return true;
}

void remember(Qp& qp, ReplayEntry entry) {
    ResponderState& s = qp.resp;
    if (s.replay.empty()) s.replay.resize(1);
    s.replay[s.replay_next] = entry;
    s.replay_next = (s.replay_next + 1) % s.replay.size();
}

// A duplicate READ is served again only if it asks for part of what the request it repeats
// asked for, with the same rkey (as rxe's duplicate_request checks): anything else is no
// retransmission to answer, and it is dropped (counted as a duplicate).
bool repeats(const ReplayEntry& e, const wire::Reth& reth) {
    return reth.rkey == e.rkey && reth.length <= e.length && reth.va >= e.va &&
           reth.va - e.va <= e.length - reth.length;
}

const ReplayEntry* replayed(const Qp& qp, uint32_t psn) {
    for (const ReplayEntry& e : qp.resp.replay)
        if (e.npkts && psn_diff(psn, e.psn) >= 0 && psn_diff(psn, e.psn) < int32_t(e.npkts))
            return &e;
    return nullptr;
}

// Queues the READ responses; returns false when the request was refused.
bool start_read(TransportEnv& env, Qp& qp, const wire::Headers& h, uint32_t first_psn,
                uint32_t npkts, uint32_t srqn) {
    RemoteAccess a{target_of(env, qp, srqn).access_pd,
                   qp.qpn,
                   h.reth.rkey,
                   h.reth.va,
                   h.reth.length,
                   IBV_ACCESS_REMOTE_READ};
    if (h.reth.length && !remote_mr(env.nic(), a)) {
        Explanation e = explain_remote(env.nic(), a);
        fatal(env, qp, h, Refusal::RemoteAccess, e.what, e.hint);
        return false;
    }
    ResponseJob job;
    job.kind = ResponseJob::Kind::Read;
    job.psn = job.first_psn = first_psn;
    job.last_psn = psn_add(first_psn, npkts - 1);
    job.rkey = h.reth.rkey;
    job.srqn = srqn;
    job.va = h.reth.va;
    job.remaining = h.reth.length;
    qp.resp.responses.push_back(job);
    env.schedule(qp);
    return true;
}

bool execute_atomic(TransportEnv& env, Qp& qp, const wire::Headers& h) {
    const wire::AtomicEth& a = h.atomic_eth;
    if (a.va % 8) { // atomics need an 8-byte aligned address (IBA 9.4.5): an invalid request
        fatal(env, qp, h, Refusal::InvalidRequest,
              fmt::format("the atomic's address {:#x} is not a multiple of 8", a.va));
        return false;
    }
    RemoteAccess access{target_of(env, qp).access_pd, qp.qpn, a.rkey, a.va, 8,
                        IBV_ACCESS_REMOTE_ATOMIC};
    KeyCheck c = check_remote(env.nic(), access);
    if (!c.mr) {
        Explanation e = explain_remote(env.nic(), access);
        fatal(env, qp, h, Refusal::RemoteAccess, e.what, e.hint);
        return false;
    }
    // One NIC thread executes every atomic of this host: atomic with respect to each other.
    DmaSegment seg = remote_segment(c, 8);
    const std::string gone = fmt::format(
        "the atomic on mr#{} failed: its memory is gone (unmapped since it was registered)",
        c.mr->handle);
    uint64_t original;
    if (env.dma().read({&seg, 1}, 0, reinterpret_cast<uint8_t*>(&original), 8) != 0) {
        fatal(env, qp, h, Refusal::RemoteAccess, gone);
        return false;
    }
    uint64_t value = original;
    if ((h.opcode & 0x1F) == wire::opcode::kCompareSwap) { // RC or XRC
        if (original == a.compare) value = a.swap_add;
    } else {
        value = original + a.swap_add;
    }
    if (value != original &&
        env.dma().write({&seg, 1}, 0, reinterpret_cast<uint8_t*>(&value), 8) != 0) {
        fatal(env, qp, h, Refusal::RemoteAccess, gone);
        return false;
    }
    ReplayEntry entry;
    entry.psn = h.psn;
    entry.npkts = 1;
    entry.atomic = true;
    entry.atomic_result = original;
    remember(qp, entry);
    return true;
}

void emit_atomic_ack(TransportEnv& env, Qp& qp, uint32_t psn, uint64_t original) {
    uint8_t* buf = env.packet_buffer();
    wire::Headers h;
    h.opcode = wire::opcode::make(transport_of(qp), wire::opcode::kAtomicAcknowledge);
    h.psn = psn;
    h.aeth = {wire::aeth_ack(), qp.resp.msn & wire::kPsnMask};
    h.atomic_ack = original;
    send_packet(env, qp, h, buf, 0);
}

// Sends an atomic ACK now, or queues it behind READ responses still going out.
void send_atomic_ack(TransportEnv& env, Qp& qp, uint32_t psn, uint64_t original) {
    if (qp.resp.responses.empty()) return emit_atomic_ack(env, qp, psn, original);
    env.nic().hw().add(HwCounter::AckDeferred);
    ResponseJob job;
    job.kind = ResponseJob::Kind::AtomicAck;
    job.psn = psn;
    job.atomic_result = original;
    qp.resp.responses.push_back(job);
}

// A duplicate SEND or WRITE must be ACKed again (IBA 9.7: the requester retransmits because it
// lost the ACK), but one ACK of the newest PSN answers a whole go-back-N burst (ACKs coalesce).
// So the same PSN is ACKed again at most once per kReAckIntervalUs: a genuine retransmission,
// which comes a retransmit timeout after the last, is answered; a flood of duplicates is not
// reflected to the peer packet for packet.
constexpr uint64_t kReAckIntervalUs = 1000;

bool may_reack(TransportEnv& env, Qp& qp, uint32_t psn) {
    ResponderState& s = qp.resp;
    uint64_t now = env.now_us();
    if (s.reack_at_us && s.reack_psn == psn && now - s.reack_at_us < kReAckIntervalUs) {
        count_drop(env, qp, &DropCounters::reacks_suppressed);
        return false;
    }
    s.reack_psn = psn;
    s.reack_at_us = now;
    return true;
}

void duplicate(TransportEnv& env, Qp& qp, const wire::Headers& h) {
    count_drop(env, qp, &DropCounters::duplicate_requests);
    env.nic().hw().add(HwCounter::DuplicateRequest);
    if (wire::has(h.opcode, wire::kRead)) {
        // Re-read: a retransmitted READ may resume in the middle (its RETH says where). The
        // requester went back to this PSN: what we still had queued from here on is stale.
        if (const ReplayEntry* e = replayed(qp, h.psn); e && !e->atomic && repeats(*e, h.reth)) {
            auto& q = qp.resp.responses;
            while (!q.empty() &&
                   psn_diff(q.back().kind == ResponseJob::Kind::Read ? q.back().last_psn
                                                                     : q.back().psn,
                            h.psn) >= 0)
                q.pop_back();
            start_read(env, qp, h, h.psn, e->npkts - static_cast<uint32_t>(psn_diff(h.psn, e->psn)),
                       h.xrc_srqn);
        }
        return;
    }
    if (wire::has(h.opcode, wire::kAtomic)) {
        // Answer from the cache: executing it again would change memory twice.
        if (const ReplayEntry* e = replayed(qp, h.psn); e && e->atomic && e->psn == h.psn)
            send_atomic_ack(env, qp, h.psn, e->atomic_result);
        return;
    }
    uint32_t newest = psn_add(qp.resp.epsn, -1);
    if (may_reack(env, qp, newest)) respond(env, qp, newest, wire::aeth_ack());
}

// Opcode sequence within a message (IBA 9.7.4.1.5): MIDDLE/LAST continue a FIRST of the same
// operation; FIRST/ONLY may not interrupt one.
bool sequence_ok(const Qp& qp, uint8_t opcode) {
    uint32_t cls = wire::opcode_mask(opcode) & (wire::kSend | wire::kWrite);
    bool continues = wire::has_any(opcode, wire::kMiddle) ||
                     (wire::has_any(opcode, wire::kLast) && !wire::has_any(opcode, wire::kFirst));
    if (continues) return qp.resp.in_opcode_class == cls && cls;
    return qp.resp.in_opcode_class == 0;
}

// Why sequence_ok refused `opcode`.
std::string sequence_fault(const Qp& qp, uint8_t opcode) {
    if (qp.resp.in_opcode_class == 0)
        return "a MIDDLE or LAST packet without the FIRST of its message (IBA 9.7.4.1.5)";
    const char* open = qp.resp.in_opcode_class == wire::kSend ? "SEND" : "WRITE";
    if (wire::has_any(opcode, wire::kFirst))
        return fmt::format("a new message began while a {} was in progress (IBA 9.7.4.1.5)", open);
    return fmt::format("a packet of another operation in the middle of a {} (IBA 9.7.4.1.5)", open);
}

bool access_ok(const Qp& qp, uint8_t opcode) {
    uint32_t f = qp.attr.qp_access_flags;
    if (wire::has(opcode, wire::kWrite)) return f & IBV_ACCESS_REMOTE_WRITE;
    if (wire::has(opcode, wire::kRead)) return f & IBV_ACCESS_REMOTE_READ;
    if (wire::has(opcode, wire::kAtomic)) return f & IBV_ACCESS_REMOTE_ATOMIC;
    return true;
}

} // namespace

void handle_request(TransportEnv& env, Qp& qp, const wire::Headers& h, const uint8_t* payload,
                    size_t len) {
    ResponderState& s = qp.resp;
    if (s.failing) return; // a fatal error is being reported; the QP goes to ERR next
    int32_t d = psn_diff(h.psn, s.epsn);
    if (qp.type == IBV_QPT_UC) {
        // UC: a gap loses the message in progress; the next FIRST/ONLY starts afresh.
        if (d != 0) {
            s.in_opcode_class = 0;
            s.recv.received = 0; // a partly filled receive buffer takes the next message
            s.epsn = psn_add(h.psn, 1);
            if (!wire::has(h.opcode, wire::kStart)) return;
            s.epsn = h.psn;
        }
    } else if (d > 0) {
        // Out of sequence: NAK once with the PSN we expect; drop the rest (IBA 9.7.5.1.3).
        // Behind an RNR NAK nothing was lost: the requester resends from the NAK'd PSN.
        const bool behind_rnr = s.rnr_streak > 0;
        count_drop(env, qp,
                   behind_rnr ? &DropCounters::behind_rnr_nak : &DropCounters::out_of_sequence);
        env.nic().hw().add(HwCounter::OutOfSeqRequest);
        env.log().debug("qp {:#x}: {} psn {:#x} out of sequence (expected {:#x}{}){}", qp.qpn,
                        wire::opcode_name(h.opcode), h.psn, s.epsn,
                        behind_rnr ? ", answered with an RNR NAK" : "",
                        s.nak_sent ? ", dropped" : ": NAK");
        if (!s.nak_sent) {
            s.nak_sent = true;
            ++qp.counters.naks_sent;
            env.nic().hw().add(HwCounter::NaksSent);
            respond(env, qp, s.epsn, wire::aeth_nak(wire::NakCode::PsnSequenceError));
        }
        return;
    } else if (d < 0) {
        duplicate(env, qp, h);
        return;
    }
    if (qp.type == IBV_QPT_XRC_RECV) {
        // The XRCETH names the XRC SRQ that takes the request (its receives, PD and CQ): it
        // must exist and be in this QP's XRC domain, and stay the same within a message.
        bool continues = s.in_opcode_class != 0 && !wire::has_any(h.opcode, wire::kStart);
        if (!xrc_srq(env, qp, h.xrc_srqn) || (continues && h.xrc_srqn != s.srqn)) {
            ++qp.counters.xrc_srq_errors;
            fatal(env, qp, h, Refusal::InvalidRequest,
                  continues ? fmt::format("XRC SRQ {:#x} named in the middle of a message to SRQ "
                                          "{:#x}",
                                          h.xrc_srqn, s.srqn)
                            : fmt::format("XRC SRQ {:#x} does not exist or is not of the QP's XRC "
                                          "domain",
                                          h.xrc_srqn));
            return;
        }
        if (!continues) s.srqn = h.xrc_srqn;
    }
    if (!sequence_ok(qp, h.opcode)) {
        if (qp.type == IBV_QPT_UC) { // UC drops the broken message
            s.in_opcode_class = 0;
            s.recv.received = 0;
            s.epsn = psn_add(h.psn, 1);
            return;
        }
        fatal(env, qp, h, Refusal::InvalidRequest, sequence_fault(qp, h.opcode));
        return;
    }
    if (!access_ok(qp, h.opcode)) {
        uint32_t need = wire::has(h.opcode, wire::kWrite)  ? IBV_ACCESS_REMOTE_WRITE
                        : wire::has(h.opcode, wire::kRead) ? IBV_ACCESS_REMOTE_READ
                                                           : IBV_ACCESS_REMOTE_ATOMIC;
        fatal(env, qp, h, Refusal::InvalidRequest,
              fmt::format("the QP does not allow {}: its qp_access_flags are {} (set them at "
                          "RESET->INIT)",
                          emu::names::access_flags(need),
                          emu::names::access_flags(qp.attr.qp_access_flags)));
        return;
    }
    bool needs_payload_check = wire::has_any(h.opcode, wire::kSend | wire::kWrite);
    // An ATOMIC WRITE moves exactly 8 naturally aligned bytes (IBA 1.5 9.4.6).
    bool bad_atomic_write = (h.opcode & 0x1F) == wire::opcode::kAtomicWrite &&
                            ((h.reth.va & 7) != 0 || h.reth.length != 8 || len != 8);
    if (bad_atomic_write) {
        fatal(env, qp, h, Refusal::InvalidRequest,
              fmt::format("an ATOMIC WRITE must move 8 bytes to an 8-byte aligned address, not {} "
                          "bytes to {:#x}",
                          h.reth.length, h.reth.va));
        return;
    }
    if (needs_payload_check && !payload_size_ok(qp, h.opcode, len)) {
        fatal(env, qp, h, Refusal::InvalidRequest,
              fmt::format("a packet of {} payload bytes where the path MTU {} says {} (IBA "
                          "C9-24..C9-26)",
                          len, mtu_bytes(qp),
                          wire::has_any(h.opcode, wire::kLast) ? "at most that" : "exactly that"));
        return;
    }
    uint32_t next = psn_add(h.psn, 1);
    bool ok = true;
    if (wire::has(h.opcode, wire::kSend)) {
        ok = execute_send(env, qp, h, payload, len);
    } else if (wire::has(h.opcode, wire::kWrite)) {
        ok = execute_write(env, qp, h, payload, len);
    } else if (wire::has(h.opcode, wire::kRead)) {
        uint32_t mtu = mtu_bytes(qp);
        uint32_t npkts = h.reth.length ? (h.reth.length + mtu - 1) / mtu : 1;
        ok = start_read(env, qp, h, h.psn, npkts, s.srqn);
        if (ok) {
            ReplayEntry entry;
            entry.psn = h.psn;
            entry.npkts = npkts;
            entry.va = h.reth.va;
            entry.rkey = h.reth.rkey;
            entry.length = h.reth.length;
            remember(qp, entry);
            next = psn_add(h.psn, npkts);
        }
    } else if (wire::has(h.opcode, wire::kAtomic)) {
        ok = execute_atomic(env, qp, h);
    }
    if (!ok) return; // answered already (RNR NAK, NAK)
    s.nak_sent = false;
    s.epsn = next;
    bool first = wire::has_any(h.opcode, wire::kFirst), last = wire::has_any(h.opcode, wire::kLast);
    if (first && !last)
        s.in_opcode_class = wire::opcode_mask(h.opcode) & (wire::kSend | wire::kWrite);
    if (last) {
        s.in_opcode_class = 0;
        s.msn = (s.msn + 1) & wire::kPsnMask;
    }
    if (!is_rc(qp)) return;
    if (wire::has(h.opcode, wire::kAtomic))
        send_atomic_ack(
            env, qp, h.psn,
            s.replay[(s.replay_next + s.replay.size() - 1) % s.replay.size()].atomic_result);
    else if (h.ack_req && !wire::has(h.opcode, wire::kRead))
        respond(env, qp, h.psn, wire::aeth_ack());
}

bool send_read_responses(TransportEnv& env, Qp& qp, int& budget) {
    ResponderState& s = qp.resp;
    uint32_t mtu = mtu_bytes(qp);
    while (budget > 0 && !s.responses.empty()) {
        ResponseJob& job = s.responses.front();
        if (job.kind != ResponseJob::Kind::Read) {
            ResponseJob ack = job;
            s.responses.pop_front();
            if (ack.kind == ResponseJob::Kind::Ack)
                send_ack(env, qp, ack.psn, ack.syndrome);
            else
                emit_atomic_ack(env, qp, ack.psn, ack.atomic_result);
            --budget;
            continue;
        }
        bool first = job.psn == job.first_psn, last = job.psn == job.last_psn;
        uint8_t* buf = env.packet_buffer();
        wire::Headers h;
        h.opcode = *wire::opcode_for(transport_of(qp), wire::Operation::ReadResponse,
                                     wire::position_of(first, last));
        h.psn = job.psn;
        h.aeth = {wire::aeth_ack(), s.msn & wire::kPsnMask};
        size_t len = static_cast<size_t>(std::min<uint64_t>(mtu, job.remaining));
        if (len) {
            // Looked up again for every packet: the MR may have been deregistered meanwhile.
            RemoteAccess a{target_of(env, qp, job.srqn).access_pd,
                           qp.qpn,
                           job.rkey,
                           job.va,
                           len,
                           IBV_ACCESS_REMOTE_READ};
            KeyCheck c = check_remote(env.nic(), a);
            Mr* mr = c.mr;
            DmaSegment seg = mr ? remote_segment(c, len) : DmaSegment{0, len, nullptr};
            if (!mr ||
                env.dma().read({&seg, 1}, 0, buf + wire::header_length(h.opcode), len) != 0) {
                s.responses.clear();
                if (mr)
                    fatal(env, qp, h, Refusal::RemoteAccess,
                          fmt::format("reading mr#{} for the READ failed: its memory is gone "
                                      "(unmapped since it was registered)",
                                      mr->handle));
                else {
                    Explanation e = explain_remote(env.nic(), a);
                    fatal(env, qp, h, Refusal::RemoteAccess, e.what, e.hint);
                }
                return false;
            }
        }
        send_packet(env, qp, h, buf, len);
        --budget;
        job.va += len;
        job.remaining -= len;
        if (last)
            s.responses.pop_front();
        else
            job.psn = psn_add(job.psn, 1);
    }
    if (s.responses.empty() && s.failing) {
        to_error(env, qp, qp.error_reason);
        return false;
    }
    return !s.responses.empty();
}

} // namespace nicsim::transport
