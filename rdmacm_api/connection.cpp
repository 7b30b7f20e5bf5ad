// Connecting, listening, accepting, rejecting and disconnecting, and the QP attributes each
// step needs (rdma-core's cma.c behaviour; the CM messages are the NIC's).
#include "connection.h"

#include "cm_session.h"
#include "export.h"
#include "ids.h"
#include "untraced.h"

#include <algorithm>
#include <cstring>

using namespace rdmacm;
namespace ipc = emu::ipc;

namespace rdmacm {

int modify_qp_rtr(CmId* p, uint8_t responder_resources) {
    rdma_cm_id* id = &p->id;
    if (!id->qp) return 0;
    // INIT again first: the QP was made before the connection gave it its access rights.
    ibv_qp_attr attr{};
    int mask = 0;
    attr.qp_state = IBV_QPS_INIT;
    if (rdma_init_qp_attr(id, &attr, &mask)) return -1;
    if (int err = ibv_modify_qp(id->qp, &attr, mask)) return fail(err);
    attr.qp_state = IBV_QPS_RTR;
    if (rdma_init_qp_attr(id, &attr, &mask)) return -1;
    if (responder_resources != RDMA_MAX_RESP_RES) attr.max_dest_rd_atomic = responder_resources;
    if (int err = ibv_modify_qp(id->qp, &attr, mask)) return fail(err);
    return 0;
}

int modify_qp_rts(CmId* p, uint8_t initiator_depth) {
    rdma_cm_id* id = &p->id;
    if (!id->qp) return 0;
    ibv_qp_attr attr{};
    int mask = 0;
    attr.qp_state = IBV_QPS_RTS;
    if (rdma_init_qp_attr(id, &attr, &mask)) return -1;
    if (initiator_depth != RDMA_MAX_INIT_DEPTH) attr.max_rd_atomic = initiator_depth;
    if (int err = ibv_modify_qp(id->qp, &attr, mask)) return fail(err);
    return 0;
}

int modify_qp_err(CmId* p) {
    if (!p->id.qp) return 0;
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_ERR;
    if (int err = ibv_modify_qp(p->id.qp, &attr, IBV_QP_STATE)) return fail(err);
    return 0;
}

int process_conn_resp(CmId* p) {
    if (modify_qp_rtr(p, RDMA_MAX_RESP_RES) || modify_qp_rts(p, RDMA_MAX_INIT_DEPTH) ||
        call<ipc::Op::CmEstablish>({p->handle, 0})) {
        const int err = errno;
        modify_qp_err(p);
        return fail(err);
    }
    return 0;
}

} // namespace rdmacm

namespace {

// rdma-core's ucma_valid_param: for the TCP port space, the read/atomic depths the device has.
int valid_param(const CmId* p, const rdma_conn_param* param) {
    if (p->id.ps != RDMA_PS_TCP) return 0;
    if (!p->device || (!p->id.qp && !param)) return fail(EINVAL);
    if (!param) return 0;
    if (param->responder_resources != RDMA_MAX_RESP_RES &&
        param->responder_resources > p->device->max_responder_resources)
        return fail(EINVAL);
    if (param->initiator_depth != RDMA_MAX_INIT_DEPTH &&
        param->initiator_depth > p->device->max_initiator_depth)
        return fail(EINVAL);
    return 0;
}

// The parameters the NIC puts in the REQ or REP: the depths agreed here, the private data (after
// what rdma_create_ep was given to send), and the retry counts.
int conn_param_for(CmId* p, const rdma_conn_param* src, uint32_t qp_num, uint8_t srq,
                   ipc::CmConnParam& dst) {
    dst.qp_num = qp_num;
    dst.srq = srq;
    dst.responder_resources = p->responder_resources;
    dst.initiator_depth = p->initiator_depth;
    size_t len = p->connect_data.size();
    if (len) std::memcpy(dst.private_data, p->connect_data.data(), len); // data() may be null
    if (src) {
        dst.flow_control = src->flow_control;
        dst.retry_count = src->retry_count;
        dst.rnr_retry_count = src->rnr_retry_count;
        if (src->private_data && src->private_data_len) {
            if (len + src->private_data_len > sizeof dst.private_data) return fail(EINVAL);
            std::memcpy(dst.private_data + len, src->private_data, src->private_data_len);
            len += src->private_data_len;
        }
    } else {
        dst.retry_count = 7;
        dst.rnr_retry_count = 7;
    }
    dst.private_data_len = static_cast<uint8_t>(len);
    return 0;
}

int reject_with(rdma_cm_id* id, const void* data, uint8_t len, uint8_t reason) {
    if (!id) return fail(EINVAL);
    ipc::CmRejectReq req{};
    req.id = priv(id)->handle;
    req.reason = reason;
    if (data && len) {
        if (len > sizeof req.private_data) return fail(EINVAL);
        std::memcpy(req.private_data, data, len);
        req.private_data_len = len;
    }
    return call<ipc::Op::CmReject>(req);
}

} // namespace

int untraced_rdma_init_qp_attr(rdma_cm_id* id, ibv_qp_attr* qp_attr, int* qp_attr_mask) {
    if (!id || !qp_attr || !qp_attr_mask) return fail(EINVAL);
    ipc::CmInitQpAttrReply reply{};
    if (call<ipc::Op::CmInitQpAttr>({priv(id)->handle, static_cast<uint32_t>(qp_attr->qp_state)},
                                    reply))
        return -1;
    *qp_attr = reply.attr;
    *qp_attr_mask = reply.mask;
    return 0;
}

int untraced_rdma_connect(rdma_cm_id* id, rdma_conn_param* conn_param) {
    if (!id) return fail(EINVAL);
    CmId* p = priv(id);
    if (valid_param(p, conn_param)) return -1;
    const CmDevice* dev = p->device;
    p->initiator_depth = conn_param && conn_param->initiator_depth != RDMA_MAX_INIT_DEPTH
                             ? conn_param->initiator_depth
                             : (dev ? dev->max_initiator_depth : 0);
    p->responder_resources = conn_param && conn_param->responder_resources != RDMA_MAX_RESP_RES
                                 ? conn_param->responder_resources
                                 : (dev ? dev->max_responder_resources : 0);
    uint32_t qp_num = conn_param ? conn_param->qp_num : 0;
    uint8_t srq = conn_param ? conn_param->srq : 0;
    if (id->qp) {
        qp_num = id->qp->qp_num;
        srq = id->qp->srq != nullptr;
    }
    ipc::CmConnectReq req{};
    req.id = p->handle;
    if (conn_param_for(p, conn_param, qp_num, srq, req.param)) return -1;
    if (call<ipc::Op::CmConnect>(req)) return -1;
    p->connect_data.clear();
    return complete(p);
}

int untraced_rdma_listen(rdma_cm_id* id, int backlog) {
    if (!id) return fail(EINVAL);
    ipc::CmIdInfo info{};
    if (call<ipc::Op::CmListen>({priv(id)->handle, backlog}, info)) return -1;
    return apply_info(priv(id), info);
}

int untraced_rdma_get_request(rdma_cm_id* listen, rdma_cm_id** id) {
    if (!listen || !id) return fail(EINVAL);
    CmId* l = priv(listen);
    if (!l->sync) return fail(EINVAL);
    if (listen->event) {
        rdma_ack_cm_event(listen->event);
        listen->event = nullptr;
    }
    rdma_cm_event* event = nullptr;
    if (rdma_get_cm_event(listen->channel, &event)) return -1;
    int err = 0;
    if (event->event == RDMA_CM_EVENT_REJECTED)
        err = ECONNREFUSED;
    else if (event->status)
        err = event->status < 0 ? -event->status : event->status;
    else if (event->event != RDMA_CM_EVENT_CONNECT_REQUEST)
        err = EINVAL;
    if (!err && l->qp_init_attr) {
        ibv_qp_init_attr attr = *l->qp_init_attr;
        if (rdma_create_qp(event->id, listen->pd, &attr)) err = errno;
    }
    if (err) {
        listen->event = event;
        return fail(err);
    }
    *id = event->id;
    (*id)->event = event;
    return 0;
}

int untraced_rdma_accept(rdma_cm_id* id, rdma_conn_param* conn_param) {
    if (!id) return fail(EINVAL);
    CmId* p = priv(id);
    if (!id->qp && !conn_param) return fail(EINVAL);
    const uint32_t qp_num = id->qp ? id->qp->qp_num : conn_param->qp_num;
    const uint8_t srq = id->qp ? id->qp->srq != nullptr : conn_param->srq;
    if (valid_param(p, conn_param)) return -1;
    const CmDevice* dev = p->device;
    if (!conn_param || conn_param->initiator_depth == RDMA_MAX_INIT_DEPTH)
        p->initiator_depth =
            std::min<uint8_t>(p->initiator_depth, dev ? dev->max_initiator_depth : 0);
    else
        p->initiator_depth = conn_param->initiator_depth;
    if (!conn_param || conn_param->responder_resources == RDMA_MAX_RESP_RES)
        p->responder_resources =
            std::min<uint8_t>(p->responder_resources, dev ? dev->max_responder_resources : 0);
    else
        p->responder_resources = conn_param->responder_resources;
    const bool ud = id->qp_type == IBV_QPT_UD;
    if (!ud && (modify_qp_rtr(p, p->responder_resources) || modify_qp_rts(p, p->initiator_depth)))
        return -1;
    ipc::CmConnectReq req{};
    req.id = p->handle;
    if (conn_param_for(p, conn_param, qp_num, srq, req.param) || call<ipc::Op::CmAccept>(req)) {
        const int err = errno;
        modify_qp_err(p);
        return fail(err);
    }
    return ud ? 0 : complete(p);
}

int untraced_rdma_reject(rdma_cm_id* id, const void* private_data, uint8_t private_data_len) {
    return reject_with(id, private_data, private_data_len, 0);
}

// IBA table 112: 35, "vendor option not supported" (the app does not take the peer's ECE).
int untraced_rdma_reject_ece(rdma_cm_id* id, const void* private_data, uint8_t private_data_len) {
    return reject_with(id, private_data, private_data_len, 35);
}

int untraced_rdma_notify(rdma_cm_id* id, ibv_event_type event) {
    if (!id) return fail(EINVAL);
    return call<ipc::Op::CmNotify>({priv(id)->handle, static_cast<uint32_t>(event)});
}

int untraced_rdma_disconnect(rdma_cm_id* id) {
    if (!id || !id->verbs || !id->verbs->device) return fail(EINVAL);
    CmId* p = priv(id);
    // RoCE is an InfiniBand transport: the QP goes to ERR, its work requests flush.
    if (modify_qp_err(p)) return -1;
    if (call<ipc::Op::CmDisconnect>({p->handle, 0})) return -1;
    return complete(p);
}

int untraced_rdma_establish(rdma_cm_id* id) {
    if (!id || id->qp) return fail(EINVAL);
    return process_conn_resp(priv(id));
}

int untraced_rdma_set_option(rdma_cm_id* id, int level, int optname, void* optval, size_t optlen) {
    if (!id) return fail(EINVAL);
    ipc::CmSetOptionReq req{};
    if (optlen > sizeof req.optval || (optlen && !optval)) return fail(EINVAL);
    req.id = priv(id)->handle;
    req.level = level;
    req.optname = optname;
    req.optlen = static_cast<uint32_t>(optlen);
    if (optlen) std::memcpy(req.optval, optval, optlen);
    return call<ipc::Op::CmSetOption>(req);
}

// ECE (enhanced connection establishment) travels in no CM message here: the local options are
// kept, the peer's are none, as with a peer that does not do ECE.
RDMACM_EXPORT int rdma_set_local_ece(rdma_cm_id* id, ibv_ece* ece) {
    if (!id || id->qp || !ece || !ece->vendor_id || ece->comp_mask) return fail(EINVAL);
    priv(id)->local_ece = *ece;
    return 0;
}

RDMACM_EXPORT int rdma_get_remote_ece(rdma_cm_id* id, ibv_ece* ece) {
    if (!id || id->qp || !ece) return fail(EINVAL);
    *ece = priv(id)->remote_ece;
    ece->comp_mask = 0;
    return 0;
}
