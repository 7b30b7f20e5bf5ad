// What an app does to a connection: connect, accept, reject, establish, disconnect, notify, and
// the QP attributes the CM hands out for each step (cma.c with cm.c's rules, for RoCE).
#include "cm_agent.h"

#include "emu/wire/ip_cm.h"

#include <algorithm>
#include <cstring>

namespace nicsim::cm {

namespace ipcm = emu::wire::ipcm;

namespace {

constexpr uint32_t kPsnMask = 0xFFFFFF;
constexpr size_t kReqUserData = 92 - ipcm::kHeaderSize;      // 56
constexpr size_t kSidrReqUserData = 216 - ipcm::kHeaderSize; // 180
constexpr size_t kRepPrivateData = 196;
constexpr size_t kSidrRepPrivateData = 136;
constexpr size_t kRejPrivateData = 148;
constexpr uint8_t kHopLimit = 64;

// cm.c's ib_cm_init_qp_attr by QP type: RC and the XRC target answer reads and atomics (their
// RTR sets the responder's depth and RNR timer); RC and the XRC initiator are reliable
// requesters (their RTS sets the retries and the initiator depth). UC is neither.
bool has_responder(ibv_qp_type t) {
    return t == IBV_QPT_RC || t == IBV_QPT_XRC_RECV;
}
bool has_requester(ibv_qp_type t) {
    return t == IBV_QPT_RC || t == IBV_QPT_XRC_SEND;
}

} // namespace

int CmAgent::connect(CmClient& c, const ipc::CmConnectReq& req) {
    CmId* id = find(c, req.id);
    if (!id || id->state != RdmaState::RouteResolved) return EINVAL;
    const ipc::CmConnParam& p = req.param;
    const bool ud = id->qp_type == IBV_QPT_UD;
    if (p.private_data_len > (ud ? kSidrReqUserData : kReqUserData)) return EINVAL;
    id->local_comm_id = new_comm_id();
    by_local_comm_[id->local_comm_id] = id;
    id->tid = static_cast<uint64_t>(hi_tid_) << 32 | id->local_comm_id;
    id->peer_addr = id->remote.addr;
    id->peer_gid = gid_of(id->remote.addr);
    id->local_qpn = p.qp_num & kPsnMask;
    id->srq = p.srq != 0;
    id->max_cm_retries = config_.max_retries;
    id->has_cm = true;
    id->state = RdmaState::Connect;
    if (ud) {
        id->cm = CmState::SidrReqSent;
        id->timeout_ms = iba_time_ms(config_.response_timeout);
        send_sidr_req(*id, p);
        return 0;
    }
    id->seq_num = env_.random32() & kPsnMask;
    id->responder_resources = p.responder_resources;
    id->initiator_depth = p.initiator_depth;
    id->retry_count = std::min<uint8_t>(7, p.retry_count);
    id->rnr_retry_count = std::min<uint8_t>(7, p.rnr_retry_count);
    id->path_mtu = config_.mtu;
    id->av_timeout = ack_timeout(config_.ack_delay, config_.packet_life_time);
    // cm.c: twice the path's packet lifetime plus the time the other CM may take to answer.
    id->timeout_ms =
        iba_time_ms(config_.packet_life_time) * 2 + iba_time_ms(config_.response_timeout);
    id->cm = CmState::ReqSent;
    send_req(*id, p);
    return 0;
}

int CmAgent::accept(CmClient& c, const ipc::CmConnectReq& req) {
    CmId* id = find(c, req.id);
    if (!id || id->state != RdmaState::Connect) return EINVAL;
    const ipc::CmConnParam& p = req.param;
    if (id->qp_type == IBV_QPT_UD) {
        if (id->cm != CmState::SidrReqRcvd || p.private_data_len > kSidrRepPrivateData)
            return EINVAL;
        // cma.c's cma_set_default_qkey: the UDP and IB port spaces use RDMA_UDP_QKEY.
        id->qkey = p.qkey ? p.qkey : RDMA_UDP_QKEY;
        id->local_qpn = p.qp_num & kPsnMask;
        send_sidr_rep(*id, mad::SidrStatus::Success, id->local_qpn, id->qkey, p.private_data,
                      p.private_data_len);
        id->cm = CmState::Idle;
        return 0;
    }
    if ((id->cm != CmState::ReqRcvd && id->cm != CmState::MraReqSent) ||
        p.private_data_len > kRepPrivateData)
        return EINVAL;
    id->local_qpn = p.qp_num & kPsnMask;
    id->srq = p.srq != 0;
    id->responder_resources = p.responder_resources;
    id->initiator_depth = p.initiator_depth;
    id->cm = CmState::RepSent;
    send_rep(*id, p);
    return 0;
}

int CmAgent::reject(CmClient& c, const ipc::CmRejectReq& req) {
    CmId* id = find(c, req.id);
    if (!id || !id->has_cm) return EINVAL;
    // ucma: an app rejects as the consumer, or for an ECE option it does not take.
    const auto reason =
        req.reason ? static_cast<mad::RejReason>(req.reason) : mad::RejReason::ConsumerDefined;
    if (reason != mad::RejReason::ConsumerDefined &&
        reason != mad::RejReason::VendorOptionNotSupported)
        return EINVAL;
    if (id->qp_type == IBV_QPT_UD) {
        if (id->cm != CmState::SidrReqRcvd || req.private_data_len > kSidrRepPrivateData)
            return EINVAL;
        send_sidr_rep(*id, mad::SidrStatus::Reject, 0, 0, req.private_data, req.private_data_len);
        id->cm = CmState::Idle;
        return 0;
    }
    if (req.private_data_len > kRejPrivateData) return EINVAL;
    switch (id->cm) {
    case CmState::ReqSent:
    case CmState::MraReqRcvd:
    case CmState::ReqRcvd:
    case CmState::MraReqSent:
    case CmState::RepRcvd:
    case CmState::MraRepSent:
        send_rej(*id, reason, nullptr, 0, req.private_data, req.private_data_len);
        reset_to_idle(*id);
        return 0;
    case CmState::RepSent:
    case CmState::MraRepRcvd:
        send_rej(*id, reason, nullptr, 0, req.private_data, req.private_data_len);
        enter_timewait(*id);
        return 0;
    default:
        return EINVAL;
    }
}

// The active side's app has its QP ready (librdmacm moved it to RTS on CONNECT_RESPONSE): the
// RTU tells the passive side (IBA 12.9.5.2).
int CmAgent::establish(CmClient& c, uint32_t handle) {
    CmId* id = find(c, handle);
    if (!id || (id->cm != CmState::RepRcvd && id->cm != CmState::MraRepSent)) return EINVAL;
    send_rtu(*id);
    id->cm = CmState::Established;
    ++counters_.connections;
    return 0;
}

// cma.c's rdma_disconnect: start the disconnection, or answer the peer's (IBA 12.9.7).
int CmAgent::disconnect(CmClient& c, uint32_t handle) {
    CmId* id = find(c, handle);
    if (!id || !id->has_cm) return EINVAL;
    if (id->cm == CmState::Established) {
        send_dreq(*id);
        id->cm = CmState::DreqSent;
        id->out.active = true;
        id->out.timeout_ms = id->timeout_ms;
        id->out.retries_left = id->max_cm_retries;
        arm(*id, Timer::Retransmit, id->timeout_ms);
    } else if (id->cm == CmState::DreqRcvd) {
        send_drep(*id);
        enter_timewait(*id);
    }
    return 0;
}

int CmAgent::notify(CmClient& c, const ipc::CmNotifyReq& req) {
    CmId* id = find(c, req.id);
    if (!id || !id->has_cm || req.event != IBV_EVENT_COMM_EST) return EINVAL;
    if (id->cm == CmState::Established) return EISCONN;
    if (id->cm != CmState::RepSent && id->cm != CmState::MraRepRcvd) return EINVAL;
    // Data arrived before the RTU (IBA 12.9.5.2): the connection is up.
    disarm(*id);
    id->out.active = false;
    id->cm = CmState::Established;
    ++counters_.connections;
    if (id->state == RdmaState::Connect) deliver(*id, event(*id, RDMA_CM_EVENT_ESTABLISHED));
    return 0;
}

// cma.c's rdma_init_qp_attr over cm.c's ib_cm_init_qp_attr: before a connection exists (and
// always for UD) INIT only, with no remote access; during one, each state's attributes.
int CmAgent::init_qp_attr(CmClient& c, const ipc::CmInitQpAttrReq& req,
                          ipc::CmInitQpAttrReply& out) {
    CmId* id = find(c, req.id);
    if (!id) return EINVAL;
    ibv_qp_attr& a = out.attr;
    a = {};
    a.qp_state = static_cast<ibv_qp_state>(req.qp_state);
    const bool ud = id->qp_type == IBV_QPT_UD;
    const bool connecting = id->has_cm && id->cm != CmState::Idle && id->cm != CmState::Timewait &&
                            id->cm != CmState::DreqSent && id->cm != CmState::DreqRcvd;
    if (ud || !id->has_cm) {
        a.pkey_index = 0;
        a.port_num = 1;
        out.mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
        if (ud) {
            a.qkey = id->qkey ? id->qkey : RDMA_UDP_QKEY;
            out.mask |= IBV_QP_QKEY;
        } else {
            a.qp_access_flags = 0;
            out.mask |= IBV_QP_ACCESS_FLAGS;
        }
        return 0;
    }
    if (!connecting) return EINVAL;
    switch (req.qp_state) {
    case IBV_QPS_INIT:
        out.mask = IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
        a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
        if (id->responder_resources && has_responder(id->qp_type))
            a.qp_access_flags |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
        a.pkey_index = 0;
        a.port_num = 1;
        return 0;
    case IBV_QPS_RTR:
        if (id->cm == CmState::ReqSent || id->cm == CmState::MraReqRcvd) return EINVAL;
        out.mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
        a.ah_attr.is_global = 1;
        std::memcpy(a.ah_attr.grh.dgid.raw, id->peer_gid.data(), 16);
        a.ah_attr.grh.sgid_index = 0;
        a.ah_attr.grh.hop_limit = kHopLimit;
        a.ah_attr.grh.traffic_class = id->tos;
        a.ah_attr.port_num = 1;
        a.path_mtu = id->path_mtu;
        a.dest_qp_num = id->remote_qpn;
        a.rq_psn = id->seq_num;
        if (has_responder(id->qp_type)) {
            out.mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
            a.max_dest_rd_atomic = id->responder_resources;
            a.min_rnr_timer = 0; // cm.c leaves the RNR timer at code 0
        }
        return 0;
    case IBV_QPS_RTS:
        if (id->cm == CmState::ReqSent || id->cm == CmState::MraReqRcvd) return EINVAL;
        out.mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
        a.sq_psn = id->peer_psn;
        if (has_requester(id->qp_type)) {
            out.mask |= IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
            a.retry_cnt = id->retry_count;
            a.rnr_retry = id->rnr_retry_count;
            a.max_rd_atomic = id->initiator_depth;
        }
        // An XRC target sends only responses, but its ACK timeout is the path's too.
        if (has_requester(id->qp_type) || has_responder(id->qp_type)) {
            out.mask |= IBV_QP_TIMEOUT;
            a.timeout = id->ack_timeout_set ? id->ack_timeout : id->av_timeout;
        }
        return 0;
    default:
        return EINVAL;
    }
}

} // namespace nicsim::cm
