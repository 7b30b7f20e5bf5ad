#include "emu/cm_trace_text.h"
#include "emu/appendf.h"

#include "emu/ipc/cm_protocol.h"
#include "emu/verbs_names.h"

#include <arpa/inet.h>
#include <cstdio>

namespace emu::cm_text {
namespace {

using emu::appendf;

} // namespace

std::string addr(const sockaddr* sa) {
    if (!sa) return "NULL";
    char ip[INET6_ADDRSTRLEN] = "?";
    std::string out;
    if (sa->sa_family == AF_INET) {
        const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
        inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
        appendf(out, "%s:%u", ip, ntohs(in->sin_port));
    } else if (sa->sa_family == AF_INET6) {
        const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
        inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof ip);
        appendf(out, "[%s]:%u", ip, ntohs(in6->sin6_port));
    } else if (sa->sa_family == AF_UNSPEC) {
        out = "AF_UNSPEC";
    } else {
        appendf(out, "family=%d", sa->sa_family);
    }
    return out;
}

std::string port_space(int ps) {
    switch (ps) {
    case RDMA_PS_IPOIB:
        return "RDMA_PS_IPOIB";
    case RDMA_PS_TCP:
        return "RDMA_PS_TCP";
    case RDMA_PS_UDP:
        return "RDMA_PS_UDP";
    case RDMA_PS_IB:
        return "RDMA_PS_IB";
    }
    return std::to_string(ps);
}

std::string option(int level, int optname) {
    if (level == RDMA_OPTION_ID) {
        switch (optname) {
        case RDMA_OPTION_ID_TOS:
            return "RDMA_OPTION_ID_TOS";
        case RDMA_OPTION_ID_REUSEADDR:
            return "RDMA_OPTION_ID_REUSEADDR";
        case RDMA_OPTION_ID_AFONLY:
            return "RDMA_OPTION_ID_AFONLY";
        case RDMA_OPTION_ID_ACK_TIMEOUT:
            return "RDMA_OPTION_ID_ACK_TIMEOUT";
        }
    } else if (level == RDMA_OPTION_IB && optname == RDMA_OPTION_IB_PATH) {
        return "RDMA_OPTION_IB_PATH";
    }
    return std::to_string(level) + "/" + std::to_string(optname);
}

std::string ai_flags(int flags) {
    static constexpr struct {
        int bit;
        const char* name;
    } kFlags[] = {{RAI_PASSIVE, "RAI_PASSIVE"},
                  {RAI_NUMERICHOST, "RAI_NUMERICHOST"},
                  {RAI_NOROUTE, "RAI_NOROUTE"},
                  {RAI_FAMILY, "RAI_FAMILY"}};
    std::string out;
    for (const auto& f : kFlags) {
        if (!(flags & f.bit)) continue;
        if (!out.empty()) out += '|';
        out += f.name;
        flags &= ~f.bit;
    }
    if (flags) appendf(out, "%s0x%x", out.empty() ? "" : "|", unsigned(flags));
    return out.empty() ? "0" : out;
}

std::string conn_param(const rdma_conn_param* p) {
    if (!p) return "NULL";
    std::string out;
    appendf(out,
            "{private_data_len=%u responder_resources=%u initiator_depth=%u flow_control=%u "
            "retry_count=%u rnr_retry_count=%u srq=%u qp_num=0x%x}",
            p->private_data_len, p->responder_resources, p->initiator_depth, p->flow_control,
            p->retry_count, p->rnr_retry_count, p->srq, p->qp_num);
    return out;
}

std::string ud_param(const rdma_ud_param* p) {
    if (!p) return "NULL";
    std::string out;
    appendf(out, "{private_data_len=%u qp_num=0x%x qkey=0x%x}", p->private_data_len, p->qp_num,
            p->qkey);
    return out;
}

std::string qp_init_attr(const ibv_qp_init_attr* a) {
    if (!a) return "NULL";
    std::string out = "{type=" + names::qp_type(a->qp_type);
    appendf(out, " send_wr=%u recv_wr=%u send_sge=%u recv_sge=%u inline=%u sig_all=%d}",
            a->cap.max_send_wr, a->cap.max_recv_wr, a->cap.max_send_sge, a->cap.max_recv_sge,
            a->cap.max_inline_data, a->sq_sig_all);
    return out;
}

std::string srq_init_attr(const ibv_srq_init_attr* a) {
    if (!a) return "NULL";
    std::string out;
    appendf(out, "{max_wr=%u max_sge=%u limit=%u}", a->attr.max_wr, a->attr.max_sge,
            a->attr.srq_limit);
    return out;
}

std::string srq_init_attr_ex(const ibv_srq_init_attr_ex* a) {
    if (!a) return "NULL";
    static const char* const types[] = {"IBV_SRQT_BASIC", "IBV_SRQT_XRC", "IBV_SRQT_TM"};
    std::string out = "{type=";
    if (!(a->comp_mask & IBV_SRQ_INIT_ATTR_TYPE))
        out += "IBV_SRQT_BASIC";
    else if (a->srq_type >= 0 && a->srq_type <= IBV_SRQT_TM)
        out += types[a->srq_type];
    else
        out += std::to_string(a->srq_type);
    appendf(out, " max_wr=%u max_sge=%u limit=%u}", a->attr.max_wr, a->attr.max_sge,
            a->attr.srq_limit);
    return out;
}

std::string addrinfo(const rdma_addrinfo* ai) {
    if (!ai) return "NULL";
    return "{flags=" + ai_flags(ai->ai_flags) + " qp_type=" + names::qp_type(ai->ai_qp_type) +
           " port_space=" + port_space(ai->ai_port_space) + " src=" + addr(ai->ai_src_addr) +
           " dst=" + addr(ai->ai_dst_addr) + "}";
}

std::string id(const void* id, uint32_t handle) {
    if (!id) return "NULL";
    return "cm_id(" + std::to_string(handle) + ")";
}

std::string event(const rdma_cm_event& e, const std::string& id, const std::string& listen_id,
                  bool ud) {
    std::string out = ipc::cm_event_name(e.event);
    out += " id=" + id;
    if (e.event == RDMA_CM_EVENT_CONNECT_REQUEST) out += " listen_id=" + listen_id;
    appendf(out, " status=%d", e.status);
    switch (e.event) {
    case RDMA_CM_EVENT_CONNECT_REQUEST:
    case RDMA_CM_EVENT_CONNECT_RESPONSE:
    case RDMA_CM_EVENT_ESTABLISHED:
        out += ud ? " ud=" + ud_param(&e.param.ud) : " conn=" + conn_param(&e.param.conn);
        break;
    case RDMA_CM_EVENT_MULTICAST_JOIN:
        out += " ud=" + ud_param(&e.param.ud);
        break;
    case RDMA_CM_EVENT_REJECTED:
    case RDMA_CM_EVENT_UNREACHABLE:
        appendf(out, " private_data_len=%u",
                ud ? e.param.ud.private_data_len : e.param.conn.private_data_len);
        break;
    default:
        break;
    }
    return out;
}

} // namespace emu::cm_text
