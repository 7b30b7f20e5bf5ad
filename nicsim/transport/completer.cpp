// The completer: matches ACKs, NAKs, READ responses and atomic ACKs to outstanding requests,
// writes their data back, and completes WRs in order (IBA 9.7.5).
#include "emu/wire/psn.h"
#include "engines.h"
#include "memory_access.h"
#include "nic/nic.h"
#include "objects/session_objects.h"
#include "reasons.h"
#include "tag_matching.h"

#include <spdlog/fmt/fmt.h>

#include <cstring>

namespace nicsim::transport {

namespace wire = emu::wire;
using wire::psn_add;
using wire::psn_diff;

namespace {

uint32_t last_psn(const SendOp& op) {
    return psn_add(op.first_psn, op.npkts - 1);
}

// A READ's or atomic's local buffers, resolved when its first response data comes: their lkeys
// are checked as hardware checks them, on the scatter (requester.cpp, take). False, with the op
// failed with IBV_WC_LOC_PROT_ERR, when an SGE names no usable MR.
bool resolve_response_buffers(TransportEnv& env, Qp& qp, SendOp& op) {
    if (!op.local_pending) return true;
    op.local_pending = false;
    const auto* sges = op.response_sges.data();
    const auto n = static_cast<uint32_t>(op.response_sges.size());
    uint64_t total = 0;
    if (resolve_local(env.nic(), qp.pd, sges, n, IBV_ACCESS_LOCAL_WRITE, op.local, &total) ==
        IBV_WC_SUCCESS)
        return true;
    fail_op(env, qp, op, IBV_WC_LOC_PROT_ERR,
            fmt::format("the {}'s response found no buffer to land in: {}", op.info().operation,
                        explain_local(env.nic(), qp.pd, sges, n, IBV_ACCESS_LOCAL_WRITE).text()));
    return false;
}

// Goes back to `psn` unless it already did so for this PSN: the stale packets still arriving
// from before must not trigger it again and again (the retransmit timer covers a lost retry).
void retransmit_once(TransportEnv& env, Qp& qp, uint32_t psn) {
    RequesterState& r = qp.req;
    if (r.rerequested && r.rerequest_psn == psn) return;
    r.rerequested = true;
    r.rerequest_psn = psn;
    env.nic().hw().add(HwCounter::CompleterRetryErr); // rxe: COMPST_ERROR_RETRY
    retransmit_from(env, qp, psn);
}

// Every SEND/WRITE up to and including `psn` is acknowledged. The oldest unacknowledged PSN
// never moves past a READ or atomic still waiting for its response: an ACK beyond one means
// the request or its response was lost (IBA 9.7.5.1.2: an implied NAK), and it is resent.
void acknowledge_through(TransportEnv& env, Qp& qp, uint32_t psn) {
    RequesterState& r = qp.req;
    uint32_t una = r.una_psn;
    auto advance = [&una](uint32_t next) {
        if (psn_diff(next, una) > 0) una = next;
    };
    bool implied_nak = false;
    for (SendOp& op : r.ops) {
        if (!op.started) break;
        if (op.done) continue; // local operations (BIND_MW, LOCAL_INV) have no PSNs
        if (psn_diff(op.first_psn, psn) > 0) break;
        if (op.reads()) {
            implied_nak = true;
            break;
        }
        if (psn_diff(last_psn(op), psn) > 0) { // only partly acknowledged
            advance(psn_add(psn, 1));
            break;
        }
        op.done = true;
        advance(psn_add(last_psn(op), 1));
    }
    if (una != r.una_psn) {
        // Progress: the retries count afresh (rxe's reset_retry_counters), or RNR NAKs spread
        // over a connection's life add up until one fails a message it had never refused.
        r.una_psn = una;
        r.retry_left = qp.attr.retry_cnt;
        r.rnr_left = qp.attr.rnr_retry;
        r.rnr_streak = 0;
    }
    if (implied_nak) retransmit_once(env, qp, r.una_psn);
}

// The outstanding WR whose PSNs include `psn`; nullptr when none does.
SendOp* op_at(Qp& qp, uint32_t psn) {
    for (SendOp& op : qp.req.ops) {
        if (!op.started || op.done) continue;
        if (psn_diff(psn, op.first_psn) >= 0 && psn_diff(psn, last_psn(op)) <= 0) return &op;
    }
    return nullptr;
}

SendOp* oldest_outstanding(Qp& qp) {
    for (SendOp& op : qp.req.ops)
        if (!op.done) return &op;
    return nullptr;
}

// What the responder refused, from its own words when its NIC told ours (the usual case: both
// hosts on one machine), else from the NAK's code alone. The keys it names come along only
// when the responder's QP is the same user's.
std::string refused_by_responder(TransportEnv& env, Qp& qp, const SendOp& op,
                                 const wire::Headers& h, wire::NakCode code) {
    const char* what = op.info().operation;
    if (std::optional<PeerReason> peer = env.peer_reason(dest_addr(qp), qp.qpn, h.psn)) {
        std::string text = fmt::format("the responder refused the {}: {}", what, peer->what);
        if (!peer->hint.empty() && qp.owner && qp.owner->uid == peer->owner_uid)
            text += "; " + peer->hint;
        return text;
    }
    return fmt::format("the responder ({}) refused the {} with {}", peer_of(qp), what,
                       nak_meaning(code));
}

// An RNR NAK: the peer has no receive posted. Said at the first of a streak, then at 10, 100,
// ... (at most once a second), so a QP that retries forever (rnr_retry 7) does not hang
// silently.
void notice_rnr(TransportEnv& env, Qp& qp, const SendOp& op) {
    RequesterState& r = qp.req;
    uint64_t now = env.now_us();
    if (!notice_due(r.rnr_streak) || (r.rnr_noticed_us && now - r.rnr_noticed_us < 1000000)) return;
    r.rnr_noticed_us = now;
    std::string retries = qp.attr.rnr_retry == 7
                              ? "rnr_retry 7 retries forever"
                              : fmt::format("rnr_retry {}: {} left", qp.attr.rnr_retry, r.rnr_left);
    explain(env, qp, emu::ipc::ReasonKind::Notice, "",
            fmt::format("the peer ({}) has no receive posted for the {} wr_id {} ({} so far); {}",
                        peer_of(qp), op.info().operation, op.wqe.wr_id,
                        count_of(r.rnr_streak, "RNR NAK"), retries));
}

// A response that answers nothing this QP asked (IBA 9.7.5.1: a ghost): ignored and counted.
void drop_ghost(TransportEnv& env, Qp& qp, const wire::Headers& h, const char* why) {
    const RequesterState& r = qp.req;
    count_drop(env, qp, &DropCounters::ghost_responses);
    if (r.una_psn == r.sent_end_psn)
        return env.log().debug("qp {:#x}: ghost {} psn {:#x} dropped: {} (nothing outstanding)",
                               qp.qpn, wire::opcode_name(h.opcode), h.psn, why);
    env.log().debug("qp {:#x}: ghost {} psn {:#x} dropped: {} (outstanding psn {:#x}..{:#x})",
                    qp.qpn, wire::opcode_name(h.opcode), h.psn, why, r.una_psn,
                    psn_add(r.sent_end_psn, -1));
}

// The oldest READ or atomic still waiting for its response.
SendOp* pending_read(Qp& qp) {
    for (SendOp& op : qp.req.ops)
        if (op.started && !op.done && op.reads()) return &op;
    return nullptr;
}

void handle_nak(TransportEnv& env, Qp& qp, const wire::Headers& h) {
    wire::Syndrome s = wire::classify(h.aeth.syndrome);
    RequesterState& r = qp.req;
    if (h.psn != r.una_psn) acknowledge_through(env, qp, psn_add(h.psn, -1));
    if (s.kind == wire::SyndromeKind::RnrNak) {
        ++qp.counters.rnr_naks_received;
        env.nic().hw().add(HwCounter::RcvdRnrErr);
        SendOp* op = op_at(qp, h.psn);
        ++r.rnr_streak;
        if (r.rnr_left == 0) {
            if (!op) return drop_ghost(env, qp, h, "no outstanding WR has that PSN");
            env.nic().hw().add(HwCounter::RetryRnrExceededErr);
            fail_op(env, qp, *op, IBV_WC_RNR_RETRY_EXC_ERR,
                    fmt::format("the peer ({}) has no receive posted: {}, and rnr_retry {} allows "
                                "no more retries",
                                peer_of(qp), count_of(r.rnr_streak, "RNR NAK"), qp.attr.rnr_retry));
            return;
        }
        if (qp.attr.rnr_retry != 7) --r.rnr_left; // 7 means retry forever
        if (op) notice_rnr(env, qp, *op);
        r.timer_at_us = 0;
        r.rnr_until_us = env.now_us() + wire::rnr_timer_us(s.value);
        env.set_timer(qp, r.rnr_until_us);
        return;
    }
    ++qp.counters.naks_received;
    env.nic().hw().add(HwCounter::NaksReceived);
    ibv_wc_status status = IBV_WC_REM_OP_ERR;
    auto code = static_cast<wire::NakCode>(s.value);
    switch (code) {
    case wire::NakCode::PsnSequenceError:
        env.nic().hw().add(HwCounter::RcvdSeqErr);
        retransmit_once(env, qp, r.una_psn);
        return;
    case wire::NakCode::InvalidRequest:
        status = IBV_WC_REM_INV_REQ_ERR;
        break;
    case wire::NakCode::RemoteAccessError:
        status = IBV_WC_REM_ACCESS_ERR;
        break;
    default:
        break;
    }
    SendOp* op = op_at(qp, h.psn);
    if (!op) return drop_ghost(env, qp, h, "no outstanding WR has that PSN");
    fail_op(env, qp, *op, status, refused_by_responder(env, qp, *op, h, code));
}

void handle_read_response(TransportEnv& env, Qp& qp, const wire::Headers& h, const uint8_t* payload,
                          size_t len) {
    SendOp* op = pending_read(qp);
    if (!op) return drop_ghost(env, qp, h, "no READ is waiting for its response");
    if (!op->has(emu::kWrRead)) return; // a later READ's: the atomic's ACK was lost
    uint32_t mtu = mtu_bytes(qp);
    uint32_t expected = psn_add(op->first_psn, static_cast<int64_t>(op->response_bytes / mtu));
    int32_t d = psn_diff(h.psn, expected);
    if (d < 0) return; // a duplicate of data we have
    if (d > 0) {
        retransmit_once(env, qp, expected); // responses were lost: ask again from there
        return;
    }
    if (!wire::has_any(h.opcode, wire::kMiddle))
        acknowledge_through(env, qp, psn_add(op->first_psn, -1));
    // Only the READ's final packet may be short (its requests may be several, see kReadChunk).
    uint64_t room = op->length - op->response_bytes;
    bool last = len == room;
    if (len > room || (!last && len != mtu)) { // the responder broke the protocol
        fail_op(env, qp, *op, IBV_WC_REM_OP_ERR,
                fmt::format("the responder ({}) sent a READ response of {} bytes where {} were "
                            "due",
                            peer_of(qp), len, last || len > room ? room : mtu));
        return;
    }
    if (len) {
        if (!resolve_response_buffers(env, qp, *op)) return;
        if (env.dma().write(op->local, op->response_bytes, payload, len) != 0) {
            fail_op(env, qp, *op, IBV_WC_LOC_PROT_ERR,
                    "writing the READ's data into the local SGEs failed: their memory is gone "
                    "(unmapped since it was registered)");
            return;
        }
    }
    op->response_bytes += len;
    // An in-order response acknowledges its PSN: the window moves on within a long READ.
    if (psn_diff(psn_add(h.psn, 1), qp.req.una_psn) > 0) qp.req.una_psn = psn_add(h.psn, 1);
    qp.req.retry_left = qp.attr.retry_cnt;
    if (last) {
        op->done = true;
        --qp.req.reads_outstanding;
        if (psn_diff(psn_add(h.psn, 1), qp.req.una_psn) > 0) qp.req.una_psn = psn_add(h.psn, 1);
        qp.req.retry_left = qp.attr.retry_cnt;
    }
}

void handle_atomic_ack(TransportEnv& env, Qp& qp, const wire::Headers& h) {
    SendOp* op = pending_read(qp);
    if (!op || op->has(emu::kWrRead) || h.psn != op->first_psn) return;
    acknowledge_through(env, qp, psn_add(op->first_psn, -1));
    uint64_t original = h.atomic_ack; // written back in host order, as verbs apps read it
    if (!resolve_response_buffers(env, qp, *op)) {
        --qp.req.reads_outstanding;
        return;
    }
    if (env.dma().write(op->local, 0, reinterpret_cast<const uint8_t*>(&original), 8) != 0)
        fail_op(env, qp, *op, IBV_WC_LOC_PROT_ERR,
                "writing the atomic's original value into the local SGE failed: its memory is "
                "gone (unmapped since it was registered)");
    op->done = true;
    --qp.req.reads_outstanding;
    if (psn_diff(psn_add(h.psn, 1), qp.req.una_psn) > 0) qp.req.una_psn = psn_add(h.psn, 1);
    qp.req.retry_left = qp.attr.retry_cnt;
}

// Where a response's PSN lies (IBA 9.7.5.1): answering a request still outstanding, a
// duplicate of one acknowledged already (the 2^23 PSNs before the oldest unacknowledged one),
// or beyond every PSN sent.
enum class ResponsePsn { Outstanding, Duplicate, Ghost };

ResponsePsn place_of(const RequesterState& r, uint32_t psn) {
    if (psn_diff(psn, r.una_psn) < 0) return ResponsePsn::Duplicate;
    if (psn_diff(psn, r.sent_end_psn) >= 0) return ResponsePsn::Ghost;
    return ResponsePsn::Outstanding;
}

// Whether a WR has PSNs that wait for a response. WRs start in posting order, so every one
// started and not done comes before the first that has not started (the ones behind it that
// failed their local checks are done); the done ones at the front are gone once they complete,
// so this looks at one or two per packet, not at the whole send queue.
bool has_outstanding(const RequesterState& r) {
    for (const SendOp& op : r.ops) {
        if (!op.started) return false;
        if (!op.done) return true;
    }
    return false;
}

} // namespace

void handle_response(TransportEnv& env, Qp& qp, const wire::Headers& h, const uint8_t* payload,
                     size_t len) {
    if (!reliable(qp)) return;
    RequesterState& r = qp.req;
    switch (place_of(r, h.psn)) {
    case ResponsePsn::Duplicate: // harmless: it acknowledges nothing new
        count_drop(env, qp, &DropCounters::duplicate_responses);
        return;
    case ResponsePsn::Ghost:
        return drop_ghost(env, qp, h, "beyond the PSNs sent");
    case ResponsePsn::Outstanding:
        break;
    }
    uint32_t una_before = r.una_psn;
    size_t ops_before = r.ops.size();
    if (wire::has(h.opcode, wire::kReadResponse)) {
        handle_read_response(env, qp, h, payload, len);
    } else if (wire::has(h.opcode, wire::kAtomicAck)) {
        handle_atomic_ack(env, qp, h);
    } else if (wire::has(h.opcode, wire::kAck)) {
        if (wire::classify(h.aeth.syndrome).kind == wire::SyndromeKind::Ack)
            acknowledge_through(env, qp, h.psn);
        else
            handle_nak(env, qp, h);
    }
    complete_ready(env, qp);
    // Progress restarts the retransmit timer (stale packets do not); nothing outstanding stops
    // it.
    bool progress = r.una_psn != una_before || r.ops.size() != ops_before;
    bool outstanding = has_outstanding(r);
    if (!r.rnr_until_us) {
        if (outstanding && (progress || !r.timer_at_us))
            arm_retransmit_timer(env, qp);
        else if (!outstanding && r.timer_at_us) {
            r.timer_at_us = 0;
            env.set_timer(qp, 0);
        }
    }
    if (qp.attr.qp_state == IBV_QPS_RTS) env.schedule(qp);
}

void complete_ready(TransportEnv& env, Qp& qp) {
    RequesterState& r = qp.req;
    while (!r.ops.empty() && r.ops.front().done) {
        SendOp op = std::move(r.ops.front());
        r.ops.pop_front();
        if (r.cursor) --r.cursor;
        if (op.internal != SendOp::Internal::None) {
            tm::internal_done(env, qp, op);
            // A rendezvous too large for its tag fails that tag alone; transport errors end
            // the connection as for any request.
            if (op.status != IBV_WC_SUCCESS && op.status != IBV_WC_LOC_LEN_ERR) {
                to_error(env, qp, op.reason);
                return;
            }
            continue;
        }
        // The slot is free for the app only now, as on hardware, and before the completion
        // is visible: an app that polls it may post again at once.
        qp.sq.header->consumer.store(op.sq_index + 1, std::memory_order_release);
        if (op.signaled(qp.sq_sig_all)) {
            ibv_wc wc{};
            wc.wr_id = op.wqe.wr_id;
            wc.status = op.status;
            wc.opcode = op.info().wc_opcode;
            wc.byte_len = op.has(emu::kWrRead)     ? static_cast<uint32_t>(op.length)
                          : op.has(emu::kWrAtomic) ? 8
                                                   : 0;
            wc.qp_num = qp.qpn;
            post_completion(env, *qp.send_cq, wc, false, 0, op.reason);
        }
        if (op.status != IBV_WC_SUCCESS) {
            // The error completion is the report (no async event); the QP stops (IBA 10.8.3).
            to_error(env, qp, op.reason);
            return;
        }
        if (op.has(emu::kWrSend)) env.nic().hw().add(HwCounter::RdmaSends);
    }
}

void on_timer(TransportEnv& env, Qp& qp) {
    RequesterState& r = qp.req;
    uint64_t now = env.now_us();
    if (r.rnr_until_us) {
        if (now < r.rnr_until_us) return env.set_timer(qp, r.rnr_until_us);
        r.rnr_until_us = 0;
        count_in_flight(env, qp); // what it sends again counts again
        retransmit_from(env, qp, r.una_psn);
        return;
    }
    if (!r.timer_at_us) return;
    if (now < r.timer_at_us) return env.set_timer(qp, r.timer_at_us);
    r.timer_at_us = 0;
    if (!has_outstanding(r)) return;
    ++qp.counters.timeouts;
    env.nic().hw().add(HwCounter::Timeouts);
    if (r.retry_left == 0) {
        env.nic().hw().add(HwCounter::RetryExceededErr);
        if (SendOp* op = oldest_outstanding(qp)) {
            uint64_t timeout_us = (4096ull << qp.attr.timeout) / 1000;
            fail_op(env, qp, *op, IBV_WC_RETRY_EXC_ERR,
                    fmt::format("no response from the peer ({}) for psn {:#x}: sent {} times, "
                                "{:.1f} ms apart (timeout {}, retry_cnt {}); its NIC or QP is "
                                "gone, is not in RTR, or the path drops every packet",
                                peer_of(qp), r.una_psn, qp.attr.retry_cnt + 1,
                                double(timeout_us) / 1000, qp.attr.timeout, qp.attr.retry_cnt));
        }
        complete_ready(env, qp);
        return;
    }
    // retry_cnt 7 is 7 retries, as on hardware (rxe retries forever; only rnr_retry 7 means
    // that in IBA): a dead peer ends in RETRY_EXC_ERR after timeout x (retry_cnt + 1).
    --r.retry_left;
    r.rerequested = false; // the timer's retry stands for any lost one
    env.nic().hw().add(HwCounter::CompleterRetryErr);
    retransmit_from(env, qp, r.una_psn);
    arm_retransmit_timer(env, qp);
}

} // namespace nicsim::transport
