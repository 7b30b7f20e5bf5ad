#include "trace/trace.h"
#include "emu/appendf.h"

#include "emu/trace_file.h"
#include "emu/verbs_names.h"

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <string>
#include <time.h>
#include <unistd.h>

namespace verbs::trace {

namespace {

namespace names = emu::names;

using emu::appendf;

} // namespace

bool enabled() {
    return emu::trace_file::enabled();
}

void write_line(const char* kind, const std::string& text) {
    emu::trace_file::write_line(kind, text);
}

void append(std::string& out, const ibv_context* ctx) {
    if (!ctx) return out.append("NULL"), void();
    appendf(out, "ctx(%s)", ctx->device ? ctx->device->name : "?");
}

void append(std::string& out, const ibv_device* dev) {
    if (!dev) return out.append("NULL"), void();
    appendf(out, "dev(%s)", dev->name);
}

void append(std::string& out, const ibv_pd* pd) {
    if (!pd) return out.append("NULL"), void();
    appendf(out, "pd(%u)", pd->handle);
}

void append(std::string& out, const ibv_mr* mr) {
    if (!mr) return out.append("NULL"), void();
    appendf(out, "mr(len=%zu lkey=0x%x rkey=0x%x)", mr->length, mr->lkey, mr->rkey);
}

void append(std::string& out, const ibv_cq* cq) {
    if (!cq) return out.append("NULL"), void();
    appendf(out, "cq(cqe=%d)", cq->cqe);
}

void append(std::string& out, const ibv_qp* qp) {
    if (!qp) return out.append("NULL"), void();
    out += "qp(qpn=" + qpn_text(qp->qp_num) + " type=" + names::qp_type(qp->qp_type) + ")";
}

void append(std::string& out, const ibv_srq* srq) {
    if (!srq) return out.append("NULL"), void();
    appendf(out, "srq(%u)", srq->handle);
}

void append(std::string& out, const ibv_ah* ah) {
    if (!ah) return out.append("NULL"), void();
    appendf(out, "ah(%u)", ah->handle);
}

void append(std::string& out, const ibv_comp_channel* channel) {
    if (!channel) return out.append("NULL"), void();
    appendf(out, "channel(fd=%d)", channel->fd);
}

void append(std::string& out, Input<ibv_qp_init_attr> in) {
    const ibv_qp_init_attr* a = in.value;
    if (!a) return out.append("NULL"), void();
    out += "{type=" + names::qp_type(a->qp_type);
    appendf(out, " send_wr=%u recv_wr=%u send_sge=%u recv_sge=%u inline=%u sig_all=%d}",
            a->cap.max_send_wr, a->cap.max_recv_wr, a->cap.max_send_sge, a->cap.max_recv_sge,
            a->cap.max_inline_data, a->sq_sig_all);
}

void append(std::string& out, QpAttrInput in) {
    const ibv_qp_attr* a = in.attr;
    if (!a) return out.append("NULL"), void();
    const int m = in.mask;
    out += '{';
    if (m & IBV_QP_STATE) out += " state=" + names::qp_state(a->qp_state);
    if (m & IBV_QP_CUR_STATE) out += " cur_state=" + names::qp_state(a->cur_qp_state);
    if (m & IBV_QP_PKEY_INDEX) appendf(out, " pkey_index=%u", a->pkey_index);
    if (m & IBV_QP_PORT) appendf(out, " port=%u", a->port_num);
    if (m & IBV_QP_ACCESS_FLAGS) out += " access=" + names::access_flags(a->qp_access_flags);
    if (m & IBV_QP_QKEY) appendf(out, " qkey=0x%x", a->qkey);
    if (m & IBV_QP_PATH_MTU) out += " mtu=" + names::mtu(a->path_mtu);
    if (m & IBV_QP_DEST_QPN) out += " dest_qpn=" + qpn_text(a->dest_qp_num);
    if (m & IBV_QP_RQ_PSN) appendf(out, " rq_psn=0x%x", a->rq_psn);
    if (m & IBV_QP_SQ_PSN) appendf(out, " sq_psn=0x%x", a->sq_psn);
    if (m & IBV_QP_MAX_DEST_RD_ATOMIC)
        appendf(out, " max_dest_rd_atomic=%u", a->max_dest_rd_atomic);
    if (m & IBV_QP_MAX_QP_RD_ATOMIC) appendf(out, " max_rd_atomic=%u", a->max_rd_atomic);
    if (m & IBV_QP_MIN_RNR_TIMER) appendf(out, " min_rnr_timer=%u", a->min_rnr_timer);
    if (m & IBV_QP_TIMEOUT) appendf(out, " timeout=%u", a->timeout);
    if (m & IBV_QP_RETRY_CNT) appendf(out, " retry_cnt=%u", a->retry_cnt);
    if (m & IBV_QP_RNR_RETRY) appendf(out, " rnr_retry=%u", a->rnr_retry);
    if (m & IBV_QP_AV) {
        char gid[INET6_ADDRSTRLEN] = "?";
        ::inet_ntop(AF_INET6, a->ah_attr.grh.dgid.raw, gid, sizeof gid);
        appendf(out, " av={is_global=%u dgid=%s sgid_index=%u hop_limit=%u}", a->ah_attr.is_global,
                gid, a->ah_attr.grh.sgid_index, a->ah_attr.grh.hop_limit);
    }
    out += " } mask=" + names::qp_attr_mask(unsigned(m));
}

void append(std::string& out, Input<ibv_ah_attr> in) {
    const ibv_ah_attr* a = in.value;
    if (!a) return out.append("NULL"), void();
    appendf(out, "{dlid=%u sl=%u is_global=%u sgid_index=%u port=%u}", a->dlid, a->sl, a->is_global,
            a->grh.sgid_index, a->port_num);
}

void append(std::string& out, Input<ibv_srq_init_attr> in) {
    const ibv_srq_init_attr* a = in.value;
    if (!a) return out.append("NULL"), void();
    appendf(out, "{max_wr=%u max_sge=%u limit=%u}", a->attr.max_wr, a->attr.max_sge,
            a->attr.srq_limit);
}

void append(std::string& out, AccessFlags flags) {
    out += names::access_flags(static_cast<uint32_t>(flags.value));
}

void append(std::string& out, QpAttrMask mask) {
    out += names::qp_attr_mask(static_cast<uint32_t>(mask.value));
}

void append(std::string& out, const ibv_async_event* event) {
    if (!event) return out.append("NULL"), void();
    out += "{" + names::event_type(event->event_type);
    switch (event->event_type) {
    case IBV_EVENT_CQ_ERR:
        appendf(out, " cq=%p", static_cast<void*>(event->element.cq));
        break;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED:
        appendf(out, " srq=%u", event->element.srq ? event->element.srq->handle : 0);
        break;
    case IBV_EVENT_PORT_ACTIVE:
    case IBV_EVENT_PORT_ERR:
    case IBV_EVENT_LID_CHANGE:
    case IBV_EVENT_PKEY_CHANGE:
    case IBV_EVENT_SM_CHANGE:
    case IBV_EVENT_CLIENT_REREGISTER:
    case IBV_EVENT_GID_CHANGE:
    case IBV_EVENT_DEVICE_FATAL:
        appendf(out, " port=%d", event->element.port_num);
        break;
    case IBV_EVENT_WQ_FATAL:
        break;
    default:
        if (event->element.qp) out += " qp=" + qpn_text(event->element.qp->qp_num);
    }
    out += "}";
}

void append(std::string& out, const char* text) {
    if (!text) return out.append("NULL"), void();
    out += '"';
    out += text;
    out += '"';
}

void append(std::string& out, const void* ptr) {
    if (!ptr) return out.append("NULL"), void();
    appendf(out, "%p", ptr);
}

void append(std::string& out, long long value) {
    appendf(out, "%lld", value);
}

void append(std::string& out, unsigned long long value) {
    appendf(out, "%llu", value);
}

void append_failure(std::string& out) {
    const char* name = strerrorname_np(errno);
    appendf(out, " errno=%s", name ? name : "?");
}

} // namespace verbs::trace
