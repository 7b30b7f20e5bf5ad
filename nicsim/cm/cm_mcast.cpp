// rdma_join_multicast on RoCE (cma.c's cma_iboe_join_multicast): no subnet administrator to
// join with; the group's MGID is its IP address (IPv4 as ::ffff:a.b.c.d), and the event hands
// the app the address vector and Q_Key to send to it. The library attaches the QP to the
// group (ibv_attach_mcast) when it reads the event, as librdmacm does.
#include "cm_agent.h"

#include "emu/wire/multicast.h"

#include <algorithm>
#include <cstring>

namespace nicsim::cm {

namespace {

constexpr uint8_t kMcastHopLimit = 64; // IPV6_DEFAULT_HOPLIMIT, as cma.c sets for RoCE v2

} // namespace

int CmAgent::join_mcast(CmClient& c, const ipc::CmJoinMcastReq& req, uint32_t& mc) {
    CmId* id = find(c, req.id);
    if (!id || !id->on_device ||
        (id->state != RdmaState::AddrBound && id->state != RdmaState::AddrResolved))
        return EINVAL;
    if (req.join_flags > RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER) return EINVAL;
    Multicast g;
    const uint16_t family = req.addr.sa.sin6_family;
    if (family == AF_INET) {
        sockaddr_in sin;
        std::memcpy(&sin, &req.addr.sa, sizeof sin);
        if (!sin.sin_addr.s_addr) return EINVAL;
        const Address group = Address::from_ipv4(sin.sin_addr.s_addr);
        g.mgid = gid_of(group);
        g.addr = {group, ntohs(sin.sin_port), AF_INET};
    } else if (family == AF_INET6) {
        if (IN6_IS_ADDR_UNSPECIFIED(&req.addr.sa.sin6_addr)) return EINVAL;
        std::memcpy(g.mgid.data(), req.addr.sa.sin6_addr.s6_addr, 16);
        g.addr.family = AF_INET6;
    } else {
        return EAFNOSUPPORT;
    }
    if (!emu::wire::is_multicast_gid(g.mgid.data())) return EINVAL;
    g.handle = mc = ++last_mc_;
    g.join_flags = req.join_flags;
    id->groups.push_back(g);
    if (id->ps == RDMA_PS_UDP) id->qkey = RDMA_UDP_QKEY;

    ipc::CmEventRecord e = event(*id, RDMA_CM_EVENT_MULTICAST_JOIN);
    e.mc = g.handle;
    e.ah.is_global = 1;
    std::memcpy(e.ah.grh.dgid.raw, g.mgid.data(), 16);
    e.ah.grh.hop_limit = kMcastHopLimit;
    e.ah.port_num = 1;
    e.ud_qp_num = emu::wire::kMulticastQpn;
    e.ud_qkey = id->qkey;
    deliver(*id, e);
    return 0;
}

int CmAgent::leave_mcast(CmClient& c, const ipc::CmLeaveMcastReq& req, uint32_t& events_reported) {
    CmId* id = find(c, req.id);
    if (!id) return EINVAL;
    auto it = std::find_if(id->groups.begin(), id->groups.end(),
                           [&](const Multicast& g) { return g.handle == req.mc; });
    if (it == id->groups.end()) return EADDRNOTAVAIL;
    events_reported = it->events_reported;
    id->owner->drop_events_if(
        [&](const ipc::CmEventRecord& e) { return e.id == id->handle && e.mc == req.mc; });
    id->groups.erase(it);
    return 0;
}

} // namespace nicsim::cm
