// Tracing of extended CQ polling: ibv_start_poll / ibv_next_poll load one completion at a time
// into the CQ's struct ibv_cq_ex, read with its read_* ops. In trace mode a CQ made by
// ibv_create_cq_ex gets wrappers that write each completion they load, in the very line format
// of ibv_poll_cq, and then hand it to the app unchanged.
#include "trace/trace.h"

#include <map>
#include <mutex>
#include <shared_mutex>

namespace verbs::trace {
namespace {

struct WatchedCq {
    ibv_cq_ex original; // the backend's own ops
    uint64_t wc_flags;  // which read_* the CQ was made to answer
};

std::shared_mutex watched_mutex;
std::map<const ibv_cq_ex*, WatchedCq> watched;

WatchedCq& entry(const ibv_cq_ex* cq) {
    std::shared_lock lock(watched_mutex);
    return watched.at(cq);
}

// The completion the last start/next poll loaded, as an ibv_wc: the opcode and flags are
// defined only for a successful completion (ibv_poll_cq(3)); the other fields only when the CQ
// reports them.
void trace_loaded(ibv_cq_ex* cq, const WatchedCq& w) {
    ibv_wc wc{};
    wc.wr_id = cq->wr_id;
    wc.status = cq->status;
    const ibv_cq_ex& o = w.original;
    if (wc.status == IBV_WC_SUCCESS) {
        wc.opcode = o.read_opcode(cq);
        wc.wc_flags = o.read_wc_flags ? o.read_wc_flags(cq) : 0;
        if ((w.wc_flags & IBV_WC_EX_WITH_IMM) && (wc.wc_flags & IBV_WC_WITH_IMM))
            wc.imm_data = o.read_imm_data(cq);
        if ((w.wc_flags & IBV_WC_EX_WITH_SRC_QP) && (wc.opcode & IBV_WC_RECV))
            wc.src_qp = o.read_src_qp(cq);
    }
    if (w.wc_flags & IBV_WC_EX_WITH_QP_NUM) wc.qp_num = o.read_qp_num(cq);
    if (w.wc_flags & IBV_WC_EX_WITH_BYTE_LEN) wc.byte_len = o.read_byte_len(cq);
    write_line("wc", wc_text(wc));
}

int start_poll(ibv_cq_ex* cq, ibv_poll_cq_attr* attr) {
    WatchedCq& w = entry(cq);
    int ret = w.original.start_poll(cq, attr);
    if (ret == 0) trace_loaded(cq, w);
    return ret;
}

int next_poll(ibv_cq_ex* cq) {
    WatchedCq& w = entry(cq);
    int ret = w.original.next_poll(cq);
    if (ret == 0) trace_loaded(cq, w);
    return ret;
}

} // namespace

void watch_cq_ex(ibv_cq_ex* cq, uint64_t wc_flags) {
    if (!enabled() || !cq || !cq->start_poll || !cq->next_poll || !cq->read_opcode) return;
    {
        std::unique_lock lock(watched_mutex);
        watched[cq] = {*cq, wc_flags};
    }
    cq->start_poll = start_poll;
    cq->next_poll = next_poll;
}

void forget_cq_ex(ibv_cq* cq) {
    // Only CQs made by ibv_create_cq_ex are in the map; for others the cast names nothing in it.
    auto* cx = reinterpret_cast<ibv_cq_ex*>(cq);
    std::unique_lock lock(watched_mutex);
    auto it = watched.find(cx);
    if (it == watched.end()) return;
    cx->start_poll = it->second.original.start_poll;
    cx->next_poll = it->second.original.next_poll;
    watched.erase(it);
}

} // namespace verbs::trace
