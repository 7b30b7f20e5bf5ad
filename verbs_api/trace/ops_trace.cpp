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

void trace_recvs(const char* queue, const std::string& number, const ibv_recv_wr* wr) {
    for (; wr; wr = wr->next)
        write_line("wr", recv_wr_text(queue, number, *wr));
}

template <typename Wr> void trace_result(const char* op, int ret, Wr* bad) {
    if (ret == 0) return;
    write_line("wr", std::string(op) + " failed ret=" + std::to_string(ret) +
                         " bad_wr_id=" + (bad ? std::to_string(bad->wr_id) : std::string("?")));
}

int traced_post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
    for (const ibv_send_wr* w = wr; w; w = w->next)
        write_line("wr", send_wr_text(send_wr_of(qp, *w)));
    int ret = original(qp->context).post_send(qp, wr, bad_wr);
    trace_result("send", ret, bad_wr ? *bad_wr : nullptr);
    return ret;
}

int traced_post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
    trace_recvs("recv qp=", qpn_text(qp->qp_num), wr);
    int ret = original(qp->context).post_recv(qp, wr, bad_wr);
    trace_result("recv", ret, bad_wr ? *bad_wr : nullptr);
    return ret;
}

int traced_post_srq_recv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
    trace_recvs("srq_recv srq=", std::to_string(srq->handle), wr);
    int ret = original(srq->context).post_srq_recv(srq, wr, bad_wr);
    trace_result("srq_recv", ret, bad_wr ? *bad_wr : nullptr);
    return ret;
}

int traced_poll_cq(ibv_cq* cq, int num_entries, ibv_wc* wc) {
    int n = original(cq->context).poll_cq(cq, num_entries, wc);
    for (int i = 0; i < n; ++i)
        write_line("wc", wc_text(wc[i]));
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
