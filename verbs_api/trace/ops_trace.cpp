// Tracing of the data path: the app reaches post_send, post_recv, post_srq_recv and poll_cq
// through the context's ops table (inline verbs), whichever backend filled it; in trace mode
// those entries are replaced by wrappers that write a line per work request and per completion
// and then call the backend's own function.
#include "trace/trace.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <shared_mutex>

namespace verbs::trace {
namespace {

std::shared_mutex saved_mutex;
std::map<const ibv_context*, ibv_context_ops> saved; // the backend's own ops, by context

ibv_context_ops original(const ibv_context* ctx) {
    std::shared_lock lock(saved_mutex);
    auto it = saved.find(ctx);
    return it == saved.end() ? ibv_context_ops{} : it->second;
}

const char* opcode_name(ibv_wr_opcode op) {
    switch (op) {
    case IBV_WR_RDMA_WRITE:
        return "RDMA_WRITE";
    case IBV_WR_RDMA_WRITE_WITH_IMM:
        return "RDMA_WRITE_WITH_IMM";
    case IBV_WR_SEND:
        return "SEND";
    case IBV_WR_SEND_WITH_IMM:
        return "SEND_WITH_IMM";
    case IBV_WR_RDMA_READ:
        return "RDMA_READ";
    case IBV_WR_ATOMIC_CMP_AND_SWP:
        return "ATOMIC_CMP_AND_SWP";
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
        return "ATOMIC_FETCH_AND_ADD";
    case IBV_WR_LOCAL_INV:
        return "LOCAL_INV";
    case IBV_WR_BIND_MW:
        return "BIND_MW";
    case IBV_WR_SEND_WITH_INV:
        return "SEND_WITH_INV";
    case IBV_WR_TSO:
        return "TSO";
    case IBV_WR_DRIVER1:
        return "DRIVER1";
    case IBV_WR_ATOMIC_WRITE:
        return "ATOMIC_WRITE";
    default:
        return "?";
    }
}

const char* wc_opcode_name(ibv_wc_opcode op) {
    switch (op) {
    case IBV_WC_SEND:
        return "SEND";
    case IBV_WC_RDMA_WRITE:
        return "RDMA_WRITE";
    case IBV_WC_RDMA_READ:
        return "RDMA_READ";
    case IBV_WC_COMP_SWAP:
        return "COMP_SWAP";
    case IBV_WC_FETCH_ADD:
        return "FETCH_ADD";
    case IBV_WC_BIND_MW:
        return "BIND_MW";
    case IBV_WC_LOCAL_INV:
        return "LOCAL_INV";
    case IBV_WC_TSO:
        return "TSO";
    case IBV_WC_RECV:
        return "RECV";
    case IBV_WC_RECV_RDMA_WITH_IMM:
        return "RECV_RDMA_WITH_IMM";
    case IBV_WC_ATOMIC_WRITE:
        return "ATOMIC_WRITE";
    case IBV_WC_TM_ADD:
        return "TM_ADD";
    case IBV_WC_TM_DEL:
        return "TM_DEL";
    case IBV_WC_TM_SYNC:
        return "TM_SYNC";
    case IBV_WC_TM_RECV:
        return "TM_RECV";
    case IBV_WC_TM_NO_TAG:
        return "TM_NO_TAG";
    default:
        return "?";
    }
}

} // namespace

std::string send_wr_text(uint32_t qp_num, uint64_t wr_id, ibv_wr_opcode opcode, unsigned flags,
                         size_t num_sge, uint64_t bytes) {
    return "send qp=" + std::to_string(qp_num) + " wr_id=" + std::to_string(wr_id) +
           " opcode=" + opcode_name(opcode) + " flags=" + std::to_string(flags) +
           " sge=" + std::to_string(num_sge) + " len=" + std::to_string(bytes);
}

std::string wc_text(ibv_wc_status status, ibv_wc_opcode opcode, uint32_t qp_num, uint64_t wr_id,
                    uint32_t byte_len) {
    // The opcode is defined only for successful completions (ibv_poll_cq(3)).
    return std::string(ibv_wc_status_str(status)) +
           " opcode=" + (status == IBV_WC_SUCCESS ? wc_opcode_name(opcode) : "-") +
           " qp=" + std::to_string(qp_num) + " wr_id=" + std::to_string(wr_id) +
           " len=" + std::to_string(byte_len);
}

namespace {

void trace_recvs(const char* queue, uint32_t number, const ibv_recv_wr* wr) {
    for (; wr; wr = wr->next) {
        size_t num_sge = static_cast<size_t>(std::max(wr->num_sge, 0));
        write_line("wr", std::string(queue) + std::to_string(number) + " wr_id=" +
                             std::to_string(wr->wr_id) + " sge=" + std::to_string(num_sge) +
                             " len=" + std::to_string(total_length(num_sge, wr->sg_list)));
    }
}

template <typename Wr> void trace_result(const char* op, int ret, Wr* bad) {
    if (ret == 0) return;
    write_line("wr", std::string(op) + " failed ret=" + std::to_string(ret) +
                         " bad_wr_id=" + (bad ? std::to_string(bad->wr_id) : std::string("?")));
}

int traced_post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
    for (const ibv_send_wr* w = wr; w; w = w->next) {
        size_t num_sge = static_cast<size_t>(std::max(w->num_sge, 0));
        write_line("wr", send_wr_text(qp->qp_num, w->wr_id, w->opcode, w->send_flags, num_sge,
                                      total_length(num_sge, w->sg_list)));
    }
    int ret = original(qp->context).post_send(qp, wr, bad_wr);
    trace_result("send", ret, bad_wr ? *bad_wr : nullptr);
    return ret;
}

int traced_post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
    trace_recvs("recv qp=", qp->qp_num, wr);
    int ret = original(qp->context).post_recv(qp, wr, bad_wr);
    trace_result("recv", ret, bad_wr ? *bad_wr : nullptr);
    return ret;
}

int traced_post_srq_recv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
    trace_recvs("srq_recv srq=", srq->handle, wr);
    int ret = original(srq->context).post_srq_recv(srq, wr, bad_wr);
    trace_result("srq_recv", ret, bad_wr ? *bad_wr : nullptr);
    return ret;
}

int traced_poll_cq(ibv_cq* cq, int num_entries, ibv_wc* wc) {
    int n = original(cq->context).poll_cq(cq, num_entries, wc);
    for (int i = 0; i < n; ++i)
        write_line("wc",
                   wc_text(wc[i].status, wc[i].opcode, wc[i].qp_num, wc[i].wr_id, wc[i].byte_len));
    return n;
}

} // namespace

void watch_context(ibv_context* ctx) {
    if (!enabled() || !ctx) return;
    {
        std::unique_lock lock(saved_mutex);
        saved[ctx] = ctx->ops;
    }
    if (ctx->ops.post_send) ctx->ops.post_send = traced_post_send;
    if (ctx->ops.post_recv) ctx->ops.post_recv = traced_post_recv;
    if (ctx->ops.post_srq_recv) ctx->ops.post_srq_recv = traced_post_srq_recv;
    if (ctx->ops.poll_cq) ctx->ops.poll_cq = traced_poll_cq;
    watch_extended_ops(ctx);
}

void forget_context(ibv_context* ctx) {
    forget_extended_ops(ctx);
    std::unique_lock lock(saved_mutex);
    auto it = saved.find(ctx);
    if (it == saved.end()) return;
    // The backend's close may look at its own ops (rdma-core's providers do not, but be exact).
    ctx->ops = it->second;
    saved.erase(it);
}

} // namespace verbs::trace
