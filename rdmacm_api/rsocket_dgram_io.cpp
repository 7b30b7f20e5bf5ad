// Datagram rsockets: moving datagrams. Sends go over UDP until the destination's QP is known,
// then as UD SENDs from a send slot; receives come from the CQs and from the UDP socket, which
// each call reads first (rsocket_dgram.h says why there is no service thread).
#include "rsocket_dgram.h"

#include "cm_objects.h"
#include "rsocket.h"

#include "emu/wire/rsocket_dgram.h"

#include <algorithm>
#include <cstring>
#include <ctime>

namespace rdmacm::ds {

namespace wire = emu::wire::rsocket_dgram;

namespace {

constexpr uint64_t kRecvTag = 1ull << 63;
constexpr size_t kGrhSize = sizeof(ibv_grh);

uint64_t coarse_ms() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1000000;
}

size_t total_length(const iovec* iov, int iovcnt) {
    size_t n = 0;
    for (int i = 0; i < iovcnt; ++i)
        n += iov[i].iov_len;
    return n;
}

void gather(uint8_t* out, const iovec* iov, int iovcnt) {
    for (int i = 0; i < iovcnt; ++i) {
        if (iov[i].iov_len) std::memcpy(out, iov[i].iov_base, iov[i].iov_len);
        out += iov[i].iov_len;
    }
}

size_t scatter(const uint8_t* in, size_t len, const iovec* iov, int iovcnt) {
    size_t done = 0;
    for (int i = 0; i < iovcnt && done < len; ++i) {
        const size_t n = std::min(iov[i].iov_len, len - done);
        if (n) std::memcpy(iov[i].iov_base, in + done, n);
        done += n;
    }
    return done;
}

// Over the UDP socket, behind the header naming our QP (rdma-core's ds_sendv_udp).
ssize_t send_udp(Socket& s, const Dest& d, uint8_t op, const iovec* iov, int iovcnt, size_t len) {
    wire::UdpHeader h;
    h.op = op;
    h.qpn = d.qp->id->qp->qp_num;
    std::memcpy(&h.addr, &d.qp->local, addr_len(reinterpret_cast<const sockaddr*>(&d.qp->local)));
    uint8_t header[wire::kUdpHeaderIpv6];
    std::vector<iovec> parts;
    parts.push_back({header, wire::encode_udp_header(h, header)});
    parts.insert(parts.end(), iov, iov + iovcnt);
    msghdr msg{};
    msg.msg_name = const_cast<sockaddr_storage*>(&d.addr);
    msg.msg_namelen = addr_len(reinterpret_cast<const sockaddr*>(&d.addr));
    msg.msg_iov = parts.data();
    msg.msg_iovlen = parts.size();
    const ssize_t n = ::sendmsg(s.fd, &msg, MSG_DONTWAIT);
    return n < 0 ? -1 : static_cast<ssize_t>(len);
}

// A datagram from the UDP socket (rdma-core's udp_svc_process_rs): whoever sent it is a
// destination now, with an address handle to the QP it names; a data datagram is answered
// with our QP's number and queued for the app.
void take_udp(Socket& s) {
    uint8_t buf[wire::kUdpHeaderIpv6 + wire::kSlotSize];
    for (;;) {
        sockaddr_storage from{};
        socklen_t from_len = sizeof from;
        const ssize_t n = ::recvfrom(s.fd, buf, sizeof buf, MSG_DONTWAIT,
                                     reinterpret_cast<sockaddr*>(&from), &from_len);
        if (n < 0) return;
        size_t header_len = 0;
        auto h = wire::decode_udp_header(buf, static_cast<size_t>(n), from.ss_family, header_len);
        if (!h) continue; // not an rsocket's: dropped, as rdma-core does
        Dest* d = get_dest(s, reinterpret_cast<sockaddr*>(&from), from_len);
        if (!d) continue;
        if (h->op == wire::kDataOp) send_udp(s, *d, wire::kCtrlOp, nullptr, 0, 0);
        if (!d->ah || d->qpn != h->qpn) make_ah(*d, h->qpn);
        if (h->op != wire::kDataOp || !s.readable) continue;
        Received r;
        r.copy.assign(buf + header_len, buf + n);
        r.data = r.copy.data();
        r.length = r.copy.size();
        r.from = from;
        s.queue.push_back(std::move(r));
    }
}

void take_completions(Socket& s, Qp& qp) {
    if (qp.armed) { // a read(2) only when an event can be there
        ibv_cq* cq;
        void* context;
        while (ibv_get_cq_event(qp.id->recv_cq_channel, &cq, &context) == 0) {
            ibv_ack_cq_events(cq, 1);
            qp.armed = false;
        }
    }
    ibv_wc wc[16];
    int n;
    while ((n = ibv_poll_cq(qp.id->recv_cq, 16, wc)) > 0) {
        for (int i = 0; i < n; ++i) {
            const auto offset = static_cast<uint32_t>(wc[i].wr_id & 0xFFFFFFFF);
            if (!(wc[i].wr_id & kRecvTag)) {
                s.free_slots.push_back(offset); // sent (or failed: UD datagrams may be lost)
                continue;
            }
            const uint8_t* slot = qp.rbuf + offset;
            const size_t len = wc[i].byte_len > kGrhSize ? wc[i].byte_len - kGrhSize : 0;
            auto h =
                wc[i].status == IBV_WC_SUCCESS ? wire::decode_ds_header(slot, len) : std::nullopt;
            if (!h || !s.readable) { // not a datagram rsocket's (rdma-core's ds_valid_recv)
                repost(s, qp, offset);
                continue;
            }
            Received r;
            r.qp = &qp;
            r.offset = offset;
            r.data = slot + h->length;
            r.length = len - h->length;
            std::memcpy(&r.from, &h->from, sizeof h->from);
            s.queue.push_back(std::move(r));
        }
    }
}

// Takes what arrived: every QP's completions, then the UDP socket's datagrams. A receive
// that found a datagram on a QP leaves the UDP socket for later (a syscall less per datagram):
// a new peer's first datagrams wait behind the queue.
void progress(Socket& s, bool receiving = false) {
    for (auto& qp : s.qps)
        take_completions(s, *qp);
    if (receiving && !s.queue.empty()) return;
    const uint64_t tick = coarse_ms();
    if (!s.udp_ready && tick == s.udp_tick) return;
    s.udp_ready = false;
    s.udp_tick = tick;
    take_udp(s);
}

void arm_cqs(Socket& s) {
    for (auto& qp : s.qps) {
        ibv_req_notify_cq(qp->id->recv_cq, 0);
        qp->armed = true;
    }
}

bool readable_now(const Socket& s) {
    return !s.queue.empty() || !s.readable;
}

bool sendable_now(const Socket& s) {
    return !s.free_slots.empty() || !s.writable;
}

// Waits until ready(s), driving the socket, with s.mutex held through `lock`: 0, or -1 with
// errno EAGAIN when nonblocking.
int wait_until(Socket& s, std::unique_lock<std::mutex>& lock, bool nonblock,
               bool (*ready)(const Socket&)) {
    const rs::Defaults& d = rs::defaults();
    const bool receiving = ready == readable_now;
    for (;;) {
        progress(s, receiving);
        if (ready(s)) return 0;
        if (nonblock) return fail(EAGAIN);
        std::vector<pollfd> fds;
        fds.push_back({s.fd, POLLIN, 0});
        arm_cqs(s);
        for (auto& qp : s.qps)
            fds.push_back({qp->id->recv_cq_channel->fd, POLLIN, 0});
        s.udp_ready = true;
        progress(s); // what came before the CQs were armed
        if (ready(s)) return 0;
        lock.unlock();
        rs::sys_poll(fds.data(), fds.size(), d.wake_up_interval_ms);
        lock.lock();
        if (fds[0].revents) s.udp_ready = true;
    }
}

// One UD SEND from a slot, behind our datagram header (rdma-core's dsend).
ssize_t send_ud(Socket& s, Dest& d, const iovec* iov, int iovcnt, size_t len,
                std::unique_lock<std::mutex>& lock, int flags) {
    // Slots come back with the completions: reaped once all are in flight.
    if (s.free_slots.empty() && wait_until(s, lock, s.nonblocking(flags), sendable_now)) return -1;
    if (!s.writable) return fail(EPIPE);
    const uint32_t offset = s.free_slots.back();
    s.free_slots.pop_back();
    uint8_t* slot = s.sbuf + offset;
    std::memcpy(slot, d.qp->header, d.qp->header_len);
    gather(slot + d.qp->header_len, iov, iovcnt);
    ibv_sge sge{reinterpret_cast<uintptr_t>(slot), static_cast<uint32_t>(d.qp->header_len + len),
                d.qp->smr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = offset;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = sge.length <= s.sq_inline ? IBV_SEND_INLINE : 0;
    wr.wr.ud.ah = d.ah;
    wr.wr.ud.remote_qpn = d.qpn;
    wr.wr.ud.remote_qkey = RDMA_UDP_QKEY;
    ibv_send_wr* bad = nullptr;
    if (const int err = ibv_post_send(d.qp->id->qp, &wr, &bad)) {
        s.free_slots.push_back(offset);
        return fail(err);
    }
    return static_cast<ssize_t>(len);
}

} // namespace

ssize_t sendto(Socket& s, const iovec* iov, int iovcnt, int flags, const sockaddr* to,
               socklen_t tolen) {
    if (iovcnt < 0 || (iovcnt && !iov)) return fail(EINVAL);
    std::unique_lock lock(s.mutex);
    if (!s.writable) return fail(EPIPE);
    if (start(s) || ensure_bound(s)) return -1;
    Dest* d = s.conn_dest;
    if (to && (!d || !same_addr(reinterpret_cast<const sockaddr*>(&d->addr), to)))
        d = get_dest(s, to, tolen);
    if (!d) return to ? -1 : fail(EDESTADDRREQ);
    const size_t len = total_length(iov, iovcnt);
    if (len > d->qp->max_payload) return fail(EMSGSIZE); // rsocket_dgram.h
    if (!d->ah) progress(s);                             // the peer's answer may have named its QP
    if (!d->ah) return send_udp(s, *d, wire::kDataOp, iov, iovcnt, len);
    return send_ud(s, *d, iov, iovcnt, len, lock, flags);
}

ssize_t recvfrom(Socket& s, const iovec* iov, int iovcnt, int flags, sockaddr* from,
                 socklen_t* fromlen) {
    if (iovcnt < 0 || (iovcnt && !iov)) return fail(EINVAL);
    std::unique_lock lock(s.mutex);
    if (wait_until(s, lock, s.nonblocking(flags), readable_now)) return -1;
    if (s.queue.empty()) return 0; // shut down for reading, as a UDP socket returns
    Received& r = s.queue.front();
    const size_t n = scatter(r.data, r.length, iov, iovcnt);
    if (from && fromlen) {
        const socklen_t len = addr_len(reinterpret_cast<const sockaddr*>(&r.from));
        std::memcpy(from, &r.from, std::min(*fromlen, len));
        *fromlen = len;
    }
    if (!(flags & MSG_PEEK)) {
        if (r.qp) repost(s, *r.qp, r.offset);
        s.queue.pop_front();
    }
    return static_cast<ssize_t>(n);
}

short revents(Socket& s, short events) {
    std::lock_guard lock(s.mutex);
    progress(s);
    short r = 0;
    if ((events & POLLIN) && readable_now(s)) r |= POLLIN;
    if ((events & POLLOUT) && (!s.started || sendable_now(s))) r |= POLLOUT;
    return r;
}

bool arm(Socket& s, short events, std::vector<pollfd>& sleep_on) {
    {
        std::lock_guard lock(s.mutex);
        arm_cqs(s);
        s.udp_ready = true;
    }
    if (revents(s, events)) return true;
    std::lock_guard lock(s.mutex);
    sleep_on.push_back({s.fd, POLLIN, 0});
    for (auto& qp : s.qps)
        sleep_on.push_back({qp->id->recv_cq_channel->fd, POLLIN, 0});
    return false;
}

void woke(Socket& s, int fd) {
    std::lock_guard lock(s.mutex);
    if (fd == s.fd) s.udp_ready = true;
}

} // namespace rdmacm::ds
