// rsockets (<rdma/rsocket.h>): the socket API over RDMA, for SOCK_STREAM sockets. This file:
// making and ending sockets, binding, listening, accepting and connecting over rdma_cm (a
// synchronous CM ID per socket, the rsocket connect header in the private data), shutdown,
// names, options, rfcntl and keepalives. rdma-core's rsocket.c is the reference for what each
// call does; the protocol is its (emu/wire/rsocket.h). A datagram rsocket's calls go to
// rsocket_dgram.cpp.
#include "rsocket.h"
#include "rsocket_dgram.h"

#include "cm_objects.h"
#include "export.h"
#include "ids.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <rdma/rsocket.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <thread>
#include <unordered_map>

namespace rdmacm::rs {

namespace {

constexpr uint32_t kQpMinSize = 16;
constexpr uint32_t kQpMaxSize = 0xFFFE;
constexpr int kConnRetries = 6; // address and route resolution, each timeout doubling from 1 s

uint32_t read_conf(const char* name, uint32_t fallback) {
    const std::string path = std::string("/etc/rdma/rsocket/") + name;
    FILE* f = std::fopen(path.c_str(), "r");
    if (!f) return fallback;
    unsigned v = fallback;
    if (std::fscanf(f, "%u", &v) != 1) v = fallback;
    std::fclose(f);
    return v;
}

std::mutex table_mutex;
std::unordered_map<int, RSocket*> table;

void insert(RSocket* s) {
    std::lock_guard lock(table_mutex);
    table[s->fd] = s;
}

void remove(RSocket* s) {
    std::lock_guard lock(table_mutex);
    auto it = table.find(s->fd);
    if (it != table.end() && it->second == s) table.erase(it);
}

int set_nonblock(int fd) {
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) return -1;
    return 0;
}

void* alloc_zeroed(size_t len) {
    void* p = nullptr;
    if (posix_memalign(&p, static_cast<size_t>(::sysconf(_SC_PAGESIZE)), len)) return nullptr;
    std::memset(p, 0, len);
    return p;
}

void inherit(RSocket& s, const RSocket* from) {
    const Defaults& d = defaults();
    s.sbuf_size = from ? from->sbuf_size : d.sbuf_size;
    s.rbuf_size = from ? from->rbuf_size : d.rbuf_size;
    s.sq_size = from ? from->sq_size : d.sq_size;
    s.rq_size = from ? from->rq_size : d.rq_size;
    s.sq_inline = from ? from->sq_inline : d.inline_size;
    s.iomap_size = from ? from->iomap_size : d.iomap_size;
}

// The CM ID's channel is the socket's fd; with an eventfd for cross-thread wake-ups.
int adopt_id(RSocket& s, rdma_cm_id* id) {
    s.id = id;
    id->context = &s;
    s.fd = id->channel->fd;
    if (set_nonblock(s.fd)) return -1;
    s.wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return s.wake_fd < 0 ? -1 : 0;
}

void free_socket(RSocket* s) {
    release_iomaps(*s);
    if (s->id && s->id->qp) rdma_destroy_qp(s->id); // with its CQ and completion channel
    s->flow.reset();
    for (ibv_mr* mr : {s->smr, s->rmr, s->tmr})
        if (mr) ibv_dereg_mr(mr);
    std::free(s->sbuf);
    std::free(s->rbuf);
    std::free(s->target);
    if (s->id) rdma_destroy_id(s->id); // a connected one: its NIC sends the DREQ
    if (s->wake_fd >= 0) ::close(s->wake_fd);
    delete s;
}

// The QP, its CQ and completion channel, the buffers and the flow (rdma-core's rs_create_ep).
int create_endpoint(RSocket& s) {
    rdma_cm_id* id = s.id;
    ibv_device_attr attr{};
    uint32_t max_size = kQpMaxSize;
    if (!ibv_query_device(id->verbs, &attr))
        max_size = std::min<uint32_t>(max_size, static_cast<uint32_t>(attr.max_qp_wr));
    s.sq_size = std::clamp(s.sq_size, kQpMinSize, max_size);
    s.rq_size = std::clamp(s.rq_size, kQpMinSize, max_size);

    s.comp = ibv_create_comp_channel(id->verbs);
    if (!s.comp || set_nonblock(s.comp->fd)) return -1;
    s.cq = ibv_create_cq(id->verbs, static_cast<int>(s.sq_size + s.rq_size), &s, s.comp, 0);
    if (!s.cq) {
        ibv_destroy_comp_channel(s.comp);
        s.comp = nullptr;
        return -1;
    }
    id->send_cq = id->recv_cq = s.cq;
    id->send_cq_channel = id->recv_cq_channel = s.comp;
    ibv_qp_init_attr qa{};
    qa.qp_context = &s;
    qa.send_cq = qa.recv_cq = s.cq;
    qa.qp_type = IBV_QPT_RC;
    qa.sq_sig_all = 1;
    qa.cap.max_send_wr = s.sq_size;
    qa.cap.max_recv_wr = s.rq_size;
    qa.cap.max_send_sge = 2;
    qa.cap.max_recv_sge = 1;
    qa.cap.max_inline_data = s.sq_inline;
    if (rdma_create_qp(id, nullptr, &qa)) {
        s.cq = nullptr; // rdma_create_qp took the ID's CQ and channel with it
        s.comp = nullptr;
        return -1;
    }
    s.sq_inline = qa.cap.max_inline_data;
    s.port.qp = id->qp;

    s.rbuf_size &= ~1u; // two halves
    const size_t send_total = s.sbuf_size + kCtrlSlots * kCtrlBufSize;
    s.target_len = wire::kTargetSglEntries * sizeof(wire::Sge) + s.iomap_size * sizeof(wire::IoMap);
    s.sbuf = static_cast<uint8_t*>(alloc_zeroed(send_total));
    s.rbuf = static_cast<uint8_t*>(alloc_zeroed(s.rbuf_size));
    s.target = static_cast<uint8_t*>(alloc_zeroed(s.target_len));
    if (!s.sbuf || !s.rbuf || !s.target) return fail(ENOMEM);
    constexpr int kRemote = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
    s.smr = ibv_reg_mr(id->pd, s.sbuf, send_total, IBV_ACCESS_LOCAL_WRITE);
    s.rmr = ibv_reg_mr(id->pd, s.rbuf, s.rbuf_size, kRemote);
    s.tmr = ibv_reg_mr(id->pd, s.target, s.target_len, kRemote);
    if (!s.smr || !s.rmr || !s.tmr) return -1;

    FlowBuffers b;
    b.send = s.sbuf;
    b.send_size = s.sbuf_size;
    b.send_lkey = s.smr->lkey;
    b.recv = s.rbuf;
    b.recv_size = s.rbuf_size;
    b.recv_rkey = s.rmr->rkey;
    b.target = s.target;
    b.target_rkey = s.tmr->rkey;
    b.iomap_entries = s.iomap_size;
    s.flow = std::make_unique<StreamFlow>(s.port, FlowLimits{s.sq_size, s.rq_size, s.sq_inline}, b);
    return s.flow->post_initial_recvs();
}

int connect_failed(RSocket& s) {
    s.err = errno;
    s.phase = Phase::ConnectError;
    return -1;
}

// complete() took an event without error status: is it the one the step waits for? Else the
// connection went another way (a DISCONNECTED before ESTABLISHED, say).
bool got(const RSocket& s, rdma_cm_event_type want) {
    if (s.id->event && s.id->event->event == want) return true;
    errno = want == RDMA_CM_EVENT_ESTABLISHED ? ECONNRESET : EHOSTUNREACH;
    return false;
}

// The peer's connect header from the event its ID holds.
bool peer_conn_data(const rdma_cm_id* id, wire::ConnData& c) {
    const rdma_cm_event* e = id->event;
    return e && wire::decode(static_cast<const uint8_t*>(e->param.conn.private_data),
                             e->param.conn.private_data_len, c);
}

socklen_t addr_size(const sockaddr* a) {
    return a->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

void copy_addr(sockaddr* dst, socklen_t* len, const sockaddr* src) {
    const socklen_t size = addr_size(src);
    std::memcpy(dst, src, std::min(*len, size));
    *len = size;
}

// The bit an option sets in so_opts / tcp_opts / ipv6_opts.
void record(uint64_t& opts, int optname, bool on) {
    if (optname < 0 || optname >= 64) return;
    if (on)
        opts |= 1ull << optname;
    else
        opts &= ~(1ull << optname);
}
bool recorded(uint64_t opts, int optname) {
    return optname >= 0 && optname < 64 && (opts >> optname & 1);
}

int int_opt(const void* optval, socklen_t optlen, int& out) {
    if (!optval || optlen < sizeof(int)) return fail(EINVAL);
    std::memcpy(&out, optval, sizeof out);
    return 0;
}

void put_int(void* optval, socklen_t* optlen, int v) {
    if (*optlen >= sizeof v) std::memcpy(optval, &v, sizeof v);
    *optlen = sizeof v;
}

// The control message rshutdown sends, and the directions it closes.
int shutdown_locked(RSocket& s, std::unique_lock<std::mutex>& lock, int how) {
    if (s.phase != Phase::Open) return fail(ENOTCONN);
    StreamFlow& f = *s.flow;
    if (f.link() == Link::Up) {
        wire::Ctrl ctrl;
        if (how == SHUT_RDWR) {
            ctrl = wire::Ctrl::Disconnect;
            f.shut_read();
            f.shut_write();
        } else if (how == SHUT_WR) {
            f.shut_write();
            ctrl = f.readable() ? wire::Ctrl::Shutdown : wire::Ctrl::Disconnect;
        } else if (how == SHUT_RD) {
            f.shut_read();
            if (f.writable()) {
                kick(s);
                return 0;
            }
            ctrl = wire::Ctrl::Disconnect;
        } else {
            return fail(EINVAL);
        }
        // Blocking, whatever O_NONBLOCK says (as rdma-core): the peer must learn of it.
        wait_until(s, lock, false, [](const RSocket& r) {
            return r.flow->ctrl_slot_free() || r.flow->link() != Link::Up;
        });
        if (f.link() == Link::Up && f.ctrl_slot_free()) f.send_ctrl(ctrl);
        wait_until(s, lock, false, [](const RSocket& r) { return r.flow->all_sends_done(); });
    }
    kick(s);
    return 0;
}

// Keepalives: one thread for the process, started by the first SO_KEEPALIVE; each socket
// sends a zero-length RDMA WRITE every keepalive_time seconds, so a dead peer shows as a
// failed send (rdma-core's tcp_svc).
struct Keepalives {
    std::mutex mutex;
    std::condition_variable cv;
    std::map<RSocket*, std::chrono::steady_clock::time_point> due;
    bool started = false;
};

Keepalives& keepalives() {
    static auto* k = new Keepalives; // never destroyed: the thread may outlive static teardown
    return *k;
}

void keepalive_run() {
    Keepalives& k = keepalives();
    std::unique_lock lock(k.mutex);
    for (;;) {
        if (k.due.empty()) {
            k.cv.wait(lock);
            continue;
        }
        auto next = std::min_element(k.due.begin(), k.due.end(), [](auto& a, auto& b) {
                        return a.second < b.second;
                    })->second;
        k.cv.wait_until(lock, next);
        const auto now = std::chrono::steady_clock::now();
        for (auto& [s, when] : k.due) {
            if (when > now) continue;
            unsigned secs;
            {
                std::lock_guard sl(s->mutex);
                if (s->phase == Phase::Open && s->flow) s->flow->send_keepalive();
                secs = s->keepalive_time;
            }
            when = now + std::chrono::seconds(secs);
        }
    }
}

unsigned default_keepalive_time() {
    FILE* f = std::fopen("/proc/sys/net/ipv4/tcp_keepalive_time", "r");
    unsigned v = 7200;
    if (f) {
        if (std::fscanf(f, "%u", &v) != 1) v = 7200;
        std::fclose(f);
    }
    return v;
}

} // namespace

const Defaults& defaults() {
    static const Defaults d = [] {
        Defaults v;
        v.polling_time_us = read_conf("polling_time", v.polling_time_us);
        v.wake_up_interval_ms = static_cast<int>(read_conf("wake_up_interval", 500));
        v.inline_size = read_conf("inline_default", v.inline_size);
        v.sq_size = read_conf("sqsize_default", v.sq_size);
        v.rq_size = read_conf("rqsize_default", v.rq_size);
        v.rbuf_size = std::max<uint32_t>(read_conf("mem_default", v.rbuf_size), 2);
        v.sbuf_size = read_conf("wmem_default", v.sbuf_size);
        if (v.sbuf_size < kSendLowWater) v.sbuf_size = kSendLowWater << 1;
        v.iomap_size = wire::from_scale(wire::to_scale(read_conf("iomap_size", 0)));
        return v;
    }();
    return d;
}

int VerbsQp::post_send(ibv_send_wr& wr) {
    ibv_send_wr* bad = nullptr;
    return ibv_post_send(qp, &wr, &bad);
}

int VerbsQp::post_recv(ibv_recv_wr& wr) {
    ibv_recv_wr* bad = nullptr;
    return ibv_post_recv(qp, &wr, &bad);
}

RSocket* lookup(int fd) {
    std::lock_guard lock(table_mutex);
    auto it = table.find(fd);
    return it == table.end() ? nullptr : it->second;
}

int drive_connect(RSocket& s) {
    CmId* p = priv(s.id);
    for (;;) {
        switch (s.phase) {
        case Phase::Idle:
        case Phase::Bound: {
            const int to = 1000 << s.retries++;
            if (rdma_resolve_addr(s.id, nullptr, &s.id->route.addr.dst_addr, to) == 0) {
                s.retries = 0;
                s.phase = Phase::ResolvingRoute;
                goto resolve_route;
            }
            if (errno != EAGAIN) return connect_failed(s);
            s.phase = Phase::ResolvingAddr;
            return -1;
        }
        case Phase::ResolvingAddr:
            if (complete(p)) {
                if (errno == EAGAIN) return -1;
                if (errno == ETIMEDOUT && s.retries <= kConnRetries) {
                    s.phase = Phase::Bound;
                    continue;
                }
                return connect_failed(s);
            }
            if (!got(s, RDMA_CM_EVENT_ADDR_RESOLVED)) return connect_failed(s);
            s.retries = 0;
            s.phase = Phase::ResolvingRoute;
        resolve_route : {
            const int to = 1000 << s.retries++;
            bool issued = false;
            if (!s.route.empty()) { // RDMA_ROUTE: the app's path, used once
                issued = rdma_set_option(s.id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, s.route.data(),
                                         s.route.size()) == 0;
                s.route.clear();
            }
            if (!issued && rdma_resolve_route(s.id, to) == 0) goto connect;
            if (!issued && errno != EAGAIN) return connect_failed(s);
            // Waiting for ROUTE_RESOLVED.
            if (complete(p)) {
                if (errno == EAGAIN) return -1;
                return connect_failed(s);
            }
            if (!got(s, RDMA_CM_EVENT_ROUTE_RESOLVED)) return connect_failed(s);
            goto connect;
        }
        case Phase::ResolvingRoute:
            if (complete(p)) {
                if (errno == EAGAIN) return -1;
                if (errno == ETIMEDOUT && s.retries <= kConnRetries) goto resolve_route;
                return connect_failed(s);
            }
            if (!got(s, RDMA_CM_EVENT_ROUTE_RESOLVED)) return connect_failed(s);
        connect : {
            if (create_endpoint(s)) return connect_failed(s);
            uint8_t header[wire::kConnDataSize];
            wire::encode(s.flow->local_conn_data(), header);
            rdma_conn_param param{};
            param.private_data = header;
            param.private_data_len = sizeof header;
            param.flow_control = 1;
            param.retry_count = 7;
            param.rnr_retry_count = 7;
            s.retries = 0;
            s.phase = Phase::Connecting;
            if (rdma_connect(s.id, &param)) {
                if (errno == EAGAIN) return -1;
                return connect_failed(s);
            }
            goto connected;
        }
        case Phase::Connecting:
            if (complete(p)) {
                if (errno == EAGAIN) return -1;
                return connect_failed(s);
            }
        connected : {
            if (!got(s, RDMA_CM_EVENT_ESTABLISHED)) return connect_failed(s);
            wire::ConnData peer;
            if (!peer_conn_data(s.id, peer)) {
                errno = ENOTSUP; // not an rsocket, or another version
                return connect_failed(s);
            }
            if (!s.flow->start(peer)) {
                errno = EPROTO;
                return connect_failed(s);
            }
            s.phase = Phase::Open;
            return 0;
        }
        case Phase::Accepting:
            if (complete(p)) {
                if (errno == EAGAIN) return -1;
                return connect_failed(s);
            }
            if (!got(s, RDMA_CM_EVENT_ESTABLISHED)) return connect_failed(s);
            s.phase = Phase::Open;
            return 0;
        case Phase::Open:
            return 0;
        case Phase::ConnectError:
            return fail(ENOTCONN);
        case Phase::Listening:
            return fail(EINVAL);
        }
    }
}

int finish_connect(RSocket& s, std::unique_lock<std::mutex>& lock, bool nonblock) {
    for (;;) {
        if (drive_connect(s) == 0) return 0;
        if (errno != EAGAIN) return -1;
        if (nonblock) return fail(EINPROGRESS);
        wait_fd(s.fd, &lock, -1);
    }
}

void keepalive_update(RSocket& s) {
    Keepalives& k = keepalives();
    std::lock_guard lock(k.mutex);
    if (!s.keepalive) {
        k.due.erase(&s);
        return;
    }
    k.due[&s] = std::chrono::steady_clock::now() + std::chrono::seconds(s.keepalive_time);
    if (!k.started) {
        k.started = true;
        std::thread(keepalive_run).detach();
    }
    k.cv.notify_all();
}

void keepalive_remove(RSocket& s) {
    Keepalives& k = keepalives();
    std::lock_guard lock(k.mutex);
    k.due.erase(&s);
}

} // namespace rdmacm::rs

using namespace rdmacm;
using namespace rdmacm::rs;

RDMACM_EXPORT int rsocket(int domain, int type, int protocol) {
    const int flags = type & (SOCK_NONBLOCK | SOCK_CLOEXEC);
    type &= ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (domain != AF_INET && domain != AF_INET6) return fail(ENOTSUP);
    if (type == SOCK_DGRAM && (!protocol || protocol == IPPROTO_UDP))
        return ds::create(domain, flags);
    if (type != SOCK_STREAM || (protocol && protocol != IPPROTO_TCP)) return fail(ENOTSUP);
    auto* s = new (std::nothrow) RSocket;
    if (!s) return fail(ENOMEM);
    inherit(*s, nullptr);
    if (flags & SOCK_NONBLOCK) s->fd_flags |= O_NONBLOCK;
    rdma_cm_id* id = nullptr;
    if (rdma_create_id(nullptr, &id, s, RDMA_PS_TCP) || adopt_id(*s, id)) {
        const int err = errno;
        free_socket(s);
        return fail(err);
    }
    id->route.addr.src_addr.sa_family = static_cast<sa_family_t>(domain);
    insert(s);
    return s->fd;
}

RDMACM_EXPORT int rbind(int socket, const sockaddr* addr, socklen_t addrlen) {
    if (ds::Socket* d = ds::lookup(socket)) return ds::bind(*d, addr, addrlen);
    RSocket* s = lookup(socket);
    if (!s) return fail(EBADF);
    std::lock_guard lock(s->mutex);
    if (s->phase != Phase::Idle) return fail(EINVAL);
    if (rdma_bind_addr(s->id, const_cast<sockaddr*>(addr))) return -1;
    s->phase = Phase::Bound;
    return 0;
}

RDMACM_EXPORT int rlisten(int socket, int backlog) {
    if (ds::lookup(socket)) return fail(EOPNOTSUPP); // datagrams have no connections
    RSocket* s = lookup(socket);
    if (!s) return fail(EBADF);
    std::lock_guard lock(s->mutex);
    if (s->phase == Phase::Listening) return 0;
    if (s->phase != Phase::Idle && s->phase != Phase::Bound) return fail(EINVAL);
    if (rdma_listen(s->id, backlog)) return -1;
    s->phase = Phase::Listening;
    return 0;
}

// Takes one connection request off the listener: a new socket with its endpoint, answered
// with our connect header (rdma_accept). A blocking listener waits for the request, others
// return EAGAIN. The new socket may still be Accepting (the RTU not in yet): its first use
// waits for ESTABLISHED, so that a thread can accept a connection it is making itself.
RDMACM_EXPORT int raccept(int socket, sockaddr* addr, socklen_t* addrlen) {
    if (ds::lookup(socket)) return fail(EOPNOTSUPP);
    RSocket* l = lookup(socket);
    if (!l) return fail(EBADF);
    std::unique_lock lock(l->mutex);
    if (l->phase != Phase::Listening) return fail(EINVAL);
    const bool nonblock = l->fd_flags & O_NONBLOCK;
    for (;;) {
        rdma_cm_id* id = nullptr;
        if (rdma_get_request(l->id, &id)) {
            if (errno != EAGAIN) return -1;
            if (nonblock) return fail(EAGAIN);
            wait_fd(l->fd, &lock, -1);
            continue;
        }
        auto* s = new (std::nothrow) RSocket;
        if (!s) {
            rdma_reject(id, nullptr, 0);
            rdma_destroy_id(id);
            return fail(ENOMEM);
        }
        inherit(*s, l);
        wire::ConnData peer;
        if (adopt_id(*s, id) || !peer_conn_data(id, peer) || !peer.target_sgl.length ||
            !peer.data_buf.length) {
            rdma_reject(id, nullptr, 0); // not an rsocket peer (or another version)
            free_socket(s);
            if (nonblock) return fail(EAGAIN);
            continue;
        }
        if (create_endpoint(*s)) {
            const int err = errno;
            rdma_reject(id, nullptr, 0);
            free_socket(s);
            return fail(err);
        }
        s->flow->start(peer);
        uint8_t header[wire::kConnDataSize];
        wire::encode(s->flow->local_conn_data(), header);
        rdma_conn_param param = id->event->param.conn;
        param.private_data = header;
        param.private_data_len = sizeof header;
        if (rdma_accept(id, &param) == 0) {
            s->phase = Phase::Open;
        } else if (errno == EAGAIN) {
            s->phase = Phase::Accepting;
        } else {
            const int err = errno;
            rdma_reject(id, nullptr, 0);
            free_socket(s);
            return fail(err);
        }
        insert(s);
        if (addr && addrlen) copy_addr(addr, addrlen, &s->id->route.addr.dst_addr);
        return s->fd;
    }
}

RDMACM_EXPORT int rconnect(int socket, const sockaddr* addr, socklen_t addrlen) {
    if (ds::Socket* d = ds::lookup(socket)) return ds::connect(*d, addr, addrlen);
    RSocket* s = lookup(socket);
    if (!s) return fail(EBADF);
    std::unique_lock lock(s->mutex);
    if (s->phase == Phase::Idle || s->phase == Phase::Bound) {
        if (!addr || addrlen < sizeof(sa_family_t) ||
            addrlen > sizeof(s->id->route.addr.dst_storage))
            return fail(EINVAL);
        std::memcpy(&s->id->route.addr.dst_storage, addr, addrlen);
    }
    return finish_connect(*s, lock, s->fd_flags & O_NONBLOCK);
}

RDMACM_EXPORT int rshutdown(int socket, int how) {
    if (ds::Socket* d = ds::lookup(socket)) return ds::shutdown(*d, how);
    RSocket* s = lookup(socket);
    if (!s) return fail(EBADF);
    keepalive_remove(*s);
    std::unique_lock lock(s->mutex);
    return shutdown_locked(*s, lock, how);
}

RDMACM_EXPORT int rclose(int socket) {
    if (ds::Socket* d = ds::lookup(socket)) return ds::close(d);
    RSocket* s = lookup(socket);
    if (!s) return fail(EBADF);
    remove(s);
    keepalive_remove(*s);
    {
        std::unique_lock lock(s->mutex);
        if (s->phase == Phase::Open && s->flow->link() == Link::Up)
            shutdown_locked(*s, lock, SHUT_RDWR);
    }
    free_socket(s);
    return 0;
}

RDMACM_EXPORT int rgetpeername(int socket, sockaddr* addr, socklen_t* addrlen) {
    if (ds::lookup(socket)) return ::getpeername(socket, addr, addrlen); // the UDP socket's
    RSocket* s = lookup(socket);
    if (!s) return fail(EBADF);
    if (!addr || !addrlen) return fail(EFAULT);
    copy_addr(addr, addrlen, &s->id->route.addr.dst_addr);
    return 0;
}

RDMACM_EXPORT int rgetsockname(int socket, sockaddr* addr, socklen_t* addrlen) {
    if (ds::lookup(socket)) return ::getsockname(socket, addr, addrlen);
    RSocket* s = lookup(socket);
    if (!s) return fail(EBADF);
    if (!addr || !addrlen) return fail(EFAULT);
    copy_addr(addr, addrlen, &s->id->route.addr.src_addr);
    return 0;
}

RDMACM_EXPORT int rsetsockopt(int socket, int level, int optname, const void* optval,
                              socklen_t optlen) {
    if (ds::Socket* d = ds::lookup(socket))
        return ds::setsockopt(*d, level, optname, optval, optlen);
    RSocket* s = lookup(socket);
    if (!s) return fail(EBADF);
    int v = 0;
    if (level == SOL_RDMA && optname == RDMA_ROUTE) {
        if (!optval || !optlen) return fail(EINVAL);
        std::lock_guard lock(s->mutex);
        if (s->phase >= Phase::ResolvingAddr) return fail(EINVAL);
        const auto* b = static_cast<const uint8_t*>(optval);
        s->route.assign(b, b + optlen);
        return 0;
    }
    if (level == SOL_SOCKET && optname == SO_LINGER) {
        if (!optval || optlen < sizeof(linger)) return fail(EINVAL);
        linger l;
        std::memcpy(&l, optval, sizeof l);
        record(s->so_opts, SO_LINGER, l.l_onoff);
        return 0;
    }
    if (int_opt(optval, optlen, v)) return -1;
    switch (level) {
    case SOL_SOCKET:
        switch (optname) {
        case SO_REUSEADDR:
            // Refused once bound (the ID's port is taken): as rdma-core, not an error.
            if (rdma_set_option(s->id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &v, sizeof v) &&
                s->phase == Phase::Idle)
                return -1;
            record(s->so_opts, optname, v);
            return 0;
        case SO_RCVBUF: {
            std::lock_guard lock(s->mutex);
            if (!s->rbuf) s->rbuf_size = std::max<uint32_t>(static_cast<uint32_t>(v) << 1, 4096);
            return 0;
        }
        case SO_SNDBUF: {
            std::lock_guard lock(s->mutex);
            if (!s->sbuf)
                s->sbuf_size =
                    std::max<uint32_t>(static_cast<uint32_t>(v) << 1, kSendLowWater << 1);
            return 0;
        }
        case SO_KEEPALIVE: {
            {
                std::lock_guard lock(s->mutex);
                s->keepalive = v != 0;
                if (!s->keepalive_time) s->keepalive_time = default_keepalive_time();
            }
            keepalive_update(*s);
            record(s->so_opts, optname, v);
            return 0;
        }
        case SO_OOBINLINE:
            record(s->so_opts, optname, v);
            return 0;
        default:
            return fail(ENOTSUP);
        }
    case IPPROTO_TCP:
        switch (optname) {
        case TCP_KEEPCNT:
        case TCP_KEEPINTVL:
        case TCP_MAXSEG:
            return 0; // nothing to tune on a reliable connection
        case TCP_KEEPIDLE:
            if (v <= 0) return fail(EINVAL);
            {
                std::lock_guard lock(s->mutex);
                s->keepalive_time = static_cast<unsigned>(v);
            }
            keepalive_update(*s);
            return 0;
        case TCP_NODELAY: // every send goes at once anyway
            record(s->tcp_opts, optname, v);
            return 0;
        default:
            return fail(ENOTSUP);
        }
    case IPPROTO_IPV6:
        if (optname != IPV6_V6ONLY) return fail(ENOTSUP);
        if (rdma_set_option(s->id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &v, sizeof v)) return -1;
        record(s->ipv6_opts, optname, v);
        return 0;
    case SOL_RDMA: {
        std::lock_guard lock(s->mutex);
        if (s->phase >= Phase::ResolvingAddr) return fail(EINVAL); // sizes are fixed by then
        const uint32_t u = std::min<uint32_t>(static_cast<uint32_t>(std::max(v, 0)), kQpMaxSize);
        switch (optname) {
        case RDMA_SQSIZE:
            s->sq_size = u;
            return 0;
        case RDMA_RQSIZE:
            s->rq_size = u;
            return 0;
        case RDMA_INLINE:
            s->sq_inline = u;
            return 0;
        case RDMA_IOMAPSIZE:
            s->iomap_size = wire::from_scale(wire::to_scale(static_cast<uint32_t>(std::max(v, 0))));
            return 0;
        default:
            return fail(ENOTSUP);
        }
    }
    default:
        return fail(ENOTSUP);
    }
}

RDMACM_EXPORT int rgetsockopt(int socket, int level, int optname, void* optval, socklen_t* optlen) {
    if (ds::Socket* d = ds::lookup(socket))
        return ds::getsockopt(*d, level, optname, optval, optlen);
    RSocket* s = lookup(socket);
    if (!s) return fail(EBADF);
    if (!optval || !optlen) return fail(EFAULT);
    std::lock_guard lock(s->mutex);
    switch (level) {
    case SOL_SOCKET:
        switch (optname) {
        case SO_REUSEADDR:
        case SO_KEEPALIVE:
        case SO_OOBINLINE:
            put_int(optval, optlen, recorded(s->so_opts, optname));
            return 0;
        case SO_RCVBUF:
            put_int(optval, optlen, static_cast<int>(s->rbuf_size));
            return 0;
        case SO_SNDBUF:
            put_int(optval, optlen, static_cast<int>(s->sbuf_size));
            return 0;
        case SO_LINGER: {
            linger l{recorded(s->so_opts, SO_LINGER), 0};
            if (*optlen >= sizeof l) std::memcpy(optval, &l, sizeof l);
            *optlen = sizeof l;
            return 0;
        }
        case SO_ERROR:
            put_int(optval, optlen, s->err);
            s->err = 0;
            return 0;
        case SO_TYPE:
            put_int(optval, optlen, SOCK_STREAM);
            return 0;
        default:
            return fail(ENOTSUP);
        }
    case IPPROTO_TCP:
        switch (optname) {
        case TCP_KEEPCNT:
        case TCP_KEEPINTVL:
            put_int(optval, optlen, 1);
            return 0;
        case TCP_KEEPIDLE:
            put_int(optval, optlen, static_cast<int>(s->keepalive_time));
            return 0;
        case TCP_NODELAY:
            put_int(optval, optlen, recorded(s->tcp_opts, optname));
            return 0;
        case TCP_MAXSEG: { // the path MTU
            const rdma_route& r = s->id->route;
            put_int(optval, optlen, r.num_paths && r.path_rec ? 1 << (7 + r.path_rec->mtu) : 2048);
            return 0;
        }
        default:
            return fail(ENOTSUP);
        }
    case IPPROTO_IPV6:
        if (optname != IPV6_V6ONLY) return fail(ENOTSUP);
        put_int(optval, optlen, recorded(s->ipv6_opts, optname));
        return 0;
    case SOL_RDMA:
        switch (optname) {
        case RDMA_SQSIZE:
            put_int(optval, optlen, static_cast<int>(s->sq_size));
            return 0;
        case RDMA_RQSIZE:
            put_int(optval, optlen, static_cast<int>(s->rq_size));
            return 0;
        case RDMA_INLINE:
            put_int(optval, optlen, static_cast<int>(s->sq_inline));
            return 0;
        case RDMA_IOMAPSIZE:
            put_int(optval, optlen, static_cast<int>(s->iomap_size));
            return 0;
        case RDMA_ROUTE: {
            if (!s->route.empty()) {
                if (*optlen < s->route.size()) return fail(EINVAL);
                std::memcpy(optval, s->route.data(), s->route.size());
                *optlen = static_cast<socklen_t>(s->route.size());
                return 0;
            }
            // The resolved path records, as ibv_path_data (rdma-core's rs_convert_sa_path).
            if (*optlen < sizeof(ibv_path_data)) return fail(EINVAL);
            const rdma_route& r = s->id->route;
            socklen_t len = 0;
            for (int i = 0; i < r.num_paths && len + sizeof(ibv_path_data) <= *optlen; ++i) {
                const ibv_sa_path_rec& sa = r.path_rec[i];
                ibv_path_data d{};
                d.path.dgid = sa.dgid;
                d.path.sgid = sa.sgid;
                d.path.dlid = sa.dlid;
                d.path.slid = sa.slid;
                d.path.flowlabel_hoplimit = htobe32(be32toh(sa.flow_label) << 8 | sa.hop_limit);
                d.path.tclass = sa.traffic_class;
                d.path.reversible_numpath = static_cast<uint8_t>(sa.reversible << 7 | 1);
                d.path.pkey = sa.pkey;
                d.path.qosclass_sl = htobe16(sa.sl);
                d.path.mtu = static_cast<uint8_t>(sa.mtu | 2 << 6);
                d.path.rate = static_cast<uint8_t>(sa.rate | 2 << 6);
                d.path.packetlifetime = static_cast<uint8_t>(sa.packet_life_time | 2 << 6);
                d.flags = sa.preference;
                std::memcpy(static_cast<uint8_t*>(optval) + len, &d, sizeof d);
                len += sizeof d;
            }
            *optlen = len;
            return 0;
        }
        default:
            return fail(ENOTSUP);
        }
    default:
        return fail(ENOTSUP);
    }
}

RDMACM_EXPORT int rfcntl(int socket, int cmd, ...) {
    if (ds::Socket* d = ds::lookup(socket)) {
        va_list args;
        va_start(args, cmd);
        const int arg = cmd == F_SETFL || cmd == F_SETFD ? va_arg(args, int) : 0;
        va_end(args);
        return ds::fcntl(*d, cmd, arg);
    }
    RSocket* s = lookup(socket);
    if (!s) return fail(EBADF);
    va_list args;
    va_start(args, cmd);
    int ret = 0;
    switch (cmd) {
    case F_GETFL: {
        std::lock_guard lock(s->mutex);
        ret = s->fd_flags;
        break;
    }
    case F_SETFL: { // every fd of the socket stays O_NONBLOCK: the flag decides how calls wait
        const int arg = va_arg(args, int);
        std::lock_guard lock(s->mutex);
        s->fd_flags = arg;
        break;
    }
    case F_GETFD:
        ret = ::fcntl(s->fd, F_GETFD);
        break;
    case F_SETFD:
        ret = ::fcntl(s->fd, F_SETFD, va_arg(args, int));
        break;
    default:
        ret = fail(ENOTSUP);
        break;
    }
    va_end(args);
    return ret;
}
