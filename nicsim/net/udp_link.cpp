#include "udp_link.h"

#include "tos_control.h"

#include "emu/wire/icrc.h"
#include "emu/wire/icrc_ipv4_id.h"
#include "emu/wire/multicast.h"
#include "emu/wire/packet.h"

#include <boost/asio/post.hpp>

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <netinet/udp.h>
#include <sys/socket.h>

#ifndef UDP_NO_CHECK6_RX
#define UDP_NO_CHECK6_RX 102
#endif
#ifndef IPV6_FLOWINFO // linux/in6.h: receive each packet's flow information
#define IPV6_FLOWINFO 11
#endif
#ifndef IPV6_AUTOFLOWLABEL // linux/in6.h
#define IPV6_AUTOFLOWLABEL 70
#endif

namespace nicsim {

namespace {

constexpr int kBatch = 32;
// A GRO datagram holds up to 64 KiB of packets.
constexpr size_t kBufferSize = 65536;
constexpr int kBatchesPerTurn = 8; // then the other sockets of the event loop get their turn

#ifndef UDP_GRO
constexpr int UDP_GRO = 104;
#endif
// A held (reordered) packet goes out after the next one, or after this long.
constexpr auto kReorderHold = std::chrono::microseconds(200);

// The comments a packet carries in the capture (pcapng opt_comment): what the fault injector
// did to it, or why this NIC dropped it on arrival. tshark: -Y frame.comment.
constexpr std::string_view kDropComment =
    "rdmaemu: dropped by the fault injector (--drop): never sent";
constexpr std::string_view kDuplicateComment =
    "rdmaemu: a duplicate made by the fault injector (--duplicate)";
constexpr std::string_view kReorderComment =
    "rdmaemu: held back by the fault injector (--reorder): sent after the next packet";
constexpr std::string_view kReorderTimeoutComment =
    "rdmaemu: held back by the fault injector (--reorder): sent 200 us later, no packet followed";
constexpr std::string_view kReorderShutdownComment =
    "rdmaemu: held back by the fault injector (--reorder): sent at shutdown";
constexpr std::string_view kIcrcDropComment =
    "rdmaemu: ICRC wrong: dropped by this NIC (counted in icrc_errors); IP ID unknown, shown as 0";
constexpr std::string_view kIcrcDropCommentIpv6 =
    "rdmaemu: ICRC wrong: dropped by this NIC (counted in icrc_errors)";

// Joins one more note to a packet's comment.
void add_comment(std::string& comment, std::string_view more) {
    if (comment.empty()) {
        comment = more;
        return;
    }
    // "rdmaemu: a; b" rather than "rdmaemu: a; rdmaemu: b".
    constexpr std::string_view prefix = "rdmaemu: ";
    if (more.substr(0, prefix.size()) == prefix) more.remove_prefix(prefix.size());
    comment += "; ";
    comment += more;
}

// The fault injector's host stream: the IPv4 address as before, or the IPv6 address folded.
uint32_t fault_stream(const emu::wire::IpAddress& a) {
    if (a.is_ipv4()) return a.ipv4();
    uint32_t h = 0;
    for (size_t i = 0; i < 16; i += 4) {
        uint32_t word;
        std::memcpy(&word, a.data() + i, 4);
        h ^= word;
    }
    return h;
}

} // namespace

UdpLink::UdpLink(boost::asio::io_context& io, UniqueFd sock, const emu::wire::IpAddress& local,
                 uint16_t port, const FaultConfig& faults, PcapWriter pcap, spdlog::logger& log,
                 std::vector<emu::wire::IpAddress> hosts)
    : io_(io), sock_(io, sock.release()), local_(local), ipv6_(!local.is_ipv4()), port_(port),
      hosts_(std::move(hosts)), log_(log), faults_(faults, fault_stream(local)),
      faulty_(faults.any()), reorder_timer_(io), pcap_(std::move(pcap)),
      rx_buffers_(kBatch * kBufferSize) {
    if (std::find(hosts_.begin(), hosts_.end(), local) == hosts_.end()) hosts_.push_back(local);
    const int fd = sock_.native_handle();
    // Deep buffers: a burst of READ responses must not overflow the receiver at once.
    receive_buffer_bytes_ = deep_buffer(SO_RCVBUFFORCE, SO_RCVBUF, "receive", "net.core.rmem_max");
    deep_buffer(SO_SNDBUFFORCE, SO_SNDBUF, "send", "net.core.wmem_max");
    // GSO datagrams from the other hosts arrive whole (on loopback: one skb), their segment size
    // in a control message.
    int on = 1;
    if (::setsockopt(fd, IPPROTO_UDP, UDP_GRO, &on, sizeof on) < 0)
        log_.info("UDP GRO not available ({}): packets arrive one by one", std::strerror(errno));
    if (ipv6_) {
        // Never fragmented by this host (a fragment header would end RoCE): too large a packet
        // fails to send, as over IPv4 with DF.
        int pmtu = IPV6_PMTUDISC_DO;
        ::setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &pmtu, sizeof pmtu);
        // Flow label 0, as Linux Soft-RoCE sends (rxe_net.c), not the kernel's hash of the flow:
        // what the capture shows for our packets is then what left.
        int off = 0;
        if (::setsockopt(fd, IPPROTO_IPV6, IPV6_AUTOFLOWLABEL, &off, sizeof off) < 0)
            log_.info("IPV6_AUTOFLOWLABEL not available ({}): sent flow labels are the kernel's, "
                      "the capture shows 0",
                      std::strerror(errno));
        // Each packet's traffic class, hop limit and flow label in control messages: what a UD
        // receive's GRH (the IPv6 header itself) and the capture show.
        if (::setsockopt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, &on, sizeof on) < 0)
            log_.info("IPV6_RECVTCLASS not available ({}): received traffic classes read as 0",
                      std::strerror(errno));
        if (::setsockopt(fd, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, &on, sizeof on) < 0)
            log_.info("IPV6_RECVHOPLIMIT not available ({}): received hop limits read as 64",
                      std::strerror(errno));
        if (::setsockopt(fd, IPPROTO_IPV6, IPV6_FLOWINFO, &on, sizeof on) < 0)
            log_.info("IPV6_FLOWINFO not available ({}): received flow labels read as 0",
                      std::strerror(errno));
        // Linux Soft-RoCE sends UDP checksum 0 over IPv6 too (rxe_net.c's prepare_udp_hdr), which
        // RFC 8200 allows tunnels (RFC 6936) and a plain socket drops: the ICRC covers the
        // payload instead.
        if (::setsockopt(fd, IPPROTO_UDP, UDP_NO_CHECK6_RX, &on, sizeof on) < 0)
            log_.info("UDP_NO_CHECK6_RX not available ({}): peers that send UDP checksum 0 over "
                      "IPv6 (Soft-RoCE) are not heard",
                      std::strerror(errno));
        return;
    }
    // DF set and IP ID 0 on every packet, so the ICRC (which covers the IP header) is known.
    int pmtu = IP_PMTUDISC_DO;
    ::setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof pmtu);
    // Each packet's TOS byte in a control message: the traffic class a UD receive's GRH shows.
    if (::setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &on, sizeof on) < 0)
        log_.info("IP_RECVTOS not available ({}): received traffic classes read as 0",
                  std::strerror(errno));
    // And its TTL, so that the capture shows received headers as they came.
    if (::setsockopt(fd, IPPROTO_IP, IP_RECVTTL, &on, sizeof on) < 0)
        log_.info("IP_RECVTTL not available ({}): the capture shows TTL 64 for received packets",
                  std::strerror(errno));
}

UdpLink::~UdpLink() {
    flush();
    send_held(kReorderShutdownComment);
    pcap_.close();
}

void UdpLink::start(Receiver on_packet) {
    on_packet_ = std::move(on_packet);
    wait_readable();
}

void UdpLink::attach(Receiver on_packet) {
    on_packet_ = std::move(on_packet);
    attached_ = true;
}

void UdpLink::wait_readable() {
    sock_.async_wait(boost::asio::posix::descriptor_base::wait_read,
                     [this](const boost::system::error_code& ec) {
                         if (ec) return;
                         receive();
                         wait_readable();
                     });
}

size_t UdpLink::receive() {
    size_t got = 0;
    for (int turn = 0; turn < kBatchesPerTurn; ++turn) {
        const size_t n = receive_batch();
        got += n;
        if (n < static_cast<size_t>(kBatch)) break;
    }
    return got;
}

size_t UdpLink::receive_batch() {
    mmsghdr msgs[kBatch];
    iovec iovs[kBatch];
    sockaddr_storage from[kBatch];
    alignas(cmsghdr) char control[kBatch][4 * CMSG_SPACE(sizeof(int))];
    for (int i = 0; i < kBatch; ++i) {
        iovs[i] = {rx_buffers_.data() + i * kBufferSize, kBufferSize};
        msgs[i] = {};
        msgs[i].msg_hdr.msg_iov = &iovs[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
        msgs[i].msg_hdr.msg_name = &from[i];
        msgs[i].msg_hdr.msg_namelen = sizeof from[i];
        msgs[i].msg_hdr.msg_control = control[i];
        msgs[i].msg_hdr.msg_controllen = sizeof control[i];
    }
    int n = ::recvmmsg(sock_.native_handle(), msgs, kBatch, MSG_DONTWAIT, nullptr);
    if (n <= 0) return 0;
    for (int i = 0; i < n; ++i) {
        size_t segment = 0;
        IpFields ip;
        msghdr& h = msgs[i].msg_hdr;
        for (cmsghdr* c = CMSG_FIRSTHDR(&h); c; c = CMSG_NXTHDR(&h, c)) {
            int value = 0;
            if (c->cmsg_level == IPPROTO_UDP && c->cmsg_type == UDP_GRO) {
                std::memcpy(&value, CMSG_DATA(c), sizeof value);
                segment = value > 0 ? static_cast<size_t>(value) : 0;
            } else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
                std::memcpy(&ip.tos, CMSG_DATA(c), 1); // GRO joins only packets of one TOS
            } else if ((c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TTL) ||
                       (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_HOPLIMIT)) {
                std::memcpy(&value, CMSG_DATA(c), sizeof value); // and of one TTL (hop limit)
                ip.ttl = static_cast<uint8_t>(value);
            } else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS) {
                std::memcpy(&value, CMSG_DATA(c), sizeof value);
                ip.tos = static_cast<uint8_t>(value);
            } else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_FLOWINFO) {
                uint32_t flowinfo; // network order: traffic class and flow label
                std::memcpy(&flowinfo, CMSG_DATA(c), sizeof flowinfo);
                ip.flow_label = ntohl(flowinfo) & 0xFFFFF;
            }
        }
        auto sender =
            emu::wire::from_sockaddr(reinterpret_cast<const sockaddr*>(&from[i]), h.msg_namelen);
        if (!sender) continue; // not of an IP family: nothing a socket of ours receives
        receive_datagram(*sender, static_cast<uint8_t*>(iovs[i].iov_base), msgs[i].msg_len, segment,
                         ip);
    }
    return static_cast<size_t>(n);
}

// One UDP datagram: one packet, or a GRO datagram of packets of `segment` bytes each (the last
// may be shorter).
void UdpLink::receive_datagram(const IpEndpoint& from, uint8_t* data, size_t len, size_t segment,
                               const IpFields& ip) {
    ++counters_.rx_datagrams;
    if (segment == 0 || segment >= len) return receive_one(from, data, len, ip);
    for (size_t at = 0; at < len; at += segment)
        receive_one(from, data + at, std::min(segment, len - at), ip);
}

// The FORCE options need CAP_NET_ADMIN; without it the plain ones give what the sysctl allows,
// and a burst may then overflow the socket (counted by the kernel as RcvbufErrors): said once.
uint64_t UdpLink::deep_buffer(int force_opt, int opt, const char* which, const char* sysctl) {
    const int fd = sock_.native_handle();
    int size = 8 << 20;
    const bool forced = ::setsockopt(fd, SOL_SOCKET, force_opt, &size, sizeof size) == 0;
    const int err = errno;
    if (!forced) ::setsockopt(fd, SOL_SOCKET, opt, &size, sizeof size);
    int got = 0;
    socklen_t len = sizeof got;
    ::getsockopt(fd, SOL_SOCKET, opt, &got, &len);
    if (!forced)
        log_.info("the link's {} buffer is {} KiB, not {} KiB ({}: no CAP_NET_ADMIN; {} caps it)",
                  which, got / 2 / 1024, size / 1024, std::strerror(err), sysctl);
    return static_cast<uint64_t>(got);
}

bool UdpLink::in_set(const emu::wire::IpAddress& addr) const {
    return std::find(hosts_.begin(), hosts_.end(), addr) != hosts_.end();
}

emu::wire::IpAddress UdpLink::group_address(const uint8_t* mgid) const {
    return emu::wire::multicast_group_address(mgid, ipv6_);
}

std::optional<uint16_t> UdpLink::verify_icrc(const emu::wire::IpAddress& src,
                                             const emu::wire::IpAddress& dst, uint16_t src_port,
                                             const uint8_t* data, size_t len) const {
    namespace wire = emu::wire;
    // Over IPv6 the ICRC is checked whole: every field it covers is known.
    if (ipv6_) {
        if (wire::icrc_ok(wire::IpFlow{src, dst, src_port, port_}, data, len)) return 0;
        return std::nullopt;
    }
    wire::Ipv4Flow flow{src.ipv4(), dst.ipv4(), src_port, port_};
    if (wire::icrc_ok(flow, data, len)) return 0;
    // The set's hosts send ID 0 (our DF sockets): for them the check stays whole. Another
    // peer's ID is not visible from a UDP socket (icrc_ipv4_id.h): find it, if the policy says.
    if (ipv4_id_policy_ != Ipv4IdPolicy::Recover || in_set(src)) return std::nullopt;
    return wire::recover_ipv4_id(flow, data, len);
}

void UdpLink::receive_one(const IpEndpoint& from, uint8_t* data, size_t len, IpFields ip) {
    namespace wire = emu::wire;
    ++counters_.rx_packets;
    counters_.rx_bytes += len;
    // A multicast packet carries its group after the ICRC; on a real network the group is the
    // IP destination, so that is what the capture shows and what the ICRC covers.
    const uint8_t* mgid = nullptr;
    size_t inner = len;
    wire::TrailerResult t = wire::split_mcast_trailer(data, len, &mgid, &inner);
    if (t == wire::TrailerResult::Truncated || t == wire::TrailerResult::BadGroup) {
        if (pcap_.is_open())
            capture(from, self(), data, len, nullptr,
                    std::string("rdmaemu: ") + wire::describe(t) + ": dropped by this NIC", ip);
        ++counters_.mcast.malformed;
        log_.debug("dropped packet from {}: {}", from.addr.text(), wire::describe(t));
        return;
    }
    const wire::IpAddress ip_dst = mgid ? group_address(mgid) : local_;
    std::optional<uint16_t> ip_id;
    if (inner >= wire::kIcrcLength) ip_id = verify_icrc(from.addr, ip_dst, from.port, data, inner);
    const bool icrc_good = ip_id.has_value();
    if (ip_id && *ip_id) ++counters_.icrc_ipv4_id_recovered;
    if (pcap_.is_open()) {
        uint8_t mac[6];
        if (mgid) wire::multicast_mac(mgid, mac);
        // The header as it came: TOS and TTL from the socket, the ID from the ICRC.
        std::string comment(icrc_good ? std::string_view{}
                            : ipv6_   ? kIcrcDropCommentIpv6
                                      : kIcrcDropComment);
        if (ip_id && *ip_id) {
            char note[128];
            std::snprintf(note, sizeof note,
                          "rdmaemu: IPv4 ID 0x%04x recovered from the ICRC (--icrc-ipv4 "
                          "recover-id, counted in icrc_ipv4_id_recovered)",
                          *ip_id);
            comment = note;
        }
        ip.id = ip_id.value_or(0);
        capture(from, {ip_dst, port_}, data, inner, mgid ? mac : nullptr, comment, ip);
    }
    if (!icrc_good) {
        ++counters_.icrc_errors; // rxe drops these too, silently
        return;
    }
    if (hw_) hw_->add(HwCounter::RcvdPkts);
    on_packet_(from, data, inner, mgid, ip);
}

void UdpLink::capture(const IpEndpoint& src, const IpEndpoint& dst, const uint8_t* data, size_t len,
                      const uint8_t* dst_mac, std::string_view comment, const IpFields& ip) {
    if (!pcap_.is_open()) return;
    pcap_.write_udp(src, dst, {data, len}, PcapWriter::now(), dst_mac, comment, ip);
    end_turn_later();
}

// One handler per turn of the event loop, however many packets the turn sent or captured: the
// burst goes to the kernel in one sendmmsg, the capture to the file in one write.
void UdpLink::end_turn_later() {
    if (end_turn_posted_) return;
    end_turn_posted_ = true;
    if (!attached_) boost::asio::post(io_, [this] { end_turn(); });
}

bool UdpLink::end_turn() {
    if (!end_turn_posted_) return false;
    end_turn_posted_ = false;
    flush();
    if (pcap_.is_open()) pcap_.flush();
    deliver_looped();
    return end_turn_posted_;
}

void UdpLink::write(const IpEndpoint& dst, const uint8_t* data, size_t len, bool captured,
                    std::string_view comment, uint8_t tos) {
    flush(); // the burst's packets went first
    iovec iov{const_cast<uint8_t*>(data), len};
    sockaddr_storage name;
    msghdr m{};
    m.msg_name = &name;
    m.msg_namelen = emu::wire::to_sockaddr(dst, name);
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    alignas(cmsghdr) char control[kTosControlSpace] = {};
    if (tos) { // this packet's TOS byte (traffic class), the socket's (0) for the others
        m.msg_control = control;
        m.msg_controllen = sizeof control;
        put_tos_control(CMSG_FIRSTHDR(&m), tos, ipv6_);
    }
    ssize_t sent = ::sendmsg(sock_.native_handle(), &m, MSG_DONTWAIT);
    if (sent < 0) {
        // A full socket buffer loses the packet, as a congested link would; the transport
        // recovers it.
        const int err = errno;
        log_.debug("send to {} failed: {}", dst.addr.text(), std::strerror(err));
        if (hw_) hw_->add(HwCounter::SendErr);
        if (captured && pcap_.is_open()) {
            std::string why(comment);
            add_comment(why, std::string("rdmaemu: lost: the kernel refused it (") +
                                 std::strerror(err) + "), as a congested link would");
            capture(self(), dst, data, len, nullptr, why);
        }
        return;
    }
    if (hw_) hw_->add(HwCounter::SentPkts);
    ++counters_.tx_packets;
    ++counters_.tx_datagrams;
    counters_.tx_bytes += len;
    if (captured && pcap_.is_open())
        capture(self(), dst, data, len, nullptr, comment, {tos, 0, 64, 0});
}

uint8_t* UdpLink::packet_buffer() {
    if (uint8_t* slot = burst_.next_slot()) return slot;
    flush();
    return burst_.next_slot();
}

void UdpLink::flush() {
    if (burst_.empty()) return;
    size_t datagrams = 0;
    bool gso_failed = false;
    size_t packets = burst_.size();
    size_t sent = burst_.send(sock_.native_handle(), port_, gso_, &datagrams, &gso_failed);
    if (gso_failed) {
        gso_ = false;
        log_.info("the kernel refused a UDP GSO send: packets go out one by one from now on");
    }
    if (sent < packets)
        log_.debug("socket buffer full: {} of {} packets lost", packets - sent, packets);
    if (hw_) {
        hw_->add(HwCounter::SentPkts, sent);
        hw_->add(HwCounter::SendErr, packets - sent);
    }
    counters_.tx_datagrams += datagrams;
}

// Queues one packet with the burst; the burst goes when this turn of the event loop ends.
void UdpLink::queue(const IpEndpoint& dst, const uint8_t* data, size_t len, uint8_t tos) {
    uint8_t* slot = packet_buffer();
    if (slot != data) std::memcpy(slot, data, len);
    // Only the set's hosts take a GSO datagram whole (UDP_GRO); any other peer gets each packet
    // as its own datagram, with IP ID 0 as its ICRC says (tx_burst.h).
    burst_.commit(dst.addr, len, !in_set(dst.addr), tos);
    ++counters_.tx_packets;
    counters_.tx_bytes += len;
    if (pcap_.is_open()) capture(self(), dst, data, len, nullptr, {}, IpFields{tos});
    end_turn_later();
}

// The packets this host sent itself, turned around inside the NIC: no socket, and no ICRC to
// compute or check, as they never reach a wire.
void UdpLink::deliver_looped() {
    if (loopback_.empty()) return;
    const IpEndpoint me = self();
    loopback_.deliver_all([&](uint8_t* data, size_t len, uint8_t tos) {
        ++counters_.rx_packets;
        counters_.rx_bytes += len;
        if (hw_) hw_->add(HwCounter::RcvdPkts);
        IpFields ip;
        ip.tos = tos;
        on_packet_(me, data, len, nullptr, ip);
    });
}

void UdpLink::send(const emu::wire::IpAddress& dst_addr, uint8_t* packet, size_t len, uint8_t tos) {
    // To this host itself: turned around inside, unless the faults or the capture must see it
    // on the link (then it crosses the socket like any other, byte for byte).
    if (dst_addr == local_ && !faulty_ && !pcap_.is_open()) {
        loopback_.push(packet, len, tos);
        ++counters_.tx_packets;
        ++counters_.loopback_packets;
        counters_.tx_bytes += len;
        if (hw_) hw_->add(HwCounter::SentPkts);
        return end_turn_later();
    }
    const IpEndpoint dst{dst_addr, port_};
    // The TOS byte (traffic class) is masked: it does not change the ICRC.
    emu::wire::finish_icrc(emu::wire::IpFlow{local_, dst_addr, port_, port_}, packet, len);
    if (faulty_) return send_faulty(dst, packet, len, false, tos);
    queue(dst, packet, len, tos);
}

void UdpLink::send_multicast(const uint8_t* mgid, uint8_t* packet, size_t len, uint8_t tos) {
    namespace wire = emu::wire;
    const wire::IpAddress group = group_address(mgid);
    wire::finish_icrc(wire::IpFlow{local_, group, port_, port_}, packet, len);
    if (pcap_.is_open()) { // once, as the NIC sends it: to the group, without the trailer
        uint8_t mac[6];
        wire::multicast_mac(mgid, mac);
        capture(self(), {group, port_}, packet, len, mac);
    }
    // The fabric's replication: one copy per host, the group in the trailer.
    std::vector<uint8_t> copy(len + wire::kMcastTrailerLength);
    std::memcpy(copy.data(), packet, len);
    wire::put_mcast_trailer(mgid, copy.data() + len);
    for (const wire::IpAddress& host : hosts_) {
        if (!faulty_) {
            write({host, port_}, copy.data(), copy.size(), false, {}, tos);
            continue;
        }
        std::vector<uint8_t> mine = copy; // faults may corrupt it
        send_faulty({host, port_}, mine.data(), mine.size(), true, tos);
    }
}

void UdpLink::send_faulty(const IpEndpoint& dst, uint8_t* packet, size_t len, bool mcast_copy,
                          uint8_t tos) {
    FaultInjector::Decision d = faults_.decide();
    const bool captured = !mcast_copy && pcap_.is_open();
    if (d.drop) {
        ++counters_.fault_drops;
        if (captured) capture(self(), dst, packet, len, nullptr, kDropComment);
        return;
    }
    std::string damage; // what both copies of a duplicated packet share
    if (d.corrupt) {
        ++counters_.fault_corruptions;
        // Damage to a multicast copy hits the packet, never the group it travels to (on a
        // network, a damaged IP destination fails the IP checksum and never arrives).
        size_t bit =
            faults_.corrupt(packet, mcast_copy ? len - emu::wire::kMcastTrailerLength : len);
        if (captured)
            damage = "rdmaemu: corrupted by the fault injector (--corrupt): bit " +
                     std::to_string(bit % 8) + " of UDP payload byte " + std::to_string(bit / 8) +
                     " flipped";
    }
    int copies = d.duplicate ? 2 : 1;
    if (d.duplicate) ++counters_.fault_duplicates;
    if (d.reorder) ++counters_.fault_reorders;
    for (int c = 0; c < copies; ++c) {
        Outgoing out{dst, std::vector<uint8_t>(packet, packet + len), !mcast_copy, damage, tos};
        if (c == 1 && captured) add_comment(out.comment, kDuplicateComment);
        auto ready = reorder_.push(std::move(out), d.reorder && c == 0);
        // A second packet ready is the one held back, going out after the packet just pushed.
        if (ready.size() == 2 && ready.packets[1].capture && pcap_.is_open())
            add_comment(ready.packets[1].comment, kReorderComment);
        for (auto& p : ready) {
            if (d.delay_us == 0) {
                write(p.dst, p.bytes.data(), p.bytes.size(), p.capture, p.comment, p.tos);
                continue;
            }
            auto timer = std::make_shared<boost::asio::steady_timer>(
                sock_.get_executor(), std::chrono::microseconds(d.delay_us));
            auto held = std::make_shared<Outgoing>(std::move(p));
            timer->async_wait([this, timer, held](const boost::system::error_code& ec) {
                if (!ec)
                    write(held->dst, held->bytes.data(), held->bytes.size(), held->capture,
                          held->comment, held->tos);
            });
        }
    }
    if (reorder_.holding()) arm_reorder_flush();
}

void UdpLink::arm_reorder_flush() {
    reorder_timer_.expires_after(kReorderHold);
    reorder_timer_.async_wait([this](const boost::system::error_code& ec) {
        if (ec) return;
        send_held(kReorderTimeoutComment);
    });
}

void UdpLink::send_held(std::string_view why) {
    auto held = reorder_.flush();
    if (!held) return;
    if (held->capture && pcap_.is_open()) add_comment(held->comment, why);
    write(held->dst, held->bytes.data(), held->bytes.size(), held->capture, held->comment,
          held->tos);
}

} // namespace nicsim
