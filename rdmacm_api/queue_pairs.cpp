// rdma_create_qp(_ex) and rdma_create_srq(_ex): the verbs objects of a CM ID, with the CQs and
// completion channels librdmacm makes when the app gives none (rdma_get_send_comp and
// rdma_get_recv_comp of <rdma/rdma_verbs.h> wait on those), and the QP moved to INIT (UD: to
// RTS) with the attributes the NIC's CM gives. An XRC_RECV ID's QP and XRC SRQ live in the
// device's XRC domain unless the app names one; its SRQ completes into the ID's receive CQ.
#include "cm_session.h"
#include "devices.h"
#include "export.h"
#include "ids.h"
#include "untraced.h"

#include <rdma/rdma_verbs.h>

#include <cstring>

using namespace rdmacm;

namespace {

void destroy_cqs(rdma_cm_id* id) {
    // An XRC_RECV ID's receive CQ is its XRC SRQ's: it goes with the SRQ (rdma_destroy_srq).
    if (id->qp_type == IBV_QPT_XRC_RECV && id->srq) return;
    if (id->recv_cq) {
        ibv_destroy_cq(id->recv_cq);
        if (id->send_cq && id->send_cq != id->recv_cq) ibv_destroy_cq(id->send_cq);
    } else if (id->send_cq) {
        ibv_destroy_cq(id->send_cq);
    }
    id->recv_cq = id->send_cq = nullptr;
    if (id->recv_cq_channel) {
        ibv_destroy_comp_channel(id->recv_cq_channel);
        if (id->send_cq_channel && id->send_cq_channel != id->recv_cq_channel)
            ibv_destroy_comp_channel(id->send_cq_channel);
    } else if (id->send_cq_channel) {
        ibv_destroy_comp_channel(id->send_cq_channel);
    }
    id->recv_cq_channel = id->send_cq_channel = nullptr;
}

// A CQ of `size` entries on a completion channel of its own, for each side that has none.
int create_cqs(rdma_cm_id* id, uint32_t send_size, uint32_t recv_size) {
    if (recv_size) {
        id->recv_cq_channel = ibv_create_comp_channel(id->verbs);
        if (!id->recv_cq_channel) return -1;
        id->recv_cq =
            ibv_create_cq(id->verbs, static_cast<int>(recv_size), id, id->recv_cq_channel, 0);
        if (!id->recv_cq) return -1;
    }
    if (send_size) {
        id->send_cq_channel = ibv_create_comp_channel(id->verbs);
        if (!id->send_cq_channel) return -1;
        id->send_cq =
            ibv_create_cq(id->verbs, static_cast<int>(send_size), id, id->send_cq_channel, 0);
        if (!id->send_cq) return -1;
    }
    return 0;
}

int modify(ibv_qp* qp, ibv_qp_attr& attr, int mask) {
    if (int err = ibv_modify_qp(qp, &attr, mask)) return fail(err);
    return 0;
}

// Connected QPs start in INIT, with the access rights the connection allows; UD QPs go all
// the way to RTS with the port space's Q_Key (rdma-core's ucma_init_conn_qp, ucma_init_ud_qp).
int init_qp(rdma_cm_id* id, ibv_qp* qp) {
    ibv_qp_attr attr{};
    int mask = 0;
    attr.qp_state = IBV_QPS_INIT;
    if (rdma_init_qp_attr(id, &attr, &mask) || modify(qp, attr, mask)) return -1;
    if (id->qp_type != IBV_QPT_UD) return 0;
    attr.qp_state = IBV_QPS_RTR;
    if (modify(qp, attr, IBV_QP_STATE)) return -1;
    attr.qp_state = IBV_QPS_RTS;
    attr.sq_psn = 0;
    return modify(qp, attr, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

} // namespace

int untraced_rdma_create_qp_ex(rdma_cm_id* id, ibv_qp_init_attr_ex* attr) {
    if (!id || !attr || id->qp) return fail(EINVAL);
    if (!id->verbs) return fail(EINVAL); // no device yet: bind or resolve first
    if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
        attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
        attr->pd = id->pd;
    } else if (attr->pd->context != id->verbs) {
        return fail(EINVAL);
    }
    if ((id->recv_cq && attr->recv_cq && id->recv_cq != attr->recv_cq) ||
        (id->send_cq && attr->send_cq && id->send_cq != attr->send_cq))
        return fail(EINVAL);
    if (id->qp_type == IBV_QPT_XRC_RECV &&
        (!(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !attr->xrcd)) {
        attr->xrcd = device_xrcd(priv(id)->device);
        if (!attr->xrcd) return -1;
        attr->comp_mask |= IBV_QP_INIT_ATTR_XRCD;
    }
    if (create_cqs(id, attr->send_cq || id->send_cq ? 0 : attr->cap.max_send_wr,
                   attr->recv_cq || id->recv_cq ? 0 : attr->cap.max_recv_wr)) {
        const int err = errno;
        destroy_cqs(id);
        return fail(err);
    }
    if (!attr->send_cq) attr->send_cq = id->send_cq;
    if (!attr->recv_cq) attr->recv_cq = id->recv_cq;
    if (id->srq && !attr->srq) attr->srq = id->srq;
    ibv_qp* qp = ibv_create_qp_ex(id->verbs, attr);
    if (!qp || init_qp(id, qp)) {
        const int err = errno;
        if (qp) ibv_destroy_qp(qp);
        destroy_cqs(id);
        return fail(err);
    }
    if (qp->pd) id->pd = qp->pd; // an XRC_RECV QP has none: the ID keeps its own
    id->qp = qp;
    return 0;
}

int untraced_rdma_create_qp(rdma_cm_id* id, ibv_pd* pd, ibv_qp_init_attr* qp_init_attr) {
    if (!id || !qp_init_attr) return fail(EINVAL);
    ibv_qp_init_attr_ex ex{};
    std::memcpy(&ex, qp_init_attr, sizeof *qp_init_attr);
    ex.comp_mask = IBV_QP_INIT_ATTR_PD;
    ex.pd = pd ? pd : id->pd;
    int ret = rdma_create_qp_ex(id, &ex);
    std::memcpy(qp_init_attr, &ex, sizeof *qp_init_attr);
    return ret;
}

void untraced_rdma_destroy_qp(rdma_cm_id* id) {
    ibv_destroy_qp(id->qp);
    id->qp = nullptr;
    destroy_cqs(id);
}

int untraced_rdma_create_srq_ex(rdma_cm_id* id, ibv_srq_init_attr_ex* attr) {
    if (!id || !attr || !id->verbs) return fail(EINVAL);
    if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE)) return fail(EINVAL);
    if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd) {
        attr->pd = id->pd;
        attr->comp_mask |= IBV_SRQ_INIT_ATTR_PD;
    }
    bool made_cq = false;
    if (attr->srq_type == IBV_SRQT_XRC) {
        if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) || !attr->xrcd) {
            attr->xrcd = device_xrcd(priv(id)->device);
            if (!attr->xrcd) return -1;
        }
        // The SRQ's completions go to the ID's receive CQ, made now if the ID has none yet
        // (rdma-core makes another one even when rdma_get_request made the QP's).
        if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || !attr->cq) {
            if (!id->recv_cq) {
                if (create_cqs(id, 0, attr->attr.max_wr)) {
                    const int err = errno;
                    destroy_cqs(id);
                    return fail(err);
                }
                made_cq = true;
            }
            attr->cq = id->recv_cq;
        }
        attr->comp_mask |= IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
    }
    ibv_srq* srq = ibv_create_srq_ex(id->verbs, attr);
    if (!srq) {
        const int err = errno;
        if (made_cq) destroy_cqs(id);
        return fail(err);
    }
    if (!id->pd) id->pd = attr->pd;
    id->srq = srq;
    return 0;
}

int untraced_rdma_create_srq(rdma_cm_id* id, ibv_pd* pd, ibv_srq_init_attr* attr) {
    if (!id || !attr) return fail(EINVAL);
    ibv_srq_init_attr_ex ex{};
    std::memcpy(&ex, attr, sizeof *attr);
    ex.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
    ex.srq_type = id->qp_type == IBV_QPT_XRC_RECV ? IBV_SRQT_XRC : IBV_SRQT_BASIC;
    ex.pd = pd;
    int ret = rdma_create_srq_ex(id, &ex);
    std::memcpy(attr, &ex, sizeof *attr);
    return ret;
}

void untraced_rdma_destroy_srq(rdma_cm_id* id) {
    ibv_destroy_srq(id->srq);
    id->srq = nullptr;
    destroy_cqs(id);
}
