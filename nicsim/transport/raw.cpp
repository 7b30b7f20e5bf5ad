#include "raw.h"

#include "engines.h"
#include "memory_access.h"
#include "nic/device_limits.h"
#include "nic/nic.h"
#include "objects/session_objects.h"
#include "recv_queue.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace nicsim::raw {

namespace {

constexpr size_t kEthHeader = 14;

// Takes the next receive WQE of `t`, scatters the frame into it and completes it. False when
// no receive was posted.
bool deliver(TransportEnv& env, const RecvTarget& t, const uint8_t* frame, size_t len) {
    RecvBuffers buffers;
    ibv_wc_status status;
    if (!take_recv(env, t, buffers, &status)) return false;
    ibv_wc wc{};
    wc.wr_id = buffers.wr_id;
    wc.opcode = IBV_WC_RECV;
    wc.qp_num = t.qp_num;
    wc.status = status;
    if (wc.status == IBV_WC_SUCCESS && buffers.capacity < len) wc.status = IBV_WC_LOC_LEN_ERR;
    if (wc.status == IBV_WC_SUCCESS) {
        if (env.dma().write(buffers.local, 0, frame, len) != 0) wc.status = IBV_WC_LOC_PROT_ERR;
        wc.byte_len = static_cast<uint32_t>(len);
    }
    transport::post_completion(env, *t.cq, wc, false);
    return true;
}

} // namespace

ibv_wc_status send(TransportEnv& env, Qp& qp, SendOp& op) {
    if (op.length < kEthHeader || op.length > limits::kMaxRawFrame) return IBV_WC_LOC_LEN_ERR;
    std::vector<uint8_t> frame(op.length);
    if (!op.inline_data.empty()) {
        std::memcpy(frame.data(), op.inline_data.data(), op.length);
    } else if (env.dma().read(op.local, 0, frame.data(), op.length) != 0) {
        return IBV_WC_LOC_PROT_ERR;
    }
    ++qp.counters.tx_packets;
    qp.counters.tx_bytes += op.length;
    RawCounters& c = env.nic().raw_counters();
    ++c.tx_frames;
    c.tx_bytes += op.length;
    steer(env, frame.data(), frame.size());
    return IBV_WC_SUCCESS;
}

size_t steer(TransportEnv& env, const uint8_t* frame, size_t len) {
    emu::flow::Frame fields;
    if (!emu::flow::parse_frame(frame, len, fields)) return 0;
    // The QPs to reach are settled before the first copy is delivered.
    std::vector<uint32_t> qpns;
    for (const Flow* f : env.nic().flows())
        if (emu::flow::matches(f->rule, fields) &&
            std::find(qpns.begin(), qpns.end(), f->qp->qpn) == qpns.end())
            qpns.push_back(f->qp->qpn);
    if (qpns.empty()) {
        ++env.nic().raw_counters().no_flow_drops;
        return 0;
    }
    for (uint32_t qpn : qpns)
        if (Qp* qp = env.nic().qp_by_qpn(qpn)) receive(env, *qp, fields, frame, len);
    return qpns.size();
}

void receive(TransportEnv& env, Qp& qp, const emu::flow::Frame& fields, const uint8_t* frame,
             size_t len) {
    RawCounters& c = env.nic().raw_counters();
    ++qp.counters.rx_packets;
    qp.counters.rx_bytes += len;
    RecvTarget t;
    if (qp.ind_table) {
        // RSS: the hash of the selected fields picks the WQ (IBV_RX_HASH_FUNC_TOEPLITZ).
        const std::vector<Wq*>& wqs = qp.ind_table->wqs;
        uint32_t hash = emu::flow::rss_hash(qp.rx_hash_key.data(), qp.rx_hash_key.size(),
                                            qp.rx_hash_fields, fields);
        Wq& wq = *wqs[hash & (wqs.size() - 1)];
        if (wq.state != IBV_WQS_RDY) {
            ++qp.counters.rx_no_wqe;
            ++c.no_wqe_drops;
            return;
        }
        t = {&wq.ring, nullptr, wq.pd, wq.max_sge, wq.cq, wq.wq_num};
    } else {
        if (qp.attr.qp_state != IBV_QPS_RTR && qp.attr.qp_state != IBV_QPS_RTS) {
            ++qp.counters.rx_no_wqe;
            ++c.no_wqe_drops;
            return;
        }
        if (qp.srq)
            t = {&qp.srq->ring, qp.srq, qp.srq->pd, qp.srq->attr.max_sge, qp.recv_cq, qp.qpn};
        else
            t = {&qp.rq, nullptr, qp.pd, qp.cap.max_recv_sge, qp.recv_cq, qp.qpn};
    }
    if (!deliver(env, t, frame, len)) {
        ++qp.counters.rx_no_wqe; // no receive posted: dropped, as on an Ethernet NIC
        ++c.no_wqe_drops;
        return;
    }
    ++c.delivered;
}

void flush_wq(TransportEnv& env, Wq& wq) {
    for (uint64_t wr_id : drain_recvs(wq.ring)) {
        ibv_wc wc{};
        wc.wr_id = wr_id;
        wc.status = IBV_WC_WR_FLUSH_ERR;
        wc.opcode = IBV_WC_RECV;
        wc.qp_num = wq.wq_num;
        transport::post_completion(env, *wq.cq, wc, false);
    }
}

} // namespace nicsim::raw
