// Moving data on stream rsockets: rsend/rrecv and their variants (copies through the send
// ring and out of the receive ring, StreamFlow), and riomap/riowrite: the peer RDMA-writes
// straight into memory the app mapped, at offsets the app chose.
#include "rsocket.h"
#include "rsocket_dgram.h"

#include "cm_objects.h"
#include "export.h"

#include <rdma/rsocket.h>
#include <sys/mman.h>

#include <algorithm>

namespace rdmacm::rs {

namespace {

// The socket connected (a connect in progress finished: EAGAIN for a non-blocking one).
int ready_for_data(RSocket& s, std::unique_lock<std::mutex>& lock, bool nonblock) {
    if (opening(s.phase) && finish_connect(s, lock, nonblock)) {
        if (errno == EINPROGRESS) errno = EAGAIN;
        return -1;
    }
    if (s.phase != Phase::Open) return fail(ENOTCONN);
    return 0;
}

bool can_send_or_closed(const RSocket& s) {
    return s.flow->can_send() || !s.flow->writable();
}

bool has_data_or_eof(const RSocket& s) {
    return s.flow->has_data() || !s.flow->readable();
}

// Why nothing can be sent: our own SHUT_WR, or a connection that is gone.
int not_writable(const RSocket& s) {
    return fail(s.flow->link() == Link::Up ? EPIPE : ECONNRESET);
}

// Waits for room to send: 0, or -1 with errno (EAGAIN, or not_writable's).
int wait_sendable(RSocket& s, std::unique_lock<std::mutex>& lock, bool nonblock) {
    if (!s.flow->writable()) return not_writable(s);
    if (s.flow->can_send()) return 0;
    if (wait_until(s, lock, nonblock, can_send_or_closed)) return -1;
    return s.flow->writable() ? 0 : not_writable(s);
}

ssize_t sendv(int socket, const iovec* iov, int iovcnt, int flags) {
    RSocket* s = lookup(socket);
    if (!s) return fail(EBADF);
    if (iovcnt < 0 || (iovcnt && !iov)) return fail(EINVAL);
    const bool nonblock = s->nonblocking(flags);
    std::lock_guard serial(s->send_mutex);
    std::unique_lock lock(s->mutex);
    if (ready_for_data(*s, lock, nonblock) || send_pending_iomaps(*s, lock, flags)) return -1;
    Gather src(iov, iovcnt);
    const size_t total = src.remaining();
    uint32_t chunk = kFirstChunk;
    int err = 0;
    while (src.remaining()) {
        if (wait_sendable(*s, lock, nonblock) || s->flow->send_chunk(src, chunk) < 0) {
            err = errno;
            break;
        }
    }
    const size_t sent = total - src.remaining();
    if (!sent && err) return fail(err);
    return static_cast<ssize_t>(sent);
}

ssize_t recvv(int socket, const iovec* iov, int iovcnt, int flags) {
    RSocket* s = lookup(socket);
    if (!s) return fail(EBADF);
    if (iovcnt < 0 || (iovcnt && !iov)) return fail(EINVAL);
    const bool nonblock = s->nonblocking(flags);
    const bool peek = flags & MSG_PEEK;
    const bool waitall = (flags & MSG_WAITALL) && !peek;
    std::lock_guard serial(s->recv_mutex);
    std::unique_lock lock(s->mutex);
    if (ready_for_data(*s, lock, nonblock)) return -1;
    StreamFlow& f = *s->flow;
    Scatter dst(iov, iovcnt);
    if (!dst.remaining()) return 0;
    size_t got = 0;
    int err = 0;
    for (;;) {
        // Queued data is read even after the peer went (its disconnect came after it).
        if (!f.has_data() && wait_until(*s, lock, nonblock, has_data_or_eof)) {
            err = errno;
            break;
        }
        if (!f.has_data()) { // end of stream
            if (f.link() == Link::Failed) err = ECONNRESET;
            break;
        }
        got += f.receive(dst, peek);
        if (!peek) f.update_credits(); // the sender may be waiting for the room
        if (!waitall || !dst.remaining()) break;
    }
    if (!got && err) return fail(err);
    return static_cast<ssize_t>(got);
}

// Our first free slot in the peer's iomap table, or -1.
int free_iomap_slot(const RSocket& s) {
    const uint32_t slots = s.flow ? s.flow->peer_iomap_entries() : 0;
    for (uint32_t i = 0; i < slots; ++i) {
        const bool taken = std::any_of(s.iomaps.begin(), s.iomaps.end(), [i](const IomapMr& m) {
            return m.index == static_cast<int>(i);
        });
        if (!taken) return static_cast<int>(i);
    }
    return -1;
}

// The entry of the peer's iomap table holding `offset`, if any.
bool find_target_iomap(const StreamFlow& f, uint64_t offset, wire::IoMap& out) {
    for (uint32_t i = 0; i < f.iomap_entries(); ++i) {
        wire::IoMap e = f.target_iomap(i);
        if (e.sge.length && offset >= e.offset && offset - e.offset < e.sge.length) {
            out = e;
            return true;
        }
    }
    return false;
}

} // namespace

int send_pending_iomaps(RSocket& s, std::unique_lock<std::mutex>& lock, int msg_flags) {
    for (;;) {
        auto it = std::find_if(s.iomaps.begin(), s.iomaps.end(),
                               [](const IomapMr& m) { return m.index >= 0 && !m.sent; });
        if (it == s.iomaps.end()) return 0;
        if (!s.flow->can_send()) {
            if (wait_sendable(s, lock, s.nonblocking(msg_flags))) return -1;
            continue; // the list may have changed while we waited
        }
        const wire::IoMap e{it->offset,
                            {reinterpret_cast<uintptr_t>(it->mr->addr), it->mr->rkey,
                             static_cast<uint32_t>(it->mr->length)}};
        it->sent = true;
        if (s.flow->send_iomap(static_cast<uint32_t>(it->index), e)) return -1;
    }
}

void release_iomaps(RSocket& s) {
    for (IomapMr& m : s.iomaps)
        ibv_dereg_mr(m.mr);
    s.iomaps.clear();
}

} // namespace rdmacm::rs

using namespace rdmacm;
using namespace rdmacm::rs;

namespace {

// Sends and receives of either kind of rsocket: a datagram one takes an address.
ssize_t send_any(int socket, const iovec* iov, int iovcnt, int flags, const sockaddr* to,
                 socklen_t tolen) {
    if (ds::Socket* d = ds::lookup(socket)) return ds::sendto(*d, iov, iovcnt, flags, to, tolen);
    if (to || tolen) return fail(EISCONN); // a stream socket has its peer
    return sendv(socket, iov, iovcnt, flags);
}

ssize_t recv_any(int socket, const iovec* iov, int iovcnt, int flags, sockaddr* from,
                 socklen_t* fromlen) {
    if (ds::Socket* d = ds::lookup(socket))
        return ds::recvfrom(*d, iov, iovcnt, flags, from, fromlen);
    const ssize_t ret = recvv(socket, iov, iovcnt, flags);
    if (ret > 0 && from && fromlen) rgetpeername(socket, from, fromlen);
    return ret;
}

} // namespace

RDMACM_EXPORT ssize_t rsend(int socket, const void* buf, size_t len, int flags) {
    iovec v{const_cast<void*>(buf), len};
    return send_any(socket, &v, 1, flags, nullptr, 0);
}

RDMACM_EXPORT ssize_t rsendto(int socket, const void* buf, size_t len, int flags,
                              const sockaddr* dest_addr, socklen_t addrlen) {
    iovec v{const_cast<void*>(buf), len};
    return send_any(socket, &v, 1, flags, dest_addr, addrlen);
}

RDMACM_EXPORT ssize_t rsendmsg(int socket, const msghdr* msg, int flags) {
    if (!msg) return fail(EINVAL);
    if (msg->msg_control && msg->msg_controllen) return fail(ENOTSUP);
    return send_any(socket, msg->msg_iov, static_cast<int>(msg->msg_iovlen), flags,
                    static_cast<const sockaddr*>(msg->msg_name), msg->msg_namelen);
}

RDMACM_EXPORT ssize_t rwrite(int socket, const void* buf, size_t count) {
    return rsend(socket, buf, count, 0);
}

RDMACM_EXPORT ssize_t rwritev(int socket, const iovec* iov, int iovcnt) {
    return send_any(socket, iov, iovcnt, 0, nullptr, 0);
}

RDMACM_EXPORT ssize_t rrecv(int socket, void* buf, size_t len, int flags) {
    iovec v{buf, len};
    return recv_any(socket, &v, 1, flags, nullptr, nullptr);
}

RDMACM_EXPORT ssize_t rrecvfrom(int socket, void* buf, size_t len, int flags, sockaddr* src_addr,
                                socklen_t* addrlen) {
    iovec v{buf, len};
    return recv_any(socket, &v, 1, flags, src_addr, addrlen);
}

RDMACM_EXPORT ssize_t rrecvmsg(int socket, msghdr* msg, int flags) {
    if (!msg) return fail(EINVAL);
    if (msg->msg_control && msg->msg_controllen) return fail(ENOTSUP);
    socklen_t namelen = msg->msg_namelen;
    const ssize_t ret = recv_any(socket, msg->msg_iov, static_cast<int>(msg->msg_iovlen), flags,
                                 static_cast<sockaddr*>(msg->msg_name), &namelen);
    if (ret >= 0) {
        msg->msg_flags = 0;
        if (msg->msg_name) msg->msg_namelen = namelen;
    }
    return ret;
}

RDMACM_EXPORT ssize_t rread(int socket, void* buf, size_t count) {
    return rrecv(socket, buf, count, 0);
}

RDMACM_EXPORT ssize_t rreadv(int socket, const iovec* iov, int iovcnt) {
    return recv_any(socket, iov, iovcnt, 0, nullptr, nullptr);
}

// PROT_WRITE: the peer may riowrite into [buf, buf + len) at offsets from `offset` (-1: the
// address of buf); the mapping travels to the peer before our next send. PROT_NONE: registered
// here only.
RDMACM_EXPORT off_t riomap(int socket, void* buf, size_t len, int prot, int, off_t offset) {
    RSocket* s = lookup(socket);
    if (!s) return fail(EBADF);
    std::lock_guard lock(s->mutex);
    if (!s->id->pd || (prot & ~PROT_WRITE)) return fail(EINVAL);
    int access = IBV_ACCESS_LOCAL_WRITE;
    int index = -1;
    if (prot & PROT_WRITE) {
        index = free_iomap_slot(*s); // the peer's table: known once connected
        if (index < 0) return fail(ENOMEM);
        access |= IBV_ACCESS_REMOTE_WRITE;
    }
    ibv_mr* mr = ibv_reg_mr(s->id->pd, buf, len, access);
    if (!mr) return -1;
    if (offset == -1) offset = static_cast<off_t>(reinterpret_cast<uintptr_t>(buf));
    s->iomaps.push_back({mr, static_cast<uint64_t>(offset), index, false});
    return offset;
}

RDMACM_EXPORT int riounmap(int socket, void* buf, size_t len) {
    RSocket* s = lookup(socket);
    if (!s) return fail(EBADF);
    std::lock_guard lock(s->mutex);
    auto it = std::find_if(s->iomaps.begin(), s->iomaps.end(), [&](const IomapMr& m) {
        return m.mr->addr == buf && m.mr->length == len;
    });
    if (it == s->iomaps.end()) return fail(EINVAL);
    ibv_dereg_mr(it->mr);
    s->iomaps.erase(it);
    return 0;
}

// RDMA WRITEs of `count` bytes into the peer's mapping at `offset`, without the peer's app: it
// sees the bytes in its memory (riostream polls a byte of it). (size_t)-1 on an error before
// any byte went, else the bytes written.
RDMACM_EXPORT size_t riowrite(int socket, const void* buf, size_t count, off_t offset, int flags) {
    RSocket* s = lookup(socket);
    if (!s) return static_cast<size_t>(fail(EBADF));
    const bool nonblock = s->nonblocking(flags);
    std::lock_guard serial(s->send_mutex);
    std::unique_lock lock(s->mutex);
    if (ready_for_data(*s, lock, nonblock) || send_pending_iomaps(*s, lock, flags))
        return static_cast<size_t>(-1);
    iovec v{const_cast<void*>(buf), count};
    Gather src(&v, 1);
    uint64_t at = static_cast<uint64_t>(offset);
    uint32_t chunk = kFirstChunk;
    int err = 0;
    while (src.remaining()) {
        wire::IoMap e;
        if (!find_target_iomap(*s->flow, at, e)) {
            err = EINVAL; // no mapping of the peer's holds the offset
            break;
        }
        if (wait_sendable(*s, lock, nonblock)) {
            err = errno;
            break;
        }
        size_t n = std::min<size_t>(src.remaining(), chunk);
        if (chunk < src.remaining() && chunk < kMaxChunk) chunk <<= 1;
        n = std::min<uint64_t>(n, e.offset + e.sge.length - at);
        const ssize_t posted = s->flow->write_direct(src, static_cast<uint32_t>(n),
                                                     e.sge.addr + (at - e.offset), e.sge.key);
        if (posted < 0) {
            err = errno;
            break;
        }
        at += static_cast<uint64_t>(posted);
    }
    const size_t sent = count - src.remaining();
    if (!sent && err) return static_cast<size_t>(fail(err));
    return sent;
}
