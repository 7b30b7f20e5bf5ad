// Multicast groups (ibv_attach_mcast, ibv_detach_mcast), checked as the kernel's
// ib_attach_mcast and uverbs do: the GID must be a multicast GID (rdma_is_multicast_addr) and
// the QP a UD QP, else EINVAL. On a RoCE port the MLID is ignored. Attaching twice is a no-op;
// detaching from a group the QP is not attached to is EINVAL.
#include "emu/wire/multicast.h"
#include "verbs.h"

#include <cerrno>
#include <cstring>

namespace nicsim {

namespace {

Qp* checked_qp(VerbContext& c, const ipc::McastReq& q, Mgid& mgid) {
    Qp* qp = c.objects.qps.get(q.qp);
    if (!qp || qp->type != IBV_QPT_UD || !emu::wire::is_multicast_gid(q.gid)) return nullptr;
    std::memcpy(mgid.data(), q.gid, mgid.size());
    return qp;
}

} // namespace

int attach_mcast(VerbContext& c, const ipc::McastReq& q, ipc::Empty&) {
    Mgid mgid;
    Qp* qp = checked_qp(c, q, mgid);
    if (!qp) return EINVAL;
    if (int err = c.nic.mcast_attach(*qp, mgid)) return err;
    c.log.debug("{} qp#{} (qpn {:#x}) attached to a multicast group ({} on this NIC)", c.prefix,
                qp->handle, qp->qpn, c.nic.mcast_group_count());
    return 0;
}

int detach_mcast(VerbContext& c, const ipc::McastReq& q, ipc::Empty&) {
    Mgid mgid;
    Qp* qp = checked_qp(c, q, mgid);
    if (!qp) return EINVAL;
    if (int err = c.nic.mcast_detach(*qp, mgid)) return err;
    c.log.debug("{} qp#{} (qpn {:#x}) detached from a multicast group", c.prefix, qp->handle,
                qp->qpn);
    return 0;
}

} // namespace nicsim
