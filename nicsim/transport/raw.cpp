#include "raw.h"

#include "device_limits.h"
#include "memory_access.h"
#include "nic.h"
#include "objects/session_objects.h"
#include "rc.h"
#include "wqe_sges.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace nicsim::raw {

namespace {

constexpr size_t kEthHeader = 14;

// A receive queue as raw delivery sees it: a QP's RQ, an SRQ, or a WQ.
struct Target {
    Ring* ring = nullptr;
    uint32_t max_sge = 0;
    const Pd* pd = nullptr;
    Cq* cq = nullptr;
    uint32_t qp_num = 0; // what the completion names: the QP's number, or the WQ's
    Srq* srq = nullptr;
};

// Takes the next receive WQE of `t`, scatters the frame into it and completes it. False when
// no receive was posted.
bool deliver(TransportEnv& env, const Target& t, const uint8_t* frame, size_t len) {
    emu::ipc::RingHeader* hdr = t.ring->header;
    uint32_t consumer = hdr->consumer.load(std::memory_order_relaxed);
    uint32_t producer = hdr->producer.load(std::memory_order_acquire);
    if (producer == consumer || producer - consumer > t.ring->entries) return false;
    const char* slot = t.ring->slot(consumer);
    emu::ipc::RecvWqe w;
    std::memcpy(&w, slot, sizeof w);
    hdr->consumer.store(consumer + 1, std::memory_order_release);
    if (t.srq) rc::srq_consumed(env, *t.srq);
    ibv_wc wc{};
    wc.wr_id = w.wr_id;
    wc.opcode = IBV_WC_RECV;
    wc.qp_num = t.qp_num;
    wc.status = IBV_WC_LOC_LEN_ERR;
    std::vector<DmaSegment> local;
    uint64_t capacity = 0;
    if (w.num_sge <= t.max_sge &&
        sizeof w + w.num_sge * sizeof(emu::ipc::Sge) <= t.ring->entry_size) {
        WqeSges sges;
        wc.status = sges.load(slot + sizeof w, w.num_sge)
                        ? resolve_local(env.nic(), t.pd, sges.sge, sges.count,
                                        IBV_ACCESS_LOCAL_WRITE, local, &capacity)
                        : IBV_WC_LOC_LEN_ERR;
    }
    if (wc.status == IBV_WC_SUCCESS && capacity < len) wc.status = IBV_WC_LOC_LEN_ERR;
    if (wc.status == IBV_WC_SUCCESS) {
        if (env.dma().write(local, 0, frame, len) != 0) wc.status = IBV_WC_LOC_PROT_ERR;
        wc.byte_len = static_cast<uint32_t>(len);
    }
    rc::post_completion(env, *t.cq, wc, false);
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
    Target t;
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
        t = {&wq.ring, wq.max_sge, wq.pd, wq.cq, wq.wq_num, nullptr};
    } else {
        if (qp.attr.qp_state != IBV_QPS_RTR && qp.attr.qp_state != IBV_QPS_RTS) {
            ++qp.counters.rx_no_wqe;
            ++c.no_wqe_drops;
            return;
        }
        if (qp.srq)
            t = {&qp.srq->ring, qp.srq->attr.max_sge, qp.srq->pd, qp.recv_cq, qp.qpn, qp.srq};
        else
            t = {&qp.rq, qp.cap.max_recv_sge, qp.pd, qp.recv_cq, qp.qpn, nullptr};
    }
    if (!deliver(env, t, frame, len)) {
        ++qp.counters.rx_no_wqe; // no receive posted: dropped, as on an Ethernet NIC
        ++c.no_wqe_drops;
        return;
    }
    ++c.delivered;
}

void flush_wq(TransportEnv& env, Wq& wq) {
    emu::ipc::RingHeader* h = wq.ring.header;
    uint32_t consumer = h->consumer.load(std::memory_order_relaxed);
    uint32_t producer = h->producer.load(std::memory_order_acquire);
    if (producer - consumer > wq.ring.entries) producer = consumer + wq.ring.entries; // app bug
    std::vector<uint64_t> flushed;
    for (; consumer != producer; ++consumer) {
        emu::ipc::RecvWqe w;
        std::memcpy(&w, wq.ring.slot(consumer), sizeof w);
        flushed.push_back(w.wr_id);
    }
    // Slots first, completions after (an app that polls one may post again at once).
    h->consumer.store(consumer, std::memory_order_release);
    for (uint64_t wr_id : flushed) {
        ibv_wc wc{};
        wc.wr_id = wr_id;
        wc.status = IBV_WC_WR_FLUSH_ERR;
        wc.opcode = IBV_WC_RECV;
        wc.qp_num = wq.wq_num;
        rc::post_completion(env, *wq.cq, wc, false);
    }
}

} // namespace nicsim::raw
