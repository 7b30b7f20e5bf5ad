#include "tx_burst.h"

#include <cerrno>
#include <cstring>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/socket.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

namespace nicsim {

TxBurst::TxBurst() : storage_(kSlots * kSlotSize), iov_(kSlots), msgs_(kSlots), meta_(kSlots) {
    packets_.reserve(kSlots);
    groups_.reserve(kSlots);
}

uint8_t* TxBurst::next_slot() {
    return packets_.size() < kSlots ? slot(packets_.size()) : nullptr;
}

void TxBurst::commit(const emu::wire::IpAddress& dst_addr, size_t len, bool alone, uint8_t tos) {
    packets_.push_back({dst_addr, static_cast<uint32_t>(len), alone, tos});
}

void TxBurst::groups(bool gso, std::vector<Group>& out) const {
    out.clear();
    for (size_t i = 0; i < packets_.size(); ++i) {
        const Packet& p = packets_[i];
        if (gso && !out.empty() && !p.alone && !packets_[out.back().first].alone) {
            Group& g = out.back();
            const Packet& last = packets_[g.first + g.count - 1];
            // A shorter packet ends a group, unless it starts a run of its own size (a
            // message's first packet, with its RETH, is longer than the rest).
            bool starts_run = i + 1 < packets_.size() && packets_[i + 1].dst == p.dst &&
                              packets_[i + 1].len == p.len;
            bool size_fits = p.len == g.segment || (p.len < g.segment && !starts_run);
            bool fits = p.dst == g.dst && p.tos == g.tos && last.len == g.segment && size_fits &&
                        g.count < kMaxSegments && (g.count + 1) * g.segment <= kMaxGsoBytes;
            if (fits) {
                ++g.count;
                continue;
            }
        }
        out.push_back({i, 1, p.dst, static_cast<uint16_t>(p.len), p.tos});
    }
}

void TxBurst::set_control(msghdr& h, Message& m, uint16_t segment, uint8_t tos, bool ipv6) {
    h.msg_control = nullptr;
    h.msg_controllen = 0;
    if (!segment && !tos) return;
    h.msg_control = m.control;
    h.msg_controllen = (segment ? CMSG_SPACE(sizeof(uint16_t)) : 0) + (tos ? kTosControlSpace : 0);
    cmsghdr* c = CMSG_FIRSTHDR(&h);
    if (segment) {
        c->cmsg_level = SOL_UDP;
        c->cmsg_type = UDP_SEGMENT;
        c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
        std::memcpy(CMSG_DATA(c), &segment, sizeof segment);
        c = CMSG_NXTHDR(&h, c);
    }
    if (tos) put_tos_control(c, tos, ipv6);
}

size_t TxBurst::send(int fd, uint16_t port, bool gso, size_t* datagrams, bool* gso_failed) {
    *gso_failed = false;
    *datagrams = 0;
    groups(gso, groups_);
    const std::vector<Group>& gs = groups_;
    std::vector<iovec>& iov = iov_;
    std::vector<Message>& meta = meta_;
    for (size_t i = 0; i < packets_.size(); ++i)
        iov[i] = {slot(i), packets_[i].len};
    for (size_t m = 0; m < gs.size(); ++m) {
        const Group& g = gs[m];
        const socklen_t name_len = emu::wire::to_sockaddr({g.dst, port}, meta[m].dst);
        msghdr& h = msgs_[m].msg_hdr;
        h = {};
        h.msg_name = &meta[m].dst;
        h.msg_namelen = name_len;
        h.msg_iov = &iov[g.first];
        h.msg_iovlen = g.count;
        set_control(h, meta[m], g.count > 1 ? g.segment : 0, g.tos, g.dst.family() == AF_INET6);
    }
    size_t sent = 0;
    size_t m = 0;
    while (m < gs.size()) {
        int n = ::sendmmsg(fd, &msgs_[m], static_cast<unsigned>(gs.size() - m), MSG_DONTWAIT);
        if (n > 0) {
            for (int k = 0; k < n; ++k)
                sent += gs[m + k].count;
            *datagrams += static_cast<size_t>(n);
            m += static_cast<size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        // A device or kernel without UDP GSO: the caller turns it off; this group goes out
        // packet by packet now.
        bool refused = n < 0 && gs[m].count > 1 &&
                       (errno == EINVAL || errno == EIO || errno == ENOPROTOOPT ||
                        errno == EOPNOTSUPP || errno == EMSGSIZE);
        if (!refused) break; // a full socket buffer: the rest is lost, the transport resends
        *gso_failed = true;
        const Group& g = gs[m];
        for (size_t k = 0; k < g.count; ++k) {
            msghdr h = msgs_[m].msg_hdr;
            h.msg_iov = &iov[g.first + k];
            h.msg_iovlen = 1;
            set_control(h, meta[m], 0, g.tos, g.dst.family() == AF_INET6);
            if (::sendmsg(fd, &h, MSG_DONTWAIT) >= 0) {
                ++sent;
                ++*datagrams;
            }
        }
        ++m;
    }
    packets_.clear();
    return sent;
}

} // namespace nicsim
