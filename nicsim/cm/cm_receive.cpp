// The CM messages this host receives on QP1 (IBA 12.6, 12.9; handled as Linux's cm.c does and
// turned into events as cma.c does). Anything from the wire may be forged or stale: a message
// that names no connection, or one in a state that takes no such message, is counted and
// dropped.
#include "cm_agent.h"

#include "emu/wire/ip_cm.h"

#include <endian.h>

#include <algorithm>
#include <cstring>

namespace nicsim::cm {

namespace ipcm = emu::wire::ipcm;

namespace {

constexpr uint32_t kPsnMask = 0xFFFFFF;
constexpr uint8_t kHopLimit = 64;

void put_private(ipc::CmConnParam& c, const mad::PrivateData& p, size_t from, size_t size) {
    size = std::min(size, sizeof c.private_data);
    std::memcpy(c.private_data, p.bytes.data() + from, size);
    c.private_data_len = static_cast<uint8_t>(size);
}

// The IP address of the header's source or destination: IPv4 (the last four bytes), or IPv6
// (::ffff:a.b.c.d is IPv4 then too).
emu::wire::IpAddress header_address(const ipcm::Header& h, const std::array<uint8_t, 16>& a) {
    if (h.ip_version == 4) return emu::wire::IpAddress::from_ipv4(ipcm::to_ipv4(a));
    return emu::wire::IpAddress::from_gid(a.data());
}

// cm.c's cm_req_get_qp_type: the passive side's QP type for the REQ's transport service type
// (IBA 12.6.5): RC, UC, or 3 with extended type 1, an XRC initiator whose target is an
// XRC_RECV QP. False for any other (RD, reserved extended types).
bool passive_qp_type(const mad::Req& m, ibv_qp_type& type) {
    if (m.transport_type == mad::kTransportRc || m.transport_type == mad::kTransportUc) {
        if (m.extended_transport_type != 0) return false;
        type = m.transport_type == mad::kTransportUc ? IBV_QPT_UC : IBV_QPT_RC;
        return true;
    }
    if (m.transport_type == mad::kTransportExtended &&
        m.extended_transport_type == mad::kExtendedTransportXrc) {
        type = IBV_QPT_XRC_RECV;
        return true;
    }
    return false;
}

} // namespace

void CmAgent::receive(const Address& src, const uint8_t* bytes, size_t len) {
    ++counters_.rx_mads;
    mad::MadHeader h;
    const mad::MadCheck check = mad::check(bytes, len, h);
    switch (check) {
    case mad::MadCheck::Ok:
        break;
    case mad::MadCheck::WrongSize:
        ++counters_.rx_malformed;
        break;
    case mad::MadCheck::NotCm:
    case mad::MadCheck::BadClassVersion:
    case mad::MadCheck::BadMethod:
        ++counters_.rx_not_cm;
        break;
    case mad::MadCheck::UnknownAttribute:
        ++counters_.rx_unknown_attr;
        break;
    case mad::MadCheck::Unsupported:
        ++counters_.rx_unsupported;
        break;
    }
    if (check != mad::MadCheck::Ok) {
        log_.debug("cm: dropped a MAD from {}: {} (attribute {:#x})", src.text(),
                   mad::describe(check), h.attr_id);
        return;
    }
    switch (static_cast<mad::Attr>(h.attr_id)) {
    case mad::Attr::Req:
        return on_req(src, h, mad::decode<mad::Req>(bytes));
    case mad::Attr::Mra:
        return on_mra(src, mad::decode<mad::Mra>(bytes));
    case mad::Attr::Rej:
        return on_rej(src, mad::decode<mad::Rej>(bytes));
    case mad::Attr::Rep:
        return on_rep(src, h, mad::decode<mad::Rep>(bytes));
    case mad::Attr::Rtu:
        return on_rtu(src, mad::decode<mad::Rtu>(bytes));
    case mad::Attr::Dreq:
        return on_dreq(src, h, mad::decode<mad::Dreq>(bytes));
    case mad::Attr::Drep:
        return on_drep(src, mad::decode<mad::Drep>(bytes));
    case mad::Attr::SidrReq:
        return on_sidr_req(src, h, mad::decode<mad::SidrReq>(bytes));
    case mad::Attr::SidrRep:
        return on_sidr_rep(src, mad::decode<mad::SidrRep>(bytes));
    default:
        ++counters_.rx_unsupported;
        return;
    }
}

// The listener of a service ID for a request to `dst_addr`: one bound to that address, else one
// on the wildcard. `any_on_port`: some listener has the port (the address did not match).
CmId* CmAgent::listener_for(uint64_t service_id, const Address& dst_addr, bool& any_on_port) {
    any_on_port = false;
    CmId* wildcard = nullptr;
    const uint16_t ps = ipcm::port_space_of(service_id);
    const uint16_t port = ipcm::port_of(service_id);
    for (auto& [h, id] : ids_) {
        if (id->state != RdmaState::Listen || id->ps != ps || id->local.port != port) continue;
        any_on_port = true;
        if (id->local.addr == dst_addr) return id.get();
        if (id->local.addr.is_unspecified()) wildcard = id.get();
    }
    return wildcard;
}

// A passive ID for a request the listener takes: it reports on the listener's channel, to the
// listener's app, and counts against the backlog until that app reads the request.
CmId* CmAgent::new_passive_id(CmId& listener, const Address& src, const mad::MadHeader& h,
                              const ipcm::Header& ip) {
    auto owned = std::make_unique<CmId>();
    CmId* id = owned.get();
    id->handle = ++last_handle_;
    id->owner = listener.owner;
    id->channel = listener.channel;
    id->ps = listener.ps;
    id->state = RdmaState::Connect;
    id->has_cm = true;
    const uint16_t family = ip.ip_version == 6 ? AF_INET6 : AF_INET;
    id->local = {header_address(ip, ip.dst), listener.local.port, family};
    id->remote = {header_address(ip, ip.src), ip.src_port, family};
    id->on_device = true;
    id->has_route = true;
    id->tos = listener.tos;
    id->tid = h.tid;
    id->peer_addr = src;
    id->local_comm_id = new_comm_id();
    by_local_comm_[id->local_comm_id] = id;
    id->listener = listener.handle;
    ++listener.pending_requests;
    ++pending_requests_;
    ids_[id->handle] = std::move(owned);
    return id;
}

void CmAgent::on_req(const Address& src, const mad::MadHeader& h, const mad::Req& m) {
    // A REQ sent again (IBA 12.9.5.3): answer as before, once the app has seen the first.
    if (auto it = by_remote_.find({m.local_ca_guid, m.local_comm_id}); it != by_remote_.end()) {
        ++counters_.rx_duplicates;
        CmId* id = by_handle(it->second);
        if (id && id->cm == CmState::MraReqSent) send_mra(*id, mad::MsgResponse::Req);
        if (id && id->cm == CmState::Timewait)
            send_rej(*id, mad::RejReason::StaleConnection, nullptr, 0, nullptr, 0);
        return;
    }
    ibv_qp_type qp_type = IBV_QPT_RC;
    if (!passive_qp_type(m, qp_type)) {
        ++counters_.req_rejected;
        return issue_rej(src, h.tid, m.local_comm_id, mad::RejReason::InvalidTransportType);
    }
    if (!ipcm::is_ip_service(m.service_id)) {
        ++counters_.req_no_listener;
        return issue_rej(src, h.tid, m.local_comm_id, mad::RejReason::InvalidServiceId);
    }
    ipcm::Header ip;
    const ipcm::HeaderCheck hc = ipcm::decode(m.private_data.bytes.data(), ip);
    const Address dst_addr = hc == ipcm::HeaderCheck::Ok ? header_address(ip, ip.dst) : Address{};
    bool any_on_port = false;
    CmId* l = listener_for(m.service_id, dst_addr, any_on_port);
    if (!l) {
        if (!any_on_port) {
            ++counters_.req_no_listener;
            log_.debug("cm: REQ from {} for service {:#x} (comm ID {:#x}): nobody listens",
                       src.text(), m.service_id, m.local_comm_id);
            return issue_rej(src, h.tid, m.local_comm_id, mad::RejReason::InvalidServiceId);
        }
        ++counters_.req_rejected; // the port listens, on another address
        return issue_rej(src, h.tid, m.local_comm_id, mad::RejReason::ConsumerDefined);
    }
    // cma.c refuses a request its listener cannot take (cma_check_req_qp_type: the listener's
    // QP type must be the REQ's); cm.c then rejects as the consumer.
    if (hc != ipcm::HeaderCheck::Ok || dst_addr.is_unspecified() ||
        header_address(ip, ip.src).is_unspecified() || l->qp_type != qp_type) {
        ++counters_.req_rejected;
        log_.debug("cm: REQ from {} refused: {}", src.text(),
                   hc != ipcm::HeaderCheck::Ok ? ipcm::describe(hc) : "address or transport");
        return issue_rej(src, h.tid, m.local_comm_id, mad::RejReason::ConsumerDefined);
    }
    const mad::Gid ours = gid_of(config_.local_addr);
    if (m.primary.remote_gid != ours) {
        ++counters_.req_rejected;
        return issue_rej(src, h.tid, m.local_comm_id, mad::RejReason::InvalidGid, ours.data(),
                         ours.size());
    }
    // A full backlog drops the request without a REJ, so the active side's retry may find room
    // (ucma.c and cm.c do the same).
    if (l->pending_requests >= l->backlog || pending_requests_ >= config_.max_pending_requests) {
        ++counters_.req_backlog_drops;
        return;
    }
    CmId* id = new_passive_id(*l, src, h, ip);
    id->qp_type = qp_type;
    id->remote_comm_id = m.local_comm_id;
    id->remote_ca_guid = m.local_ca_guid;
    by_remote_[{m.local_ca_guid, m.local_comm_id}] = id->handle;
    id->peer_gid = m.primary.local_gid;
    id->remote_qpn = m.local_qpn;
    id->peer_psn = m.starting_psn;
    id->seq_num = env_.random32() & kPsnMask;
    id->initiator_depth = m.responder_resources;
    id->responder_resources = m.initiator_depth;
    id->retry_count = m.retry_count;
    id->rnr_retry_count = m.rnr_retry_count;
    id->path_mtu = static_cast<ibv_mtu>(std::clamp<int>(m.path_mtu, IBV_MTU_256, IBV_MTU_4096));
    id->av_timeout = ack_timeout(config_.ack_delay,
                                 m.primary.local_ack_timeout - (m.primary.local_ack_timeout > 0));
    id->timeout_ms = iba_time_ms(m.local_cm_response_timeout);
    id->max_cm_retries = m.max_cm_retries;
    // cma.c sends an MRA only when the REQ comes again before the app answered
    // (CMA_CM_MRA_SETTING is IB_CM_MRA_FLAG_DELAY).
    id->cm = CmState::MraReqSent;

    ipc::CmEventRecord e = event(*id, RDMA_CM_EVENT_CONNECT_REQUEST);
    e.listen_id = l->handle;
    e.conn.responder_resources = m.initiator_depth;
    e.conn.initiator_depth = m.responder_resources;
    e.conn.flow_control = m.flow_control;
    e.conn.retry_count = m.retry_count;
    e.conn.rnr_retry_count = m.rnr_retry_count;
    e.conn.srq = m.srq;
    e.conn.qp_num = m.local_qpn;
    put_private(e.conn, m.private_data, ipcm::kHeaderSize, 92 - ipcm::kHeaderSize);
    deliver(*id, e);
}

void CmAgent::on_mra(const Address& src, const mad::Mra& m) {
    const auto mraed = static_cast<mad::MsgResponse>(m.message_mraed);
    CmId* id = nullptr;
    if (mraed == mad::MsgResponse::Req) {
        auto it = by_local_comm_.find(m.remote_comm_id);
        id = it == by_local_comm_.end() ? nullptr : it->second;
    } else {
        id = by_comm_id(m.remote_comm_id, m.local_comm_id);
    }
    if (!id || id->peer_addr != src) {
        ++counters_.rx_unmatched;
        return;
    }
    if (id->cm == CmState::ReqSent && mraed == mad::MsgResponse::Req) {
        id->cm = CmState::MraReqRcvd;
    } else if (id->cm == CmState::RepSent && mraed == mad::MsgResponse::Rep) {
        id->cm = CmState::MraRepRcvd;
    } else {
        if (id->cm == CmState::MraReqRcvd || id->cm == CmState::MraRepRcvd)
            ++counters_.rx_duplicates;
        else
            ++counters_.rx_bad_state;
        return;
    }
    // IBA 12.6.6: the peer needs its service timeout; wait that long (plus the path) instead.
    id->out.timeout_ms = iba_time_ms(m.service_timeout) + iba_time_ms(id->av_timeout);
    arm(*id, Timer::Retransmit, id->out.timeout_ms);
}

void CmAgent::on_rej(const Address& src, const mad::Rej& m) {
    const auto reason = static_cast<mad::RejReason>(m.reason);
    CmId* id = nullptr;
    if (reason == mad::RejReason::Timeout) {
        // The active side gave up: its REJ names it by its CA GUID (in the ARI) and comm ID.
        uint64_t guid;
        std::memcpy(&guid, m.ari.data(), sizeof guid);
        auto it = by_remote_.find({be64toh(guid), m.local_comm_id});
        id = it == by_remote_.end() ? nullptr : by_handle(it->second);
    } else if (static_cast<mad::MsgResponse>(m.message_rejected) == mad::MsgResponse::Req) {
        auto it = by_local_comm_.find(m.remote_comm_id);
        id = it == by_local_comm_.end() ? nullptr : it->second;
    } else {
        id = by_comm_id(m.remote_comm_id, m.local_comm_id);
    }
    if (!id || id->peer_addr != src) {
        ++counters_.rx_unmatched;
        return;
    }
    switch (id->cm) {
    case CmState::ReqSent:
    case CmState::MraReqRcvd:
    case CmState::RepSent:
    case CmState::MraRepRcvd:
    case CmState::ReqRcvd:
    case CmState::MraReqSent:
        if (reason == mad::RejReason::StaleConnection)
            enter_timewait(*id);
        else
            reset_to_idle(*id);
        break;
    case CmState::DreqSent:
    case CmState::RepRcvd:
    case CmState::MraRepSent:
    case CmState::Established:
        enter_timewait(*id);
        break;
    default:
        ++counters_.rx_bad_state;
        return;
    }
    if (id->state != RdmaState::Connect) return;
    log_.debug("cm#{}: rejected by {}, reason {}", id->handle, id->peer_addr.text(), m.reason);
    ipc::CmEventRecord e = event(*id, RDMA_CM_EVENT_REJECTED, m.reason);
    put_private(e.conn, m.private_data, 0, m.private_data.len);
    deliver(*id, e);
}

void CmAgent::on_rep(const Address& src, const mad::MadHeader&, const mad::Rep& m) {
    auto it = by_local_comm_.find(m.remote_comm_id);
    CmId* id = it == by_local_comm_.end() ? nullptr : it->second;
    if (!id || id->remote_comm_id != 0) {
        // A REP again: the RTU (or MRA) it needs was lost.
        CmId* known = by_comm_id(m.remote_comm_id, m.local_comm_id);
        if (!known) {
            ++counters_.rx_unmatched;
            return;
        }
        ++counters_.rx_duplicates;
        if (known->cm == CmState::Established) send_rtu(*known);
        if (known->cm == CmState::MraRepSent) send_mra(*known, mad::MsgResponse::Rep);
        return;
    }
    if ((id->cm != CmState::ReqSent && id->cm != CmState::MraReqRcvd) || src != id->peer_addr) {
        ++counters_.rx_bad_state;
        return;
    }
    id->remote_comm_id = m.local_comm_id;
    id->remote_ca_guid = m.local_ca_guid;
    by_remote_[{m.local_ca_guid, m.local_comm_id}] = id->handle;
    // cm.c's cm_rep_handler: an XRC target names its QP in the local EE context number field.
    id->remote_qpn = id->qp_type == IBV_QPT_XRC_SEND ? m.local_eecn : m.local_qpn;
    id->initiator_depth = m.responder_resources;
    id->responder_resources = m.initiator_depth;
    id->peer_psn = m.starting_psn;
    id->rnr_retry_count = m.rnr_retry_count;
    id->av_timeout = ack_timeout(m.target_ack_delay, id->av_timeout - 1);
    disarm(*id);
    id->out.active = false;
    // cma.c, for a QP in user space: the MRA is sent only if the REP comes again before the app
    // established the connection.
    id->cm = CmState::MraRepSent;
    if (id->state != RdmaState::Connect) return;
    ipc::CmEventRecord e = event(*id, RDMA_CM_EVENT_CONNECT_RESPONSE);
    e.conn.responder_resources = m.initiator_depth;
    e.conn.initiator_depth = m.responder_resources;
    e.conn.flow_control = m.flow_control;
    e.conn.rnr_retry_count = m.rnr_retry_count;
    e.conn.srq = m.srq;
    e.conn.qp_num = id->remote_qpn;
    put_private(e.conn, m.private_data, 0, m.private_data.len);
    deliver(*id, e);
}

void CmAgent::on_rtu(const Address& src, const mad::Rtu& m) {
    CmId* id = by_comm_id(m.remote_comm_id, m.local_comm_id);
    if (!id || id->peer_addr != src) {
        ++counters_.rx_unmatched;
        return;
    }
    if (id->cm != CmState::RepSent && id->cm != CmState::MraRepRcvd) {
        ++counters_.rx_duplicates;
        return;
    }
    disarm(*id);
    id->out.active = false;
    id->cm = CmState::Established;
    ++counters_.connections;
    if (id->state == RdmaState::Connect) deliver(*id, event(*id, RDMA_CM_EVENT_ESTABLISHED));
}

void CmAgent::on_dreq(const Address& src, const mad::MadHeader& h, const mad::Dreq& m) {
    CmId* id = by_comm_id(m.remote_comm_id, m.local_comm_id);
    if (!id) {
        // The connection is gone here already: the DREP the peer waits for (cm.c's
        // cm_issue_drep).
        ++counters_.rx_unmatched;
        return issue_drep(src, h.tid, m);
    }
    if (m.remote_qpn != id->local_qpn || id->peer_addr != src) {
        ++counters_.rx_unmatched;
        return;
    }
    switch (id->cm) {
    case CmState::RepSent:
    case CmState::DreqSent:
    case CmState::MraRepRcvd:
        disarm(*id);
        id->out.active = false;
        break;
    case CmState::Established:
        break;
    case CmState::Timewait: // our DREP was lost
        ++counters_.rx_duplicates;
        return send_drep(*id);
    case CmState::DreqRcvd:
        ++counters_.rx_duplicates;
        return;
    default:
        ++counters_.rx_bad_state;
        return;
    }
    id->cm = CmState::DreqRcvd;
    id->tid = h.tid;
    if (id->state != RdmaState::Connect) return;
    // The app answers with rdma_disconnect (or by destroying the ID), which sends the DREP.
    id->state = RdmaState::Disconnect;
    deliver(*id, event(*id, RDMA_CM_EVENT_DISCONNECTED));
}

void CmAgent::on_drep(const Address& src, const mad::Drep& m) {
    CmId* id = by_comm_id(m.remote_comm_id, m.local_comm_id);
    if (!id || id->peer_addr != src) {
        ++counters_.rx_unmatched;
        return;
    }
    if (id->cm != CmState::DreqSent && id->cm != CmState::DreqRcvd) {
        ++counters_.rx_duplicates;
        return;
    }
    disarm(*id);
    enter_timewait(*id);
    if (id->state != RdmaState::Connect) return;
    id->state = RdmaState::Disconnect;
    deliver(*id, event(*id, RDMA_CM_EVENT_DISCONNECTED));
}

void CmAgent::on_sidr_req(const Address& src, const mad::MadHeader& h, const mad::SidrReq& m) {
    if (sidr_by_remote_.count({src, m.request_id})) {
        ++counters_.rx_duplicates;
        return;
    }
    ipcm::Header ip;
    const ipcm::HeaderCheck hc = ipcm::decode(m.private_data.bytes.data(), ip);
    const Address dst_addr = hc == ipcm::HeaderCheck::Ok ? header_address(ip, ip.dst) : Address{};
    bool any_on_port = false;
    CmId* l = ipcm::is_ip_service(m.service_id) ? listener_for(m.service_id, dst_addr, any_on_port)
                                                : nullptr;
    if (!l) {
        ++counters_.req_no_listener;
        return issue_sidr_rep(src, h.tid, m, mad::SidrStatus::Unsupported);
    }
    if (hc != ipcm::HeaderCheck::Ok || dst_addr.is_unspecified() ||
        header_address(ip, ip.src).is_unspecified() || l->qp_type != IBV_QPT_UD) {
        ++counters_.req_rejected;
        return issue_sidr_rep(src, h.tid, m, mad::SidrStatus::Reject);
    }
    if (l->pending_requests >= l->backlog || pending_requests_ >= config_.max_pending_requests) {
        ++counters_.req_backlog_drops;
        return;
    }
    CmId* id = new_passive_id(*l, src, h, ip);
    id->qp_type = IBV_QPT_UD;
    id->cm = CmState::SidrReqRcvd;
    id->remote_comm_id = m.request_id;
    id->peer_gid = gid_of(src);
    sidr_by_remote_[{src, m.request_id}] = id->handle;
    ipc::CmEventRecord e = event(*id, RDMA_CM_EVENT_CONNECT_REQUEST);
    e.listen_id = l->handle;
    put_private(e.conn, m.private_data, ipcm::kHeaderSize, 216 - ipcm::kHeaderSize);
    deliver(*id, e);
}

void CmAgent::on_sidr_rep(const Address& src, const mad::SidrRep& m) {
    auto it = by_local_comm_.find(m.request_id);
    CmId* id = it == by_local_comm_.end() ? nullptr : it->second;
    if (!id || id->peer_addr != src) {
        ++counters_.rx_unmatched;
        return;
    }
    if (id->cm != CmState::SidrReqSent) {
        ++counters_.rx_duplicates;
        return;
    }
    reset_to_idle(*id);
    if (id->state != RdmaState::Connect) return;
    if (m.status != static_cast<uint8_t>(mad::SidrStatus::Success)) {
        ipc::CmEventRecord e = event(*id, RDMA_CM_EVENT_UNREACHABLE, m.status);
        put_private(e.conn, m.private_data, 0, m.private_data.len);
        return deliver(*id, e);
    }
    id->qkey = m.qkey;
    id->remote_qpn = m.qpn;
    ipc::CmEventRecord e = event(*id, RDMA_CM_EVENT_ESTABLISHED);
    e.ah.is_global = 1;
    std::memcpy(e.ah.grh.dgid.raw, id->peer_gid.data(), 16);
    e.ah.grh.hop_limit = kHopLimit;
    e.ah.grh.traffic_class = id->tos;
    e.ah.port_num = 1;
    e.ud_qp_num = m.qpn;
    e.ud_qkey = m.qkey;
    put_private(e.conn, m.private_data, 0, m.private_data.len);
    deliver(*id, e);
}

} // namespace nicsim::cm
