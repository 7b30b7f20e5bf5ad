// What the RC engines share: entry points, packet output, and the error state.
#include "emu/wire/psn.h"
#include "engines.h"
#include "nic/nic.h"
#include "objects/session_objects.h"
#include "reasons.h"
#include "recv_queue.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace nicsim::transport {

namespace wire = emu::wire;

bool reliable(const Qp& qp) {
    return qp.type == IBV_QPT_RC || qp.type == IBV_QPT_XRC_SEND || qp.type == IBV_QPT_XRC_RECV;
}

wire::Transport transport_of(const Qp& qp) {
    switch (qp.type) {
    case IBV_QPT_UC:
        return wire::Transport::UC;
    case IBV_QPT_XRC_SEND:
    case IBV_QPT_XRC_RECV:
        return wire::Transport::XRC;
    default:
        return wire::Transport::RC;
    }
}

Srq* xrc_srq(TransportEnv& env, const Qp& qp, uint32_t srqn) {
    Srq* srq = env.nic().srq_by_number(srqn);
    if (!srq || srq->type != IBV_SRQT_XRC || !srq->xrcd || srq->xrcd->xrcd != qp.domain)
        return nullptr;
    return srq;
}

Cq* recv_cq_of(TransportEnv& env, const Qp& qp) {
    if (qp.type != IBV_QPT_XRC_RECV) return qp.recv_cq;
    Srq* srq = xrc_srq(env, qp, qp.resp.srqn);
    return srq ? srq->cq : nullptr;
}

void qp_event(TransportEnv& env, Qp& qp, ibv_event_type type, uint32_t reason) {
    if (qp.owner) env.async_event(qp.owner->async_fd_of(qp.pid), type, qp.handle, reason);
    // Another session's reason ring knows nothing of this id.
    for (Qp* opener : qp.openers)
        if (opener->owner)
            env.async_event(opener->owner->async_fd_of(opener->pid), type, opener->handle,
                            opener->owner == qp.owner ? reason : 0);
}

void count_drop(TransportEnv& env, Qp& qp, uint64_t DropCounters::*which) {
    ++(qp.counters.drops.*which);
    ++(env.nic().drops().*which);
}

uint32_t mtu_bytes(const Qp& qp) {
    return 128u << static_cast<uint32_t>(qp.attr.path_mtu);
}

emu::wire::IpAddress dest_addr(const Qp& qp) {
    return emu::wire::IpAddress::from_gid(qp.attr.ah_attr.grh.dgid.raw);
}

void send_packet(TransportEnv& env, Qp& qp, wire::Headers& h, uint8_t* buf, size_t payload_len) {
    h.dest_qpn = qp.attr.dest_qp_num;
    h.pkey = wire::kDefaultPkey;
    size_t len = wire::build_in_place(h, payload_len, buf);
    ++qp.counters.tx_packets;
    qp.counters.tx_bytes += payload_len; // payload bytes, as rx_bytes
    env.transmit(qp, dest_addr(qp), buf, len, qp.attr.ah_attr.grh.traffic_class);
}

void send_ack(TransportEnv& env, Qp& qp, uint32_t psn, uint8_t syndrome) {
    uint8_t* buf = env.packet_buffer();
    wire::Headers h;
    h.opcode = wire::opcode::make(transport_of(qp), wire::opcode::kAcknowledge);
    h.psn = psn & wire::kPsnMask;
    h.aeth = {syndrome, qp.resp.msn & wire::kPsnMask};
    send_packet(env, qp, h, buf, 0);
}

namespace {

// The cause the flushed WRs of `qp` carry: the failure that took it to ERR, or else the app's
// own move (ibv_modify_qp), said once.
uint32_t flush_cause(TransportEnv& env, Qp& qp, size_t flushed) {
    if (qp.error_reason || flushed == 0) return qp.error_reason;
    qp.error_reason = explain(env, qp, emu::ipc::ReasonKind::Completion, "flushed",
                              "ibv_modify_qp moved the QP to ERR; its WRs complete flushed");
    return qp.error_reason;
}

ibv_wc flush_wc(const Qp& qp, uint64_t wr_id, ibv_wc_opcode opcode) {
    ibv_wc wc{};
    wc.wr_id = wr_id;
    wc.status = IBV_WC_WR_FLUSH_ERR;
    wc.opcode = opcode;
    wc.qp_num = qp.qpn;
    return wc;
}

} // namespace

void flush(TransportEnv& env, Qp& qp) {
    // Send side: what was fetched, then what is still in the ring. Slots are released before
    // their completions are visible (an app that polls one may post again at once).
    RequesterState& r = qp.req;
    std::vector<uint64_t> flushed;
    std::vector<uint64_t> rndv_flushed; // the tags' receives of rendezvous READs in flight
    for (const SendOp& op : r.ops) {
        if (op.internal == SendOp::Internal::None)
            flushed.push_back(op.wqe.wr_id);
        else if (op.internal == SendOp::Internal::RndvRead && qp.recv_cq)
            rndv_flushed.push_back(op.wqe.wr_id);
    }
    r.ops.clear();
    r.cursor = 0;
    r.reads_outstanding = 0;
    emu::ipc::RingHeader* sq = qp.sq.header;
    uint32_t producer = sq->producer.load(std::memory_order_acquire);
    if (producer - r.fetch_index > qp.sq.entries) producer = r.fetch_index + qp.sq.entries;
    for (; r.fetch_index != producer; ++r.fetch_index) {
        emu::ipc::SendWqe w;
        std::memcpy(&w, qp.sq.slot(r.fetch_index), sizeof w);
        flushed.push_back(w.wr_id);
    }
    sq->consumer.store(r.fetch_index, std::memory_order_release);
    // Receive side: the QP's own RQ (an SRQ's WQEs stay for its other QPs).
    std::vector<uint64_t> recv_flushed;
    if (qp.resp.have_recv) {
        recv_flushed.push_back(qp.resp.recv.wr_id);
        qp.resp.have_recv = false;
    }
    if (qp.rq.entries)
        for (uint64_t wr_id : drain_recvs(qp.rq))
            recv_flushed.push_back(wr_id);
    uint32_t cause =
        flush_cause(env, qp, flushed.size() + rndv_flushed.size() + recv_flushed.size());
    for (uint64_t wr_id : rndv_flushed)
        post_completion(env, *qp.recv_cq, flush_wc(qp, wr_id, IBV_WC_TM_RECV), false, 0, cause);
    if (qp.send_cq) // an XRC_RECV QP has none (and nothing posts to its SQ)
        for (uint64_t wr_id : flushed)
            post_completion(env, *qp.send_cq, flush_wc(qp, wr_id, IBV_WC_SEND), false, 0, cause);
    if (Cq* cq = recv_cq_of(env, qp))
        for (uint64_t wr_id : recv_flushed)
            post_completion(env, *cq, flush_wc(qp, wr_id, IBV_WC_RECV), false, 0, cause);
    qp.resp.responses.clear();
    qp.resp.failing = false;
    count_in_flight(env, qp); // nothing it sent is waited for any more
}

void to_error(TransportEnv& env, Qp& qp, uint32_t reason) {
    if (qp.attr.qp_state == IBV_QPS_ERR) return;
    qp.error_reason = reason;
    qp.attr.qp_state = IBV_QPS_ERR;
    qp.attr.cur_qp_state = IBV_QPS_ERR;
    qp.req.timer_at_us = 0;
    env.set_timer(qp, 0);
    flush(env, qp);
}

void doorbell(TransportEnv& env, Qp& qp) {
    if (qp.shared) return; // an ibv_open_qp handle has no queues: its QP's entry is kicked
    switch (qp.attr.qp_state) {
    case IBV_QPS_ERR:
        flush(env, qp);
        break;
    case IBV_QPS_RTS:
        env.schedule(qp);
        break;
    default:
        break; // work waits until the QP can send
    }
}

bool run(TransportEnv& env, Qp& qp, int budget) {
    if (qp.attr.qp_state == IBV_QPS_ERR) return false;
    bool more = send_read_responses(env, qp, budget);
    if (qp.attr.qp_state == IBV_QPS_RTS) {
        fetch(env, qp);
        more = transmit(env, qp, budget) || more;
    } else {
        end_turn(env, qp); // (a turn given while it was in SQD)
    }
    return more;
}

void receive(TransportEnv& env, Qp& qp, const wire::Headers& h, const uint8_t* payload,
             size_t len) {
    ++qp.counters.rx_packets;
    qp.counters.rx_bytes += len;
    if (wire::has(h.opcode, wire::kRequest)) {
        // Requests need a receive side: RTR or later (IBA 10.3.1).
        ibv_qp_state s = qp.attr.qp_state;
        if (s == IBV_QPS_RTR || s == IBV_QPS_RTS || s == IBV_QPS_SQD || s == IBV_QPS_SQE)
            handle_request(env, qp, h, payload, len);
    } else if (qp.attr.qp_state == IBV_QPS_RTS || qp.attr.qp_state == IBV_QPS_SQD) {
        handle_response(env, qp, h, payload, len);
        count_in_flight(env, qp);
    }
}

namespace {

// What the QP's turn did not send goes back to the window (the escape's was never reserved).
void return_turn(Nic& nic, RequesterState& r) {
    if (!r.window_escape) nic.window_reserved() -= r.turn_bytes;
    r.turn_bytes = 0;
}

void drop_escape(Nic& nic, RequesterState& r) {
    if (!r.window_escape) return;
    r.window_escape = false;
    nic.window_escape_qpn() = 0;
}

// The escape's packets are all sent and acknowledged: the next QP may escape.
void escape_done(Nic& nic, RequesterState& r) {
    if (!r.turn_bytes && !r.counted_in_flight) drop_escape(nic, r);
}

// Whether any QP may send: none waits for a turn, and the window has room.
bool window_open_to_all(Nic& nic) {
    return nic.window_queue().empty() &&
           nic.bytes_in_flight() + nic.window_reserved() < host_window_bytes(nic);
}

} // namespace

void count_in_flight(TransportEnv& env, Qp& qp) {
    RequesterState& r = qp.req;
    const bool sending =
        reliable(qp) && (qp.attr.qp_state == IBV_QPS_RTS || qp.attr.qp_state == IBV_QPS_SQD ||
                         qp.attr.qp_state == IBV_QPS_SQE);
    // Waiting out an RNR NAK, nothing is in flight: the responder drops what followed the PSN
    // it refused (IBA 9.7.5.2.8), which is sent again when the wait ends.
    const int32_t span =
        sending && !r.rnr_until_us ? emu::wire::psn_diff(r.sent_end_psn, r.una_psn) : 0;
    const uint64_t now = span > 0 ? uint64_t(span) * mtu_bytes(qp) : 0;
    Nic& nic = env.nic();
    uint64_t& host = nic.bytes_in_flight();
    const bool given_back = now < r.counted_in_flight;
    host = host - r.counted_in_flight + now;
    r.counted_in_flight = now;
    if (!sending) leave_window(nic, qp);
    escape_done(nic, r);
    if (given_back || !sending) serve_window_queue(env);
}

uint32_t window_of(TransportEnv& env, const Qp& qp) {
    const RequesterState& r = qp.req;
    const int32_t span = std::max<int32_t>(0, emu::wire::psn_diff(r.sent_end_psn, r.una_psn));
    const auto sent = static_cast<uint32_t>(span);
    if (r.turn_bytes)
        return std::min<uint32_t>(
            kWindow, sent + std::max<uint32_t>(1, uint32_t(r.turn_bytes / mtu_bytes(qp))));
    return window_open_to_all(env.nic()) ? kWindow : sent;
}

void wait_for_turn(TransportEnv& env, Qp& qp) {
    RequesterState& r = qp.req;
    if (r.window_queued || r.turn_bytes || r.counted_in_flight) return;
    r.window_queued = true;
    env.nic().window_queue().push_back(qp.qpn);
}

void turn_sent(TransportEnv& env, Qp& qp, uint64_t bytes) {
    RequesterState& r = qp.req;
    const uint64_t used = std::min(bytes, r.turn_bytes);
    r.turn_bytes -= used;
    if (!r.window_escape) env.nic().window_reserved() -= used;
}

void end_turn(TransportEnv& env, Qp& qp) {
    if (qp.req.turn_bytes) {
        return_turn(env.nic(), qp.req);
        escape_done(env.nic(), qp.req);
    }
    serve_window_queue(env);
}

void serve_window_queue(TransportEnv& env) {
    Nic& nic = env.nic();
    std::deque<uint32_t>& queue = nic.window_queue();
    if (queue.empty()) return; // (called at every ACK and turn's end)
    const uint64_t window = host_window_bytes(nic);
    while (!queue.empty()) {
        Qp* qp = nic.qp_by_qpn(queue.front());
        if (!qp || !qp->req.window_queued) { // gone, or reset, since it queued
            queue.pop_front();
            continue;
        }
        RequesterState& r = qp->req;
        // (A window smaller than two turns, under an rmem_max of 128 KiB, has turns of half.)
        const uint64_t turn = std::min(kTurnBytes, window / 2);
        if (nic.bytes_in_flight() + nic.window_reserved() + turn <= window) {
            r.turn_bytes = turn;
            nic.window_reserved() += turn;
        } else if (nic.window_escape_qpn() == 0) {
            r.turn_bytes = uint64_t(min_window(*qp)) * mtu_bytes(*qp);
            r.window_escape = true;
            nic.window_escape_qpn() = qp->qpn;
        } else {
            return;
        }
        r.window_queued = false;
        queue.pop_front();
        env.schedule(*qp);
    }
}

void leave_window(Nic& nic, Qp& qp) {
    return_turn(nic, qp.req);
    drop_escape(nic, qp.req);
    qp.req.window_queued = false; // its entry in the queue is skipped
}

uint64_t host_window_bytes(const Nic& nic) {
    const uint64_t buffer = nic.link_receive_buffer();
    return buffer ? std::min(kHostWindowBytes, buffer / 2) : kHostWindowBytes;
}

uint32_t min_window(const Qp& qp) {
    return std::max<uint32_t>(1, kMinWindowBytes / mtu_bytes(qp));
}

void modified(TransportEnv& env, Qp& qp, ibv_qp_state from) {
    ibv_qp_state to = qp.attr.qp_state;
    if (to == from) return;
    count_in_flight(env, qp); // a QP that stopped sending holds none of the host's window
    if (to == IBV_QPS_RESET) {
        qp.error_reason = 0;
        env.set_timer(qp, 0);
        qp.req = RequesterState{};
        qp.resp = ResponderState{};
        // The rings restart empty (IBA 10.3.1: RESET empties the queues).
        qp.req.fetch_index = qp.sq.header->producer.load(std::memory_order_acquire);
        qp.sq.header->consumer.store(qp.req.fetch_index, std::memory_order_release);
        if (qp.rq.entries)
            qp.rq.header->consumer.store(qp.rq.header->producer.load(), std::memory_order_release);
        return;
    }
    if (to == IBV_QPS_ERR) {
        flush(env, qp);
        return;
    }
    if (to == IBV_QPS_RTR) {
        qp.resp.epsn = qp.attr.rq_psn;
        qp.resp.replay.assign(std::max<uint32_t>(1, qp.attr.max_dest_rd_atomic), ReplayEntry{});
    }
    if (to == IBV_QPS_RTS && from == IBV_QPS_RTR) {
        qp.req.next_psn = qp.attr.sq_psn;
        qp.req.una_psn = qp.attr.sq_psn;
        qp.req.sent_end_psn = qp.attr.sq_psn;
        count_in_flight(env, qp);
        qp.req.retry_left = qp.attr.retry_cnt;
        qp.req.rnr_left = qp.attr.rnr_retry;
    }
    if (to == IBV_QPS_RTS) env.schedule(qp); // WRs posted before RTS can go now
}

} // namespace nicsim::transport
