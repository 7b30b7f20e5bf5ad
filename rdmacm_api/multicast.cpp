// rdma_join_multicast(_ex) and rdma_leave_multicast: the NIC's CM answers with the group's
// address vector (MULTICAST_JOIN); reading that event attaches the ID's QP to the group.
#include "cm_session.h"
#include "connection.h"
#include "export.h"
#include "ids.h"
#include "untraced.h"

#include <algorithm>
#include <cstring>
#include <new>

using namespace rdmacm;
namespace ipc = emu::ipc;

namespace {

socklen_t addr_len(const sockaddr* addr) {
    if (!addr) return 0;
    return addr->sa_family == AF_INET    ? sizeof(sockaddr_in)
           : addr->sa_family == AF_INET6 ? sizeof(sockaddr_in6)
                                         : 0;
}

int join(rdma_cm_id* id, const sockaddr* addr, uint32_t join_flags, void* context) {
    CmId* p = priv(id);
    auto* mc = new (std::nothrow) CmMulticast;
    if (!mc) return fail(ENOMEM);
    mc->context = context;
    mc->join_flags = join_flags;
    std::memcpy(&mc->addr, addr, addr_len(addr));
    ipc::CmJoinMcastReq req{};
    req.id = p->handle;
    req.join_flags = join_flags;
    std::memcpy(&req.addr.sa, addr, addr_len(addr));
    {
        std::lock_guard lock(p->mutex);
        p->groups.push_back(mc);
    }
    ipc::HandleReply reply{};
    if (call<ipc::Op::CmJoinMcast>(req, reply)) {
        const int err = errno;
        std::lock_guard lock(p->mutex);
        std::erase(p->groups, mc);
        delete mc;
        return fail(err);
    }
    mc->handle = reply.handle;
    return complete(p);
}

} // namespace

namespace rdmacm {

int attach_group(CmId* p, CmMulticast& mc, const ibv_ah_attr& ah) {
    mc.mgid = ah.grh.dgid;
    mc.mlid = ah.dlid;
    if (!p->id.qp || mc.join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER) return 0;
    if (int err = ibv_attach_mcast(p->id.qp, &mc.mgid, mc.mlid)) return fail(err);
    return 0;
}

} // namespace rdmacm

int untraced_rdma_join_multicast(rdma_cm_id* id, sockaddr* addr, void* context) {
    if (!id || !addr_len(addr)) return fail(EINVAL);
    return join(id, addr, RDMA_MC_JOIN_FLAG_FULLMEMBER, context);
}

int untraced_rdma_join_multicast_ex(rdma_cm_id* id, rdma_cm_join_mc_attr_ex* attr, void* context) {
    if (!id || !attr) return fail(EINVAL);
    if (attr->comp_mask >= RDMA_CM_JOIN_MC_ATTR_RESERVED) return fail(ENOTSUP);
    if (!(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS)) return fail(EINVAL);
    if (!(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS) ||
        attr->join_flags >= RDMA_MC_JOIN_FLAG_RESERVED)
        return fail(EINVAL);
    if (!addr_len(attr->addr)) return fail(EINVAL);
    return join(id, attr->addr, attr->join_flags, context);
}

int untraced_rdma_leave_multicast(rdma_cm_id* id, sockaddr* addr) {
    const socklen_t len = addr_len(addr);
    if (!id || !len) return fail(EINVAL);
    CmId* p = priv(id);
    CmMulticast* mc = nullptr;
    {
        std::lock_guard lock(p->mutex);
        auto it = std::find_if(p->groups.begin(), p->groups.end(), [&](const CmMulticast* m) {
            return std::memcmp(&m->addr, addr, len) == 0;
        });
        if (it == p->groups.end()) return fail(EADDRNOTAVAIL);
        mc = *it;
        p->groups.erase(it);
    }
    if (id->qp && mc->join_flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
        ibv_detach_mcast(id->qp, &mc->mgid, mc->mlid);
    ipc::CmEventsReply reply{};
    int ret = call<ipc::Op::CmLeaveMcast>({p->handle, mc->handle}, reply);
    if (!ret) {
        std::unique_lock lock(p->mutex);
        p->acked.wait(lock, [&] { return mc->events_completed >= reply.events_reported; });
    }
    delete mc;
    return ret;
}
