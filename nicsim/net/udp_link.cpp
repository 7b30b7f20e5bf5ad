#include "udp_link.h"

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

sockaddr_in endpoint(uint32_t addr, uint16_t port) {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = addr;
    sa.sin_port = htons(port);
    return sa;
}

} // namespace

UdpLink::UdpLink(boost::asio::io_context& io, UniqueFd sock, in_addr local, uint16_t port,
                 const FaultConfig& faults, PcapWriter pcap, spdlog::logger& log,
                 std::vector<uint32_t> hosts)
    : io_(io), sock_(io, sock.release()), local_(local), port_(port), hosts_(std::move(hosts)),
      log_(log), faults_(faults, local.s_addr), faulty_(faults.any()), reorder_timer_(io),
      pcap_(std::move(pcap)), rx_buffers_(kBatch * kBufferSize) {
    if (std::find(hosts_.begin(), hosts_.end(), local.s_addr) == hosts_.end())
        hosts_.push_back(local.s_addr);
    // Deep buffers: a burst of READ responses must not overflow the receiver at once.
    deep_buffer(SO_RCVBUFFORCE, SO_RCVBUF, "receive", "net.core.rmem_max");
    deep_buffer(SO_SNDBUFFORCE, SO_SNDBUF, "send", "net.core.wmem_max");
    // DF set and IP ID 0 on every packet, so the ICRC (which covers the IP header) is known.
    int pmtu = IP_PMTUDISC_DO;
    ::setsockopt(sock_.native_handle(), IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof pmtu);
    // GSO datagrams from the other hosts arrive whole (on loopback: one skb), their segment size
    // in a control message.
    int on = 1;
    if (::setsockopt(sock_.native_handle(), IPPROTO_UDP, UDP_GRO, &on, sizeof on) < 0)
        log_.info("UDP GRO not available ({}): packets arrive one by one", std::strerror(errno));
    // Each packet's TOS byte in a control message: the traffic class a UD receive's GRH shows.
    if (::setsockopt(sock_.native_handle(), IPPROTO_IP, IP_RECVTOS, &on, sizeof on) < 0)
        log_.info("IP_RECVTOS not available ({}): received traffic classes read as 0",
                  std::strerror(errno));
    // And its TTL, so that the capture shows received headers as they came.
    if (::setsockopt(sock_.native_handle(), IPPROTO_IP, IP_RECVTTL, &on, sizeof on) < 0)
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

void UdpLink::wait_readable() {
    sock_.async_wait(boost::asio::posix::descriptor_base::wait_read,
                     [this](const boost::system::error_code& ec) {
                         if (ec) return;
                         for (int turn = 0; turn < kBatchesPerTurn && receive_batch(); ++turn) {
                         }
                         wait_readable();
                     });
}

bool UdpLink::receive_batch() {
    mmsghdr msgs[kBatch];
    iovec iovs[kBatch];
    sockaddr_in from[kBatch];
    alignas(cmsghdr) char control[kBatch][3 * CMSG_SPACE(sizeof(int))];
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
    if (n <= 0) return false;
    for (int i = 0; i < n; ++i) {
        size_t segment = 0;
        uint8_t tos = 0;
        uint8_t ttl = 64;
        msghdr& h = msgs[i].msg_hdr;
        for (cmsghdr* c = CMSG_FIRSTHDR(&h); c; c = CMSG_NXTHDR(&h, c)) {
            if (c->cmsg_level == IPPROTO_UDP && c->cmsg_type == UDP_GRO) {
                int size;
                std::memcpy(&size, CMSG_DATA(c), sizeof size);
                segment = size > 0 ? static_cast<size_t>(size) : 0;
            } else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
                std::memcpy(&tos, CMSG_DATA(c), 1); // GRO joins only packets of one TOS
            } else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TTL) {
                int value;
                std::memcpy(&value, CMSG_DATA(c), sizeof value); // and of one TTL
                ttl = static_cast<uint8_t>(value);
            }
        }
        receive_datagram(from[i], static_cast<uint8_t*>(iovs[i].iov_base), msgs[i].msg_len, segment,
                         tos, ttl);
    }
    return n == kBatch;
}

// One UDP datagram: one packet, or a GRO datagram of packets of `segment` bytes each (the last
// may be shorter).
void UdpLink::receive_datagram(const sockaddr_in& from, uint8_t* data, size_t len, size_t segment,
                               uint8_t tos, uint8_t ttl) {
    ++counters_.rx_datagrams;
    if (segment == 0 || segment >= len) return receive_one(from, data, len, tos, ttl);
    for (size_t at = 0; at < len; at += segment)
        receive_one(from, data + at, std::min(segment, len - at), tos, ttl);
}

// The FORCE options need CAP_NET_ADMIN; without it the plain ones give what the sysctl allows,
// and a burst may then overflow the socket (counted by the kernel as RcvbufErrors): said once.
void UdpLink::deep_buffer(int force_opt, int opt, const char* which, const char* sysctl) {
    const int fd = sock_.native_handle();
    int size = 8 << 20;
    if (::setsockopt(fd, SOL_SOCKET, force_opt, &size, sizeof size) == 0) return;
    const int err = errno;
    ::setsockopt(fd, SOL_SOCKET, opt, &size, sizeof size);
    int got = 0;
    socklen_t len = sizeof got;
    ::getsockopt(fd, SOL_SOCKET, opt, &got, &len);
    log_.info("the link's {} buffer is {} KiB, not {} KiB ({}: no CAP_NET_ADMIN; {} caps it)",
              which, got / 1024, size / 1024, std::strerror(err), sysctl);
}

bool UdpLink::in_set(uint32_t addr) const {
    return std::find(hosts_.begin(), hosts_.end(), addr) != hosts_.end();
}

std::optional<uint16_t> UdpLink::verify_icrc(uint32_t src, uint32_t dst, uint16_t src_port,
                                             const uint8_t* data, size_t len) const {
    namespace wire = emu::wire;
    wire::Ipv4Flow flow{src, dst, src_port, port_};
    if (wire::icrc_ok(flow, data, len)) return 0;
    // The set's hosts send ID 0 (our DF sockets): for them the check stays whole. Another
    // peer's ID is not visible from a UDP socket (icrc_ipv4_id.h): find it, if the policy says.
    if (ipv4_id_policy_ != Ipv4IdPolicy::Recover || in_set(src)) return std::nullopt;
    return wire::recover_ipv4_id(flow, data, len);
}

void UdpLink::receive_one(const sockaddr_in& from, uint8_t* data, size_t len, uint8_t tos,
                          uint8_t ttl) {
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
            capture(from, endpoint(local_.s_addr, port_), data, len, nullptr,
                    std::string("rdmaemu: ") + wire::describe(t) + ": dropped by this NIC");
        ++counters_.mcast.malformed;
        log_.debug("dropped packet from {}: {}", inet_ntoa(from.sin_addr), wire::describe(t));
        return;
    }
    uint32_t ip_dst = mgid ? wire::multicast_ipv4(mgid) : local_.s_addr;
    std::optional<uint16_t> ip_id;
    if (inner >= wire::kIcrcLength)
        ip_id = verify_icrc(from.sin_addr.s_addr, ip_dst, ntohs(from.sin_port), data, inner);
    const bool icrc_good = ip_id.has_value();
    if (ip_id && *ip_id) ++counters_.icrc_ipv4_id_recovered;
    if (pcap_.is_open()) {
        uint8_t mac[6];
        if (mgid) wire::multicast_mac(mgid, mac);
        // The header as it came: TOS and TTL from the socket, the ID from the ICRC.
        std::string comment(icrc_good ? std::string_view{} : kIcrcDropComment);
        if (ip_id && *ip_id) {
            char note[128];
            std::snprintf(note, sizeof note,
                          "rdmaemu: IPv4 ID 0x%04x recovered from the ICRC (--icrc-ipv4 "
                          "recover-id, counted in icrc_ipv4_id_recovered)",
                          *ip_id);
            comment = note;
        }
        capture(from, endpoint(ip_dst, port_), data, inner, mgid ? mac : nullptr, comment,
                {tos, ip_id.value_or(0), ttl});
    }
    if (!icrc_good) {
        ++counters_.icrc_errors; // rxe drops these too, silently
        return;
    }
    if (hw_) hw_->add(HwCounter::RcvdPkts);
    on_packet_(from, data, inner, mgid, tos);
}

void UdpLink::capture(const sockaddr_in& src, const sockaddr_in& dst, const uint8_t* data,
                      size_t len, const uint8_t* dst_mac, std::string_view comment,
                      const Ipv4Fields& ip) {
    if (!pcap_.is_open()) return;
    pcap_.write_udp(src, dst, {data, len}, PcapWriter::now(), dst_mac, comment, ip);
    end_turn_later();
}

// One handler per turn of the event loop, however many packets the turn sent or captured: the
// burst goes to the kernel in one sendmmsg, the capture to the file in one write.
void UdpLink::end_turn_later() {
    if (end_turn_posted_) return;
    end_turn_posted_ = true;
    boost::asio::post(io_, [this] {
        end_turn_posted_ = false;
        flush();
        if (pcap_.is_open()) pcap_.flush();
        deliver_looped();
    });
}

void UdpLink::write(const sockaddr_in& dst, const uint8_t* data, size_t len, bool captured,
                    std::string_view comment, uint8_t tos) {
    flush(); // the burst's packets went first
    iovec iov{const_cast<uint8_t*>(data), len};
    msghdr m{};
    m.msg_name = const_cast<sockaddr_in*>(&dst);
    m.msg_namelen = sizeof dst;
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    if (tos) { // this packet's TOS byte, the socket's (0) for the others
        m.msg_control = control;
        m.msg_controllen = sizeof control;
        cmsghdr* c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = IPPROTO_IP;
        c->cmsg_type = IP_TOS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        int value = tos;
        std::memcpy(CMSG_DATA(c), &value, sizeof value);
    }
    ssize_t sent = ::sendmsg(sock_.native_handle(), &m, MSG_DONTWAIT);
    if (sent < 0) {
        // A full socket buffer loses the packet, as a congested link would; the transport
        // recovers it.
        const int err = errno;
        log_.debug("send to {} failed: {}", inet_ntoa(dst.sin_addr), std::strerror(err));
        if (hw_) hw_->add(HwCounter::SendErr);
        if (captured && pcap_.is_open()) {
            std::string why(comment);
            add_comment(why, std::string("rdmaemu: lost: the kernel refused it (") +
                                 std::strerror(err) + "), as a congested link would");
            capture(endpoint(local_.s_addr, port_), dst, data, len, nullptr, why);
        }
        return;
    }
    if (hw_) hw_->add(HwCounter::SentPkts);
    ++counters_.tx_packets;
    ++counters_.tx_datagrams;
    counters_.tx_bytes += len;
    if (captured && pcap_.is_open())
        capture(endpoint(local_.s_addr, port_), dst, data, len, nullptr, comment, {tos, 0, 64});
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
void UdpLink::queue(const sockaddr_in& dst, const uint8_t* data, size_t len) {
    uint8_t* slot = packet_buffer();
    if (slot != data) std::memcpy(slot, data, len);
    // Only the set's hosts take a GSO datagram whole (UDP_GRO); any other peer gets each packet
    // as its own datagram, with IP ID 0 as its ICRC says (tx_burst.h).
    burst_.commit(dst.sin_addr.s_addr, len, !in_set(dst.sin_addr.s_addr));
    ++counters_.tx_packets;
    counters_.tx_bytes += len;
    if (pcap_.is_open()) capture(endpoint(local_.s_addr, port_), dst, data, len);
    end_turn_later();
}

// The packets this host sent itself, turned around inside the NIC: no socket, and no ICRC to
// compute or check, as they never reach a wire.
void UdpLink::deliver_looped() {
    if (loopback_.empty()) return;
    const sockaddr_in self = endpoint(local_.s_addr, port_);
    loopback_.deliver_all([&](uint8_t* data, size_t len, uint8_t tos) {
        ++counters_.rx_packets;
        counters_.rx_bytes += len;
        if (hw_) hw_->add(HwCounter::RcvdPkts);
        on_packet_(self, data, len, nullptr, tos);
    });
}

void UdpLink::send(uint32_t dst_addr, uint8_t* packet, size_t len, uint8_t tos) {
    // To this host itself: turned around inside, unless the faults or the capture must see it
    // on the link (then it crosses the socket like any other, byte for byte).
    if (dst_addr == local_.s_addr && !faulty_ && !pcap_.is_open()) {
        loopback_.push(packet, len, tos);
        ++counters_.tx_packets;
        ++counters_.loopback_packets;
        counters_.tx_bytes += len;
        if (hw_) hw_->add(HwCounter::SentPkts);
        return end_turn_later();
    }
    sockaddr_in dst = endpoint(dst_addr, port_);
    emu::wire::Ipv4Flow flow{local_.s_addr, dst_addr, port_, port_};
    emu::wire::finish_icrc(flow, packet, len); // the TOS byte is masked: it does not change
    if (faulty_) return send_faulty(dst, packet, len, false, tos);
    if (!tos) return queue(dst, packet, len);
    // The burst's datagrams share the socket's TOS (0): this packet goes on its own.
    std::vector<uint8_t> copy(packet, packet + len); // `packet` may be a slot of the burst
    write(dst, copy.data(), copy.size(), true, {}, tos);
}

void UdpLink::send_multicast(const uint8_t* mgid, uint8_t* packet, size_t len, uint8_t tos) {
    namespace wire = emu::wire;
    const uint32_t group = wire::multicast_ipv4(mgid);
    wire::Ipv4Flow flow{local_.s_addr, group, port_, port_};
    wire::finish_icrc(flow, packet, len);
    if (pcap_.is_open()) { // once, as the NIC sends it: to the group, without the trailer
        uint8_t mac[6];
        wire::multicast_mac(mgid, mac);
        capture(endpoint(local_.s_addr, port_), endpoint(group, port_), packet, len, mac);
    }
    // The fabric's replication: one copy per host, the group in the trailer.
    std::vector<uint8_t> copy(len + wire::kMcastTrailerLength);
    std::memcpy(copy.data(), packet, len);
    wire::put_mcast_trailer(mgid, copy.data() + len);
    for (uint32_t host : hosts_) {
        if (!faulty_) {
            write(endpoint(host, port_), copy.data(), copy.size(), false, {}, tos);
            continue;
        }
        std::vector<uint8_t> mine = copy; // faults may corrupt it
        send_faulty(endpoint(host, port_), mine.data(), mine.size(), true, tos);
    }
}

void UdpLink::send_faulty(const sockaddr_in& dst, uint8_t* packet, size_t len, bool mcast_copy,
                          uint8_t tos) {
    FaultInjector::Decision d = faults_.decide();
    const bool captured = !mcast_copy && pcap_.is_open();
    if (d.drop) {
        ++counters_.fault_drops;
        if (captured)
            capture(endpoint(local_.s_addr, port_), dst, packet, len, nullptr, kDropComment);
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
