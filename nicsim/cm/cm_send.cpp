// The CM messages this host sends (IBA 12.6; field values as Linux's cm.c and cma.c set them
// for RoCE, so a kernel CM could answer).
#include "cm_agent.h"

#include "emu/wire/ip_cm.h"

#include <endian.h>

#include <algorithm>
#include <cstring>

namespace nicsim::cm {

namespace ipcm = emu::wire::ipcm;

namespace {

constexpr uint16_t kPermissiveLid = 0xFFFF; // RoCE: no LIDs (cm.c, for paths of hop limit > 1)
constexpr uint8_t kHopLimit = 64;

// cm.c's cm_req_set_qp_type: RC 0, UC 1; an XRC initiator 3, extended type 1 (XRC).
void set_transport(mad::Req& r, ibv_qp_type type) {
    switch (type) {
    case IBV_QPT_UC:
        r.transport_type = mad::kTransportUc;
        break;
    case IBV_QPT_XRC_SEND:
        r.transport_type = mad::kTransportExtended;
        r.extended_transport_type = mad::kExtendedTransportXrc;
        break;
    default:
        r.transport_type = mad::kTransportRc;
        break;
    }
}

void set_private(mad::PrivateData& p, const uint8_t* data, size_t len, size_t at = 0) {
    len = std::min(len, p.bytes.size() - at);
    if (data && len) std::memcpy(p.bytes.data() + at, data, len);
    p.len = static_cast<uint8_t>(at + len);
}

} // namespace

void CmAgent::send(const Address& dst, const uint8_t* m) {
    ++counters_.tx_mads;
    env_.send_mad(dst, m);
}

// The MAD in id.out goes now and again after each timeout, `retries` times (IBA 12.7.34).
void CmAgent::send_expecting(CmId& id, uint64_t timeout_ms, uint8_t retries) {
    id.out.active = true;
    id.out.timeout_ms = timeout_ms;
    id.out.retries_left = retries;
    send(id.peer_addr, id.out.mad.data());
    arm(id, Timer::Retransmit, timeout_ms);
}

// The IP CM header (annex A11) in front of the app's private data.
static void put_ip_header(const CmId& id, const ipc::CmConnParam& p, mad::PrivateData& out) {
    ipcm::Header h;
    h.src_port = id.local.port;
    if (id.local.family == AF_INET6 || !id.local.addr.is_ipv4()) {
        // cma.c's cma_format_hdr: version 6 for an AF_INET6 ID, ::ffff:a.b.c.d included.
        h.ip_version = 6;
        h.src = id.local.addr.bytes;
        h.dst = id.remote.addr.bytes;
    } else {
        h.src = ipcm::from_ipv4(id.local.addr.ipv4());
        h.dst = ipcm::from_ipv4(id.remote.addr.ipv4());
    }
    ipcm::encode(h, out.bytes.data());
    set_private(out, p.private_data, p.private_data_len, ipcm::kHeaderSize);
}

void CmAgent::send_req(CmId& id, const ipc::CmConnParam& p) {
    mad::Req r;
    r.local_comm_id = id.local_comm_id;
    r.service_id = ipcm::service_id(id.ps, id.remote.port);
    r.local_ca_guid = be64toh(config_.node_guid);
    r.local_qpn = id.local_qpn;
    r.initiator_depth = id.initiator_depth;
    r.remote_cm_response_timeout = config_.response_timeout;
    set_transport(r, id.qp_type);
    r.flow_control = p.flow_control != 0;
    r.starting_psn = id.seq_num;
    r.local_cm_response_timeout = config_.response_timeout;
    r.path_mtu = static_cast<uint8_t>(config_.mtu);
    r.max_cm_retries = config_.max_retries;
    // cm.c's cm_format_req: an XRC initiator's REQ leaves these 0 (its target answers no reads
    // of its own, and always receives through an XRC SRQ).
    if (id.qp_type != IBV_QPT_XRC_SEND) {
        r.responder_resources = id.responder_resources;
        r.retry_count = id.retry_count;
        r.rnr_retry_count = id.rnr_retry_count;
        r.srq = id.srq;
    }
    r.primary.local_lid = kPermissiveLid;
    r.primary.remote_lid = kPermissiveLid;
    r.primary.local_gid = gid_of(id.local.addr);
    r.primary.remote_gid = id.peer_gid;
    r.primary.packet_rate = static_cast<uint8_t>(config_.rate);
    r.primary.traffic_class = id.tos;
    r.primary.hop_limit = kHopLimit;
    r.primary.local_ack_timeout = ack_timeout(config_.ack_delay, config_.packet_life_time);
    put_ip_header(id, p, r.private_data);
    mad::encode(r, id.tid, id.out.mad.data());
    log_.debug("cm#{}: REQ to {} port {} (service {:#x}, comm ID {:#x})", id.handle,
               id.remote.addr.text(), id.remote.port, r.service_id, r.local_comm_id);
    send_expecting(id, id.timeout_ms, id.max_cm_retries);
}

void CmAgent::send_sidr_req(CmId& id, const ipc::CmConnParam& p) {
    mad::SidrReq r;
    r.request_id = id.local_comm_id;
    r.service_id = ipcm::service_id(id.ps, id.remote.port);
    put_ip_header(id, p, r.private_data);
    mad::encode(r, id.tid, id.out.mad.data());
    send_expecting(id, id.timeout_ms, id.max_cm_retries);
}

void CmAgent::send_rep(CmId& id, const ipc::CmConnParam& p) {
    mad::Rep r;
    r.local_comm_id = id.local_comm_id;
    r.remote_comm_id = id.remote_comm_id;
    r.starting_psn = id.seq_num;
    r.responder_resources = id.responder_resources;
    r.target_ack_delay = config_.ack_delay;
    r.rnr_retry_count = std::min<uint8_t>(7, p.rnr_retry_count);
    if (id.qp_type == IBV_QPT_XRC_RECV) {
        // cm.c's cm_format_rep: an XRC target names its QP in the local EE context number
        // field and always has an SRQ; no initiator depth, no flow control.
        r.local_eecn = id.local_qpn;
        r.srq = true;
    } else {
        r.local_qpn = id.local_qpn;
        r.initiator_depth = id.initiator_depth;
        r.flow_control = p.flow_control != 0;
        r.srq = id.srq;
    }
    r.local_ca_guid = be64toh(config_.node_guid);
    set_private(r.private_data, p.private_data, p.private_data_len);
    mad::encode(r, id.tid, id.out.mad.data());
    send_expecting(id, id.timeout_ms, id.max_cm_retries);
}

void CmAgent::send_sidr_rep(CmId& id, mad::SidrStatus status, uint32_t qpn, uint32_t qkey,
                            const uint8_t* data, size_t len) {
    mad::SidrRep r;
    r.request_id = id.remote_comm_id;
    r.status = static_cast<uint8_t>(status);
    r.qpn = qpn;
    r.service_id = ipcm::service_id(id.ps, id.local.port);
    r.qkey = qkey;
    set_private(r.private_data, data, len);
    uint8_t m[mad::kMadSize];
    mad::encode(r, id.tid, m);
    send(id.peer_addr, m);
}

void CmAgent::send_rtu(CmId& id) {
    mad::Rtu r;
    r.local_comm_id = id.local_comm_id;
    r.remote_comm_id = id.remote_comm_id;
    uint8_t m[mad::kMadSize];
    mad::encode(r, id.tid, m);
    send(id.peer_addr, m);
}

void CmAgent::send_mra(CmId& id, mad::MsgResponse what) {
    mad::Mra r;
    r.local_comm_id = id.local_comm_id;
    r.remote_comm_id = id.remote_comm_id;
    r.message_mraed = static_cast<uint8_t>(what);
    r.service_timeout = config_.mra_service_timeout;
    uint8_t m[mad::kMadSize];
    mad::encode(r, id.tid, m);
    send(id.peer_addr, m);
}

// cm.c's cm_format_rej: a REJ of a request not yet answered carries no local comm ID, and says
// which message it rejects.
void CmAgent::send_rej(CmId& id, mad::RejReason reason, const uint8_t* ari, size_t ari_len,
                       const uint8_t* data, size_t len) {
    mad::Rej r;
    r.remote_comm_id = id.remote_comm_id;
    r.local_comm_id = id.cm == CmState::ReqRcvd ? 0 : id.local_comm_id;
    switch (id.cm) {
    case CmState::ReqRcvd:
    case CmState::MraReqSent:
        r.message_rejected = static_cast<uint8_t>(mad::MsgResponse::Req);
        break;
    case CmState::RepRcvd:
    case CmState::MraRepSent:
        r.message_rejected = static_cast<uint8_t>(mad::MsgResponse::Rep);
        break;
    default:
        r.message_rejected = static_cast<uint8_t>(mad::MsgResponse::Other);
        break;
    }
    r.reason = static_cast<uint16_t>(reason);
    if (ari && ari_len) {
        r.ari_length = static_cast<uint8_t>(std::min(ari_len, r.ari.size()));
        std::memcpy(r.ari.data(), ari, r.ari_length);
    }
    set_private(r.private_data, data, len);
    uint8_t m[mad::kMadSize];
    mad::encode(r, id.tid, m);
    send(id.peer_addr, m);
}

// A DREQ opens a transaction of its own (cm.c's cm_form_tid).
void CmAgent::send_dreq(CmId& id) {
    mad::Dreq r;
    r.local_comm_id = id.local_comm_id;
    r.remote_comm_id = id.remote_comm_id;
    r.remote_qpn = id.remote_qpn;
    mad::encode(r, static_cast<uint64_t>(hi_tid_) << 32 | id.local_comm_id, id.out.mad.data());
    send(id.peer_addr, id.out.mad.data());
}

void CmAgent::send_drep(CmId& id) {
    mad::Drep r;
    r.local_comm_id = id.local_comm_id;
    r.remote_comm_id = id.remote_comm_id;
    uint8_t m[mad::kMadSize];
    mad::encode(r, id.tid, m);
    send(id.peer_addr, m);
}

void CmAgent::issue_rej(const Address& dst, uint64_t tid, uint32_t their_comm_id,
                        mad::RejReason reason, const uint8_t* ari, size_t ari_len) {
    mad::Rej r;
    r.remote_comm_id = their_comm_id;
    r.message_rejected = static_cast<uint8_t>(mad::MsgResponse::Req);
    r.reason = static_cast<uint16_t>(reason);
    if (ari && ari_len) {
        r.ari_length = static_cast<uint8_t>(std::min(ari_len, r.ari.size()));
        std::memcpy(r.ari.data(), ari, r.ari_length);
    }
    uint8_t m[mad::kMadSize];
    mad::encode(r, tid, m);
    send(dst, m);
}

void CmAgent::issue_drep(const Address& dst, uint64_t tid, const mad::Dreq& dreq) {
    mad::Drep r;
    r.local_comm_id = dreq.remote_comm_id;
    r.remote_comm_id = dreq.local_comm_id;
    uint8_t m[mad::kMadSize];
    mad::encode(r, tid, m);
    send(dst, m);
}

void CmAgent::issue_sidr_rep(const Address& dst, uint64_t tid, const mad::SidrReq& req,
                             mad::SidrStatus status) {
    mad::SidrRep r;
    r.request_id = req.request_id;
    r.status = static_cast<uint8_t>(status);
    r.service_id = req.service_id;
    uint8_t m[mad::kMadSize];
    mad::encode(r, tid, m);
    send(dst, m);
}

} // namespace nicsim::cm
