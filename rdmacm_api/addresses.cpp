// Binding and resolving: rdma_bind_addr, rdma_resolve_addr, rdma_resolve_route and the ports of
// an ID. The NIC decides what an address is: its host's own, another host of the set, or one
// no host has (ADDR_ERROR once the timeout has passed).
#include "cm_session.h"
#include "export.h"
#include "ids.h"
#include "untraced.h"

#include <cstring>

using namespace rdmacm;
namespace ipc = emu::ipc;

namespace {

// rdma-core's ucma_addrlen: IPv4 and IPv6 (AF_IB is not offered: 0, the call fails EINVAL).
socklen_t addr_len(const sockaddr* addr) {
    if (!addr) return 0;
    switch (addr->sa_family) {
    case AF_INET:
        return sizeof(sockaddr_in);
    case AF_INET6:
        return sizeof(sockaddr_in6);
    default:
        return 0;
    }
}

ipc::CmAddr cm_addr(const sockaddr* addr) {
    ipc::CmAddr a{};
    std::memcpy(&a.sa, addr, addr_len(addr));
    return a;
}

__be16 port_of(const sockaddr* addr) {
    switch (addr->sa_family) {
    case AF_INET:
        return reinterpret_cast<const sockaddr_in*>(addr)->sin_port;
    case AF_INET6:
        return reinterpret_cast<const sockaddr_in6*>(addr)->sin6_port;
    default:
        return 0;
    }
}

} // namespace

int untraced_rdma_bind_addr(rdma_cm_id* id, sockaddr* addr) {
    if (!id || !addr_len(addr)) return fail(EINVAL);
    ipc::CmIdInfo info{};
    if (call<ipc::Op::CmBindAddr>({priv(id)->handle, 0, cm_addr(addr)}, info)) return -1;
    return apply_info(priv(id), info);
}

int untraced_rdma_resolve_addr(rdma_cm_id* id, sockaddr* src_addr, sockaddr* dst_addr,
                               int timeout_ms) {
    if (!id || !addr_len(dst_addr) || (src_addr && !addr_len(src_addr))) return fail(EINVAL);
    ipc::CmResolveAddrReq req{};
    req.id = priv(id)->handle;
    req.timeout_ms = timeout_ms;
    req.has_src = src_addr != nullptr;
    if (src_addr) req.src = cm_addr(src_addr);
    req.dst = cm_addr(dst_addr);
    if (call<ipc::Op::CmResolveAddr>(req)) return -1;
    std::memcpy(&id->route.addr.dst_storage, dst_addr, addr_len(dst_addr));
    return complete(priv(id));
}

int untraced_rdma_resolve_route(rdma_cm_id* id, int timeout_ms) {
    if (!id) return fail(EINVAL);
    if (call<ipc::Op::CmResolveRoute>({priv(id)->handle, timeout_ms})) return -1;
    return complete(priv(id));
}

RDMACM_EXPORT __be16 rdma_get_src_port(rdma_cm_id* id) {
    return port_of(&id->route.addr.src_addr);
}

RDMACM_EXPORT __be16 rdma_get_dst_port(rdma_cm_id* id) {
    return port_of(&id->route.addr.dst_addr);
}
