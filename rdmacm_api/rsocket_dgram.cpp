// Datagram rsockets: making and ending sockets, their addresses, options, and the UD QPs and
// destinations behind them (rsocket_dgram_io.cpp moves the datagrams). rdma-core's rsocket.c
// (ds_* and udp_svc_*) is the reference for what each call does.
#include "rsocket_dgram.h"

#include "cm_objects.h"
#include "rsocket.h"

#include "emu/wire/rsocket_dgram.h"

#include <fcntl.h>
#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

namespace rdmacm::ds {

namespace wire = emu::wire::rsocket_dgram;

namespace {

constexpr int kResolveTimeoutMs = 2000; // rdma-core's, for the route to a new peer
constexpr uint32_t kGrhSize = sizeof(ibv_grh);
constexpr uint64_t kRecvTag = 1ull << 63;

std::mutex table_mutex;
std::unordered_map<int, Socket*> table;

void* alloc_pages(size_t len) {
    void* p = nullptr;
    if (posix_memalign(&p, static_cast<size_t>(::sysconf(_SC_PAGESIZE)), len)) return nullptr;
    std::memset(p, 0, len);
    return p;
}

bool is_wildcard(const sockaddr* a) {
    if (a->sa_family == AF_INET)
        return reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr == htonl(INADDR_ANY);
    if (a->sa_family == AF_INET6)
        return IN6_IS_ADDR_UNSPECIFIED(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr);
    return false;
}

void set_port(sockaddr* a, in_port_t port) {
    if (a->sa_family == AF_INET) reinterpret_cast<sockaddr_in*>(a)->sin_port = port;
    if (a->sa_family == AF_INET6) reinterpret_cast<sockaddr_in6*>(a)->sin6_port = port;
}

in_port_t port_of(const sockaddr* a) {
    if (a->sa_family == AF_INET) return reinterpret_cast<const sockaddr_in*>(a)->sin_port;
    if (a->sa_family == AF_INET6) return reinterpret_cast<const sockaddr_in6*>(a)->sin6_port;
    return 0;
}

// This host's own address of `family`: what the NIC resolves the wildcard to.
int own_address(sa_family_t family, sockaddr_storage& out) {
    rdma_cm_id* id = nullptr;
    if (rdma_create_id(nullptr, &id, nullptr, RDMA_PS_UDP)) return -1;
    sockaddr_storage any{};
    any.ss_family = family;
    int ret = rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr*>(&any), kResolveTimeoutMs);
    if (!ret) std::memcpy(&out, rdma_get_local_addr(id), addr_len(rdma_get_local_addr(id)));
    const int err = errno;
    rdma_destroy_id(id);
    errno = err;
    return ret;
}

// rdma-core's ds_set_qp_size: as many slots as the buffers hold, within the QP limits.
void fix_sizes(Socket& s) {
    const uint32_t slot = wire::kSlotSize;
    s.rq_size = std::max<uint32_t>(1, std::min(s.rq_size, s.rbuf_size / slot));
    s.sq_size = std::max<uint32_t>(1, std::min(s.sq_size, s.sbuf_size / slot));
    s.rbuf_size = s.rq_size * slot;
    s.sbuf_size = s.sq_size * slot;
}

size_t mtu_bytes(ibv_mtu mtu) {
    return mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096 ? size_t{128} << mtu : 1024;
}

// The CQ (sends and receives), its completion channel, non-blocking and armed: the ID's, so
// that rdma_destroy_qp takes them with it (rdma-core's rs_create_cq).
int create_cq(Socket& s, rdma_cm_id* id) {
    id->recv_cq_channel = ibv_create_comp_channel(id->verbs);
    if (!id->recv_cq_channel) return -1;
    const int flags = ::fcntl(id->recv_cq_channel->fd, F_GETFL);
    if (flags < 0 || ::fcntl(id->recv_cq_channel->fd, F_SETFL, flags | O_NONBLOCK) < 0) return -1;
    id->recv_cq = ibv_create_cq(id->verbs, static_cast<int>(s.sq_size + s.rq_size), id,
                                id->recv_cq_channel, 0);
    if (!id->recv_cq) return -1;
    ibv_req_notify_cq(id->recv_cq, 0);
    id->send_cq_channel = id->recv_cq_channel;
    id->send_cq = id->recv_cq;
    return 0;
}

void free_qp(Qp& qp) {
    if (qp.id && qp.id->recv_cq_channel) { // the CQ goes only with its events acknowledged
        ibv_cq* cq;
        void* context;
        while (ibv_get_cq_event(qp.id->recv_cq_channel, &cq, &context) == 0)
            ibv_ack_cq_events(cq, 1);
    }
    if (qp.id && qp.id->qp) rdma_destroy_qp(qp.id);
    if (qp.id && !qp.id->qp && qp.id->recv_cq) { // made, but the QP was not
        ibv_destroy_cq(qp.id->recv_cq);
        qp.id->recv_cq = qp.id->send_cq = nullptr;
    }
    if (qp.id && qp.id->recv_cq_channel) {
        ibv_destroy_comp_channel(qp.id->recv_cq_channel);
        qp.id->recv_cq_channel = qp.id->send_cq_channel = nullptr;
    }
    for (ibv_mr* mr : {qp.smr, qp.rmr})
        if (mr) ibv_dereg_mr(mr);
    std::free(qp.rbuf);
    if (qp.id) rdma_destroy_id(qp.id);
}

// A UD QP on `local` (rdma-core's ds_create_qp), its receives posted.
Qp* create_qp(Socket& s, const sockaddr* local) {
    auto qp = std::make_unique<Qp>();
    std::memcpy(&qp->local, local, addr_len(local));
    qp->header_len = wire::encode_ds_header(qp->local, qp->header);
    if (!qp->header_len) return fail(EAFNOSUPPORT), nullptr;
    auto undo = [&] {
        const int err = errno;
        free_qp(*qp);
        errno = err;
        return nullptr;
    };
    if (rdma_create_id(nullptr, &qp->id, qp.get(), RDMA_PS_UDP)) return undo();
    if (rdma_bind_addr(qp->id, const_cast<sockaddr*>(local))) return undo();
    qp->rbuf = static_cast<uint8_t*>(alloc_pages(s.rbuf_size + kGrhSize));
    if (!qp->rbuf) return fail(ENOMEM), undo();
    qp->smr = rdma_reg_msgs(qp->id, s.sbuf, s.sbuf_size);
    qp->rmr = rdma_reg_msgs(qp->id, qp->rbuf, s.rbuf_size + kGrhSize);
    if (!qp->smr || !qp->rmr || create_cq(s, qp->id)) return undo();
    ibv_qp_init_attr attr{};
    attr.qp_context = qp.get();
    attr.send_cq = qp->id->send_cq;
    attr.recv_cq = qp->id->recv_cq;
    attr.qp_type = IBV_QPT_UD;
    attr.sq_sig_all = 1;
    attr.cap.max_send_wr = s.sq_size;
    attr.cap.max_recv_wr = s.rq_size;
    attr.cap.max_send_sge = 1;
    attr.cap.max_recv_sge = 2; // the GRH, then the slot
    attr.cap.max_inline_data = s.sq_inline;
    if (rdma_create_qp(qp->id, nullptr, &attr)) return undo();
    s.sq_inline = attr.cap.max_inline_data;
    ibv_port_attr port{};
    if (ibv_query_port(qp->id->verbs, qp->id->port_num, &port)) return undo();
    // A UD message is one packet: the datagram header and the payload within the path MTU.
    qp->max_payload = std::min(wire::kSlotSize, mtu_bytes(port.active_mtu)) - qp->header_len;
    for (uint32_t i = 0; i < s.rq_size; ++i)
        repost(s, *qp, i * static_cast<uint32_t>(wire::kSlotSize));
    s.qps.push_back(std::move(qp));
    return s.qps.back().get();
}

Qp* get_qp(Socket& s, const sockaddr* local) {
    for (auto& qp : s.qps)
        if (same_addr(reinterpret_cast<const sockaddr*>(&qp->local), local)) return qp.get();
    return create_qp(s, local);
}

uint8_t gid_index(ibv_context* verbs, uint8_t port, const ibv_gid& gid) {
    for (int i = 0; i < 16; ++i) {
        ibv_gid g{};
        if (ibv_query_gid(verbs, port, i, &g)) break;
        if (!std::memcmp(&g, &gid, sizeof g)) return static_cast<uint8_t>(i);
    }
    return 0;
}

} // namespace

bool Socket::nonblocking(int msg_flags) const {
    return (fd_flags & O_NONBLOCK) || (msg_flags & MSG_DONTWAIT);
}

socklen_t addr_len(const sockaddr* addr) {
    if (!addr) return 0;
    if (addr->sa_family == AF_INET) return sizeof(sockaddr_in);
    if (addr->sa_family == AF_INET6) return sizeof(sockaddr_in6);
    return 0;
}

bool same_addr(const sockaddr* a, const sockaddr* b) {
    if (a->sa_family != b->sa_family || port_of(a) != port_of(b)) return false;
    if (a->sa_family == AF_INET)
        return reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr ==
               reinterpret_cast<const sockaddr_in*>(b)->sin_addr.s_addr;
    return !std::memcmp(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr,
                        &reinterpret_cast<const sockaddr_in6*>(b)->sin6_addr, 16);
}

Socket* lookup(int fd) {
    std::lock_guard lock(table_mutex);
    auto it = table.find(fd);
    return it == table.end() ? nullptr : it->second;
}

int create(int domain, int type_flags) {
    auto s = std::make_unique<Socket>();
    s->fd = ::socket(domain, SOCK_DGRAM | SOCK_NONBLOCK | (type_flags & SOCK_CLOEXEC), 0);
    if (s->fd < 0) return -1;
    if (type_flags & SOCK_NONBLOCK) s->fd_flags |= O_NONBLOCK;
    const rs::Defaults& d = rs::defaults();
    s->sq_size = d.sq_size;
    s->rq_size = d.rq_size;
    s->sbuf_size = d.sbuf_size;
    s->rbuf_size = d.rbuf_size;
    s->sq_inline = d.inline_size;
    const int fd = s->fd;
    std::lock_guard lock(table_mutex);
    table[fd] = s.release();
    return fd;
}

int start(Socket& s) {
    if (s.started) return 0;
    fix_sizes(s);
    s.sbuf = static_cast<uint8_t*>(alloc_pages(s.sbuf_size));
    if (!s.sbuf) return fail(ENOMEM);
    for (uint32_t i = s.sq_size; i-- > 0;)
        s.free_slots.push_back(i * static_cast<uint32_t>(wire::kSlotSize));
    s.started = true;
    return 0;
}

namespace {

// Binds the UDP socket to `addr`, the wildcard being this host's address (rsocket_dgram.h).
int bind_address(Socket& s, const sockaddr* addr) {
    if (start(s)) return -1;
    sockaddr_storage a{};
    std::memcpy(&a, addr, addr_len(addr));
    auto* sa = reinterpret_cast<sockaddr*>(&a);
    if (is_wildcard(sa)) {
        const in_port_t port = port_of(sa);
        if (own_address(sa->sa_family, a)) return -1;
        set_port(sa, port);
    }
    return ::bind(s.fd, sa, addr_len(sa));
}

} // namespace

int bind(Socket& s, const sockaddr* addr, socklen_t len) {
    if (!addr || !addr_len(addr) || len < addr_len(addr)) return fail(EINVAL);
    std::lock_guard lock(s.mutex);
    return bind_address(s, addr);
}

int ensure_bound(Socket& s) {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    if (::getsockname(s.fd, reinterpret_cast<sockaddr*>(&a), &len)) return -1;
    if (port_of(reinterpret_cast<sockaddr*>(&a))) return 0;
    return bind_address(s, reinterpret_cast<sockaddr*>(&a)); // the family's wildcard, port 0
}

int connect(Socket& s, const sockaddr* addr, socklen_t len) {
    if (!addr || len < addr_len(addr) || !addr_len(addr)) return fail(EINVAL);
    std::lock_guard lock(s.mutex);
    if (start(s) || ensure_bound(s)) return -1;
    if (::connect(s.fd, addr, len)) return -1;
    Dest* d = get_dest(s, addr, len);
    if (!d) return -1;
    s.conn_dest = d;
    return 0;
}

Dest* get_dest(Socket& s, const sockaddr* addr, socklen_t len) {
    if (!addr_len(addr) || len < addr_len(addr)) return fail(EINVAL), nullptr;
    for (auto& d : s.dests)
        if (same_addr(reinterpret_cast<const sockaddr*>(&d->addr), addr)) return d.get();
    sockaddr_storage local{};
    socklen_t local_len = sizeof local;
    if (::getsockname(s.fd, reinterpret_cast<sockaddr*>(&local), &local_len)) return nullptr;
    Qp* qp = get_qp(s, reinterpret_cast<sockaddr*>(&local));
    if (!qp) return nullptr;
    auto d = std::make_unique<Dest>();
    std::memcpy(&d->addr, addr, addr_len(addr));
    d->qp = qp;
    s.dests.push_back(std::move(d));
    return s.dests.back().get();
}

// rdma-core's udp_svc_create_ah: the route from our QP's address to the peer's, as the CM
// resolves it; RoCE needs the GRH.
void make_ah(Dest& d, uint32_t qpn) {
    if (d.ah) {
        ibv_destroy_ah(d.ah);
        d.ah = nullptr;
    }
    rdma_cm_id* id = nullptr;
    if (rdma_create_id(nullptr, &id, nullptr, RDMA_PS_UDP)) return;
    sockaddr_storage src = d.qp->local;
    set_port(reinterpret_cast<sockaddr*>(&src), 0);
    if (!rdma_resolve_addr(id, reinterpret_cast<sockaddr*>(&src),
                           reinterpret_cast<sockaddr*>(&d.addr), kResolveTimeoutMs) &&
        !rdma_resolve_route(id, kResolveTimeoutMs) && id->route.path_rec) {
        const ibv_sa_path_rec& path = *id->route.path_rec;
        ibv_ah_attr attr{};
        attr.is_global = 1;
        attr.grh.dgid = path.dgid;
        attr.grh.flow_label = be32toh(path.flow_label);
        attr.grh.sgid_index = gid_index(d.qp->id->verbs, d.qp->id->port_num, path.sgid);
        attr.grh.hop_limit = path.hop_limit ? path.hop_limit : 64;
        attr.grh.traffic_class = path.traffic_class;
        attr.sl = path.sl;
        attr.static_rate = path.rate;
        attr.port_num = d.qp->id->port_num;
        d.ah = ibv_create_ah(d.qp->id->pd, &attr);
        if (d.ah) d.qpn = qpn;
    }
    rdma_destroy_id(id);
}

void repost(Socket& s, Qp& qp, uint32_t offset) {
    ibv_sge sge[2];
    sge[0] = {reinterpret_cast<uintptr_t>(qp.rbuf + s.rbuf_size), kGrhSize, qp.rmr->lkey};
    sge[1] = {reinterpret_cast<uintptr_t>(qp.rbuf + offset), static_cast<uint32_t>(wire::kSlotSize),
              qp.rmr->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = kRecvTag | offset;
    wr.sg_list = sge;
    wr.num_sge = 2;
    ibv_recv_wr* bad = nullptr;
    ibv_post_recv(qp.id->qp, &wr, &bad);
}

int shutdown(Socket& s, int how) {
    if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR) return fail(EINVAL);
    std::lock_guard lock(s.mutex);
    if (how != SHUT_WR) s.readable = false;
    if (how != SHUT_RD) s.writable = false;
    return 0;
}

int close(Socket* s) {
    {
        std::lock_guard lock(table_mutex);
        table.erase(s->fd);
    }
    for (auto& d : s->dests)
        if (d->ah) ibv_destroy_ah(d->ah);
    for (auto& qp : s->qps)
        free_qp(*qp);
    std::free(s->sbuf);
    ::close(s->fd);
    delete s;
    return 0;
}

int setsockopt(Socket& s, int level, int optname, const void* optval, socklen_t optlen) {
    std::lock_guard lock(s.mutex);
    if (level != SOL_RDMA) { // the UDP socket's, and the buffer sizes are ours too
        if (::setsockopt(s.fd, level, optname, optval, optlen)) return -1;
        if (level != SOL_SOCKET || (optname != SO_SNDBUF && optname != SO_RCVBUF)) return 0;
    } else if (optname != RDMA_SQSIZE && optname != RDMA_RQSIZE && optname != RDMA_INLINE) {
        return fail(ENOTSUP);
    }
    if (!optval || optlen < sizeof(uint32_t)) return fail(EINVAL);
    if (s.started) return 0; // as rdma-core: sizes count before the first bind, connect or send
    uint32_t v;
    std::memcpy(&v, optval, sizeof v);
    if (level == SOL_SOCKET && optname == SO_SNDBUF)
        s.sbuf_size = std::max<uint32_t>(v << 1, 2 * wire::kSlotSize);
    else if (level == SOL_SOCKET)
        s.rbuf_size = v << 1;
    else if (optname == RDMA_SQSIZE)
        s.sq_size = std::clamp<uint32_t>(v, 16, 0xFFFE);
    else if (optname == RDMA_RQSIZE)
        s.rq_size = std::clamp<uint32_t>(v, 16, 0xFFFE);
    else
        s.sq_inline = v;
    return 0;
}

int getsockopt(Socket& s, int level, int optname, void* optval, socklen_t* optlen) {
    std::lock_guard lock(s.mutex);
    uint32_t v = 0;
    if (level == SOL_SOCKET && optname == SO_SNDBUF) {
        v = s.sbuf_size;
    } else if (level == SOL_SOCKET && optname == SO_RCVBUF) {
        v = s.rbuf_size;
    } else if (level == SOL_RDMA && optname == RDMA_SQSIZE) {
        v = s.sq_size;
    } else if (level == SOL_RDMA && optname == RDMA_RQSIZE) {
        v = s.rq_size;
    } else if (level == SOL_RDMA && optname == RDMA_INLINE) {
        v = s.sq_inline;
    } else if (level == SOL_RDMA) {
        return fail(ENOTSUP);
    } else {
        return ::getsockopt(s.fd, level, optname, optval, optlen);
    }
    if (!optval || !optlen || *optlen < sizeof v) return fail(EINVAL);
    std::memcpy(optval, &v, sizeof v);
    *optlen = sizeof v;
    return 0;
}

int fcntl(Socket& s, int cmd, int arg) {
    std::lock_guard lock(s.mutex);
    switch (cmd) {
    case F_GETFL:
        return s.fd_flags;
    case F_SETFL: // the UDP socket stays O_NONBLOCK: the flag decides how calls wait
        s.fd_flags = arg;
        return 0;
    case F_GETFD:
        return ::fcntl(s.fd, F_GETFD);
    case F_SETFD:
        return ::fcntl(s.fd, F_SETFD, arg);
    default:
        return fail(ENOTSUP);
    }
}

} // namespace rdmacm::ds
