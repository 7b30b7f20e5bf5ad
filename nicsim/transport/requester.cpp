// The requester: takes send WRs from the SQ and turns them into packets (segmentation at the
// path MTU, PSN assignment, AckReq), within the window and the read/atomic credits, and
// retransmits go-back-N from a PSN when asked.
#include "emu/wire/psn.h"
#include "engines.h"
#include "memory_access.h"
#include "memory_windows.h"
#include "nic/nic.h"
#include "raw.h"
#include "reasons.h"
#include "ud.h"

#include "emu/verbs_names.h"
#include "wqe_sges.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cstring>

namespace nicsim {

const emu::WrOpcodeInfo& SendOp::info() const {
    return emu::wr_opcode_info(wqe.opcode);
}

bool SendOp::has(uint32_t wr_flags) const {
    return emu::wr_has(wqe.opcode, wr_flags);
}

bool SendOp::reads() const {
    return emu::wr_has_any(wqe.opcode, emu::kWrRead | emu::kWrAtomic);
}

bool SendOp::signaled(bool sq_sig_all) const {
    return sq_sig_all || (wqe.send_flags & IBV_SEND_SIGNALED) || status != IBV_WC_SUCCESS;
}

namespace transport {

namespace wire = emu::wire;
using emu::wire::psn_add;

namespace {

// Copies one WQE out of the ring (the app may scribble on it) and checks it. A WR that fails
// its checks is done, with its status and the reason.
SendOp take(TransportEnv& env, Qp& qp, uint32_t index) {
    SendOp op;
    op.sq_index = index;
    const char* slot = qp.sq.slot(index);
    std::memcpy(&op.wqe, slot, sizeof op.wqe);
    const emu::ipc::SendWqe& w = op.wqe;
    const char* tail = slot + sizeof(emu::ipc::SendWqe);
    size_t tail_room = qp.sq.entry_size - sizeof(emu::ipc::SendWqe);
    if (!emu::wr_executes_on(w.opcode, qp.type)) {
        fail_op(env, qp, op, IBV_WC_LOC_QP_OP_ERR,
                fmt::format("{} is not an operation of a {} QP", emu::names::wr_opcode(w.opcode),
                            emu::names::qp_type_short(qp.type)));
        return op;
    }
    if (op.has(emu::kWrDataInWqe)) {
        // ATOMIC WRITE's 8 bytes: ibv_wr_atomic_write copies them into the WQE.
        auto* data = reinterpret_cast<const uint8_t*>(&w.compare_add);
        op.inline_data.assign(data, data + 8);
        op.length = 8;
    } else if (w.inline_len) {
        if (w.inline_len > qp.cap.max_inline_data || w.inline_len > tail_room) {
            fail_op(env, qp, op, IBV_WC_LOC_LEN_ERR,
                    fmt::format("{} bytes of inline data, more than max_inline_data {}",
                                w.inline_len, qp.cap.max_inline_data));
            return op;
        }
        op.inline_data.assign(tail, tail + w.inline_len);
        op.length = w.inline_len;
    } else {
        WqeSges sges;
        if (w.num_sge > qp.cap.max_send_sge || w.num_sge * sizeof(emu::ipc::Sge) > tail_room ||
            !sges.load(tail, w.num_sge)) {
            fail_op(
                env, qp, op, IBV_WC_LOC_LEN_ERR,
                fmt::format("{} SGEs, more than max_send_sge {}", w.num_sge, qp.cap.max_send_sge));
            return op;
        }
        if (op.reads()) {
            // READ and atomic responses are written into the local buffers, whose lkeys are
            // checked only then, as hardware checks them when it scatters the response: the
            // request goes out first, so a remote refusal is what the WR completes with
            // (google/rdma-unit-test ReadInvalidRKeyAndInvalidLKey: REM_ACCESS_ERR on mlx5),
            // and an atomic with a bad lkey executes at the responder before it fails
            // (CompareSwapInvalidLKey; rxe's completer copies the result with copy_data).
            op.response_sges.assign(sges.sge, sges.sge + sges.count);
            op.local_pending = true;
            for (const emu::ipc::Sge& s : op.response_sges)
                op.length += s.length;
        } else if (resolve_local(env.nic(), qp.pd, sges.sge, sges.count, 0, op.local, &op.length) !=
                   IBV_WC_SUCCESS) {
            // A WRITE or SEND reads its buffers before anything goes out: the local key is
            // checked first (WriteInvalidRKeyAndInvalidLKey: LOC_PROT_ERR).
            fail_op(env, qp, op, IBV_WC_LOC_PROT_ERR,
                    explain_local(env.nic(), qp.pd, sges.sge, sges.count, 0).text());
            return op;
        }
    }
    uint64_t max_msg = env.nic().device().port_attr().max_msg_sz;
    if (op.length > max_msg)
        fail_op(env, qp, op, IBV_WC_LOC_LEN_ERR,
                fmt::format("a message of {} bytes, more than max_msg_sz {}", op.length, max_msg));
    else if (op.has(emu::kWrAtomic) && op.length < 8)
        fail_op(env, qp, op, IBV_WC_LOC_LEN_ERR,
                fmt::format("an atomic needs 8 bytes of local buffer for the original value; its "
                            "SGEs hold {}",
                            op.length));
    return op;
}

// Why ud::send or raw::send refused `op` with `status`.
std::string datagram_fault(TransportEnv& env, const Qp& qp, const SendOp& op,
                           ibv_wc_status status) {
    switch (status) {
    case IBV_WC_LOC_LEN_ERR:
        return qp.type == IBV_QPT_UD
                   ? fmt::format("a UD message of {} bytes, more than one packet of the port's MTU "
                                 "({} bytes) holds",
                                 op.length, env.nic().device().config().mtu)
                   : fmt::format("a frame of {} bytes: raw packet QPs send whole Ethernet frames "
                                 "of 14 bytes and more",
                                 op.length);
    case IBV_WC_LOC_QP_OP_ERR:
        return fmt::format("ah handle {} names no AH of the QP's PD", op.wqe.ah);
    case IBV_WC_LOC_PROT_ERR:
        return "reading the SGEs failed: their memory is gone (unmapped since it was registered)";
    default:
        return "the datagram could not be sent";
    }
}

uint32_t packets_for(const Qp& qp, const SendOp& op) {
    if (op.has(emu::kWrAtomic)) return 1;
    uint64_t mtu = mtu_bytes(qp);
    return static_cast<uint32_t>(std::max<uint64_t>(1, (op.length + mtu - 1) / mtu));
}

// Sends packet op.next_pkt of `op` (for a READ: the request for everything from there on).
// Returns false when local memory could not be read (the op then fails).
bool send_next_packet(TransportEnv& env, Qp& qp, SendOp& op) {
    uint8_t* buf = env.packet_buffer();
    const emu::ipc::SendWqe& w = op.wqe;
    uint32_t mtu = mtu_bytes(qp);
    uint32_t k = op.next_pkt;
    wire::Headers h;
    h.psn = psn_add(op.first_psn, k);
    auto transport = transport_of(qp);
    h.xrc_srqn = w.xrc_remote_srqn; // sent in the XRCETH of XRC requests, ignored otherwise
    wire::Operation operation = *op.info().wire; // local operations never come here
    size_t payload_len = 0;
    if (operation == wire::Operation::ReadRequest) {
        // A long READ goes out as several requests of at most kReadChunk response packets,
        // each issued inside the window: its responses then come no faster than the window
        // lets them, where hardware has link-level flow control and we have none. A request
        // resumed from the middle of one ends where that one ended: the responder answers a
        // duplicate READ only for part of what it was asked before (as rxe checks).
        uint32_t chunk = std::min(op.npkts - k, kReadChunk - k % kReadChunk);
        uint64_t offset = uint64_t(k) * mtu;
        uint64_t len = std::min<uint64_t>(uint64_t(chunk) * mtu, op.length - offset);
        h.opcode = *wire::opcode_for(transport, operation, wire::Position::Only);
        h.reth = {w.remote_addr + offset, w.rkey, static_cast<uint32_t>(len)};
        h.ack_req = true;
        op.next_pkt = k + chunk;
    } else if (operation == wire::Operation::CompareSwap ||
               operation == wire::Operation::FetchAdd) {
        h.opcode = *wire::opcode_for(transport, operation, wire::Position::Only);
        h.atomic_eth = {w.remote_addr, w.rkey,
                        operation == wire::Operation::CompareSwap ? w.swap : w.compare_add,
                        operation == wire::Operation::CompareSwap ? w.compare_add : 0};
        h.ack_req = true;
        op.next_pkt = 1;
    } else if (operation == wire::Operation::AtomicWrite) {
        h.opcode = *wire::opcode_for(transport, operation, wire::Position::Only);
        h.reth = {w.remote_addr, w.rkey, 8};
        h.ack_req = true;
        payload_len = 8;
        std::memcpy(buf + wire::header_length(h.opcode), op.inline_data.data(), payload_len);
        op.next_pkt = 1;
    } else {
        bool first = k == 0, last = k + 1 == op.npkts;
        wire::Modifier mod = last ? op.info().modifier : wire::Modifier::None;
        h.opcode = *wire::opcode_for(transport, operation, wire::position_of(first, last), mod);
        if (first && operation == wire::Operation::Write)
            h.reth = {w.remote_addr, w.rkey, static_cast<uint32_t>(op.length)};
        if (mod == wire::Modifier::Imm) h.imm = w.imm_data;
        if (mod == wire::Modifier::Inv) h.ieth_rkey = w.imm_data;
        if (last && (w.send_flags & IBV_SEND_SOLICITED)) h.se = true;
        // AckReq also on the packet that fills the window: the requester can send no more
        // until this is acknowledged, and the responder ACKs only where asked.
        const bool fills_window =
            reliable(qp) &&
            emu::wire::psn_diff(psn_add(h.psn, 1), qp.req.una_psn) >= int(window_of(env, qp));
        h.ack_req = last || (k + 1) % kAckEvery == 0 || fills_window;
        uint64_t offset = uint64_t(k) * mtu;
        payload_len = static_cast<size_t>(std::min<uint64_t>(mtu, op.length - offset));
        uint8_t* payload = buf + wire::header_length(h.opcode);
        if (!op.inline_data.empty()) {
            std::memcpy(payload, op.inline_data.data() + offset, payload_len);
        } else if (payload_len) {
            if (env.dma().read(op.local, offset, payload, payload_len) != 0) return false;
        }
        ++op.next_pkt;
    }
    qp.req.asked_ack = h.ack_req;
    send_packet(env, qp, h, buf, payload_len);
    return true;
}

// Whether `psn` is beyond what `qp` may have in flight now. The QP's own window (kWindow) is
// firm; the host's share (window_of) closes only after a packet that asked for an ACK, or a
// QP that was sending under a wider window would wait for an ACK nobody asked for (until its
// retransmit timer).
bool window_closed(TransportEnv& env, const Qp& qp, uint32_t psn) {
    const int32_t ahead = emu::wire::psn_diff(psn, qp.req.una_psn);
    if (ahead >= int(kWindow)) return true;
    return ahead >= int(window_of(env, qp)) && qp.req.asked_ack;
}

// READ and atomic requests whose responses are not all in yet. Each holds one of the responder's
// max_dest_rd_atomic slots, where it remembers the requests it may be asked to answer again; so
// the requests of a long READ count one by one. The responder's requests of a READ start every
// kReadChunk packets from its first PSN (a resumed request it has seen is a duplicate): those
// that reach into what is asked for and not yet received.
uint32_t read_requests_in_flight(const Qp& qp) {
    const uint32_t mtu = mtu_bytes(qp);
    uint32_t n = 0;
    for (const SendOp& op : qp.req.ops) {
        if (!op.started) break;
        if (op.done || !op.reads()) continue;
        auto received = static_cast<uint32_t>(op.response_bytes / mtu);
        if (op.next_pkt > received)
            n += (op.next_pkt + kReadChunk - 1) / kReadChunk - received / kReadChunk;
    }
    return n;
}

} // namespace

void fetch(TransportEnv& env, Qp& qp) {
    // An XRC_RECV QP has no send queue (its one-slot ring is only the app's to scribble on).
    if (!qp.send_cq) return;
    RequesterState& r = qp.req;
    uint32_t producer = qp.sq.header->producer.load(std::memory_order_acquire);
    uint32_t consumer = qp.sq.header->consumer.load(std::memory_order_relaxed);
    if (producer - consumer > qp.sq.entries) producer = consumer + qp.sq.entries; // app bug
    while (r.fetch_index != producer && r.ops.size() < qp.sq.entries) {
        SendOp& op = r.ops.emplace_back(take(env, qp, r.fetch_index));
        ++r.fetch_index;
        // A WR that fails its local checks is not sent; it completes, in order, with its error.
        if (op.status != IBV_WC_SUCCESS) op.done = op.started = true;
    }
}

void arm_retransmit_timer(TransportEnv& env, Qp& qp) {
    RequesterState& r = qp.req;
    if (!reliable(qp) || qp.attr.timeout == 0 || r.rnr_until_us) return; // 0: infinite
    uint64_t timeout_us = (4096ull << qp.attr.timeout) / 1000;           // 4.096 us * 2^timeout
    r.timer_at_us = env.now_us() + std::max<uint64_t>(timeout_us, 1);
    env.set_timer(qp, r.timer_at_us);
}

bool transmit(TransportEnv& env, Qp& qp, int& budget) {
    RequesterState& r = qp.req;
    if (r.rnr_until_us) { // waiting out an RNR NAK
        end_turn(env, qp);
        return false;
    }
    bool sent = false;
    while (budget > 0 && r.cursor < r.ops.size()) {
        SendOp& op = r.ops[r.cursor];
        if (op.status != IBV_WC_SUCCESS) break; // completes (with its error) in order
        if (op.has(emu::kWrLocal)) {
            // Memory-window operations run on the NIC alone, in send-queue order.
            bool bind = op.wqe.opcode == IBV_WR_BIND_MW;
            ibv_wc_status status = bind ? bind_window(env.nic(), qp, op.wqe)
                                        : invalidate_local(env.nic(), qp, op.wqe.imm_data);
            op.started = op.done = true;
            if (status != IBV_WC_SUCCESS)
                fail_op(env, qp, op, status,
                        bind ? "the window, the new rkey, the MR (it needs IBV_ACCESS_MW_BIND), "
                               "the rights or the range refuse the bind (IBA 10.6.7)"
                             : fmt::format("rkey {:#x} is no type 2 window of the QP's PD bound "
                                           "through this QP (IBA 10.6.7.2)",
                                           op.wqe.imm_data));
            ++r.cursor;
            continue;
        }
        if (qp.type == IBV_QPT_UD || qp.type == IBV_QPT_RAW_PACKET) {
            ibv_wc_status status =
                qp.type == IBV_QPT_UD ? ud::send(env, qp, op) : raw::send(env, qp, op);
            if (status != IBV_WC_SUCCESS)
                fail_op(env, qp, op, status, datagram_fault(env, qp, op, status));
            op.started = op.done = true;
            ++r.cursor;
            --budget;
            continue;
        }
        // At most max_rd_atomic requests being answered at a time (the initiator depth the peer's
        // max_dest_rd_atomic matches): a responder that forgot one never answers it again.
        if (op.reads() &&
            read_requests_in_flight(qp) >= std::max<uint32_t>(1, qp.attr.max_rd_atomic))
            break;
        if (!op.started) {
            if ((op.wqe.send_flags & IBV_SEND_FENCE) && r.reads_outstanding) break;
            op.first_psn = r.next_psn;
            op.npkts = packets_for(qp, op);
            op.started = true;
            r.next_psn = psn_add(r.next_psn, op.npkts);
            if (op.reads()) ++r.reads_outstanding;
        }
        if (reliable(qp) && window_closed(env, qp, psn_add(op.first_psn, op.next_pkt))) {
            wait_for_turn(env, qp); // nothing in flight: no ACK would wake it
            break;
        }
        if (op.has(emu::kWrRead) && op.next_pkt > 0 &&
            op.next_pkt - op.response_bytes / mtu_bytes(qp) >= kReadAhead)
            break;
        if (!send_next_packet(env, qp, op)) {
            fail_op(env, qp, op, IBV_WC_LOC_PROT_ERR,
                    "reading the SGEs failed: their memory is gone (unmapped since it was "
                    "registered)");
            break;
        }
        sent = true;
        // Responses to these PSNs (a READ request's: all it asks for) are valid from now on.
        uint32_t covered_end = psn_add(op.first_psn, op.next_pkt);
        if (const int32_t more = emu::wire::psn_diff(covered_end, r.sent_end_psn); more > 0) {
            turn_sent(env, qp, uint64_t(more) * mtu_bytes(qp));
            r.sent_end_psn = covered_end;
            count_in_flight(env, qp);
        }
        --budget;
        if (op.next_pkt >= op.npkts) {
            ++r.cursor;
            if (qp.type == IBV_QPT_UC) op.done = true; // unreliable: complete once sent
        }
    }
    if (sent && !r.timer_at_us) arm_retransmit_timer(env, qp);
    if (!r.ops.empty() && r.ops.front().done) complete_ready(env, qp);
    const bool more = budget == 0 && r.cursor < r.ops.size();
    if (!more) end_turn(env, qp); // stopped: what its turn did not send goes back
    return more;
}

void retransmit_from(TransportEnv& env, Qp& qp, uint32_t psn) {
    RequesterState& r = qp.req;
    uint32_t mtu = mtu_bytes(qp);
    bool found = false;
    for (size_t i = 0; i < r.ops.size(); ++i) {
        SendOp& op = r.ops[i];
        if (!op.started) break;
        if (op.done) continue;
        if (!found) {
            int32_t d = emu::wire::psn_diff(psn, op.first_psn);
            if (d >= int32_t(op.npkts)) continue;
            uint32_t k = d < 0 ? 0 : static_cast<uint32_t>(d);
            if (op.reads()) {
                // Resume the READ where its responses stopped.
                k = static_cast<uint32_t>(op.response_bytes / mtu);
            }
            op.next_pkt = k;
            r.cursor = i;
            found = true;
        } else {
            op.next_pkt = 0;
            op.response_bytes = 0;
        }
    }
    if (!found) return;
    qp.counters.retransmits++;
    env.schedule(qp);
}

} // namespace transport
} // namespace nicsim
