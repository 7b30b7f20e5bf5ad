// The QP steps librdmacm takes for the app during a connection (rdma-core's ucma_modify_qp_*),
// with the attributes the NIC's CM hands out (rdma_init_qp_attr), and the multicast attach.
#pragma once

#include "cm_objects.h"

namespace rdmacm {

// Each returns 0 (also when the ID has no QP), or -1 with errno.
int modify_qp_rtr(CmId* p, uint8_t responder_resources);
int modify_qp_rts(CmId* p, uint8_t initiator_depth);
int modify_qp_err(CmId* p);
// The active side got the REP: QP to RTR and RTS, then the RTU (rdma_establish's work).
int process_conn_resp(CmId* p);
// The ID's QP joins the group of a MULTICAST_JOIN event, whose address vector is `ah` (not for
// send-only members).
int attach_group(CmId* p, CmMulticast& mc, const ibv_ah_attr& ah);

} // namespace rdmacm
