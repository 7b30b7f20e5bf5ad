#include "net/pcap_writer.h"
#include "emu/wire/ipv4_header.h"
#include "emu/wire/ipv6_header.h"

#include <arpa/inet.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>
#include <utility>

namespace nicsim {

namespace wire = emu::wire;

namespace {

constexpr size_t kBufferSize = 256 * 1024; // always holds a whole block (at most ~64 KiB)
constexpr size_t kEthernetLen = 14, kIpv4Len = wire::kIpv4HeaderLength, kUdpLen = 8;
constexpr size_t kIpv6Len = wire::kIpv6HeaderLength;
constexpr size_t kMaxComment = 1000;

// pcapng blocks and options (draft-ietf-opsawg-pcapng).
constexpr uint32_t kSectionHeader = 0x0A0D0D0A, kInterfaceDescription = 1, kEnhancedPacket = 6;
constexpr uint32_t kByteOrderMagic = 0x1A2B3C4D;
constexpr uint16_t kOptEnd = 0, kOptComment = 1, kOptShbUserAppl = 4, kOptIfTsresol = 9;
constexpr size_t kEpbFixedLen = 28 + 4; // type .. original length, and the trailing length

size_t pad4(size_t n) {
    return (n + 3) & ~size_t(3);
}

void put_le32(std::vector<uint8_t>& out, uint32_t v) {
    for (int i = 0; i < 4; ++i)
        out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_le16(std::vector<uint8_t>& out, uint16_t v) {
    out.push_back(static_cast<uint8_t>(v));
    out.push_back(static_cast<uint8_t>(v >> 8));
}
void put_pad(std::vector<uint8_t>& out, size_t n) {
    out.insert(out.end(), pad4(n) - n, 0);
}
// One option: code, length, the value padded to 32 bits.
void put_option(std::vector<uint8_t>& out, uint16_t code, std::string_view value) {
    put_le16(out, code);
    put_le16(out, static_cast<uint16_t>(value.size()));
    out.insert(out.end(), value.begin(), value.end());
    put_pad(out, value.size());
}
// The block's total length, at its start and its end, once the body is in place.
void finish_block(std::vector<uint8_t>& out, size_t start) {
    uint32_t len = static_cast<uint32_t>(out.size() + 4 - start);
    put_le32(out, len);
    for (int i = 0; i < 4; ++i)
        out[start + 4 + size_t(i)] = static_cast<uint8_t>(len >> (8 * i));
}
void put_be16(uint8_t* p, uint16_t v) {
    p[0] = static_cast<uint8_t>(v >> 8);
    p[1] = static_cast<uint8_t>(v);
}

// 02:52 followed by the IPv4 address, or an IPv6 address's last four bytes (a locally
// administered, unicast MAC; the one the host's device GUID is made from).
void put_mac(uint8_t* p, const wire::IpAddress& addr) {
    p[0] = 0x02;
    p[1] = 0x52;
    std::memcpy(p + 2, addr.data() + 12, 4);
}

} // namespace

PcapWriter::~PcapWriter() {
    close();
}

void PcapWriter::stopped(const std::string& why) {
    if (auto handler = std::exchange(on_stop_, nullptr)) handler(why);
}

bool PcapWriter::fail(const std::string& what, int err) {
    if (!failed_) {
        error_ = path_ + ": " + what + (err ? std::string(": ") + std::strerror(err) : "");
        failed_ = true;
    }
    fd_.reset();
    buffer_.clear();
    stopped(error_);
    return false;
}

bool PcapWriter::stop_at_limit() {
    if (!close()) return false; // a failed flush has said why already
    limit_reached_ = true;
    stopped(path_ + ": capture limit of " + std::to_string(limit_) +
            " bytes reached; later packets are not captured");
    return false;
}

bool PcapWriter::open(const std::string& path, uint64_t limit_bytes, StopHandler on_stop) {
    close();
    failed_ = false;
    limit_reached_ = false;
    error_.clear();
    on_stop_ = nullptr;
    path_ = path;
    emu::Opened file = emu::create_private_file(path, O_WRONLY, 0600);
    if (!file.fd) {
        error_ = file.error;
        failed_ = true;
        return false;
    }
    fd_ = std::move(file.fd);
    limit_ = limit_bytes;
    buffer_.clear();
    buffer_.reserve(kBufferSize);
    put_le32(buffer_, kSectionHeader);
    put_le32(buffer_, 0); // total length, set by finish_block
    put_le32(buffer_, kByteOrderMagic);
    put_le16(buffer_, 1); // version 1.0
    put_le16(buffer_, 0);
    put_le32(buffer_, 0xffffffff); // section length: not given
    put_le32(buffer_, 0xffffffff);
    put_option(buffer_, kOptShbUserAppl, "rdmaemu nicsimd");
    put_option(buffer_, kOptEnd, {});
    finish_block(buffer_, 0);
    size_t idb = buffer_.size();
    put_le32(buffer_, kInterfaceDescription);
    put_le32(buffer_, 0);
    put_le16(buffer_, kLinktypeEthernet);
    put_le16(buffer_, 0);
    put_le32(buffer_, kSnaplen);
    const char nanoseconds = 9; // if_tsresol: 10^-9 s
    put_option(buffer_, kOptIfTsresol, {&nanoseconds, 1});
    put_option(buffer_, kOptEnd, {});
    finish_block(buffer_, idb);
    file_bytes_ = buffer_.size();
    if (!flush()) return false; // an unwritable file shows at once
    on_stop_ = std::move(on_stop);
    return true;
}

bool PcapWriter::write_udp(const sockaddr_in& src, const sockaddr_in& dst,
                           std::span<const uint8_t> payload, std::chrono::nanoseconds timestamp,
                           const uint8_t* dst_mac, std::string_view comment,
                           const IpFields& fields) {
    return write_udp({wire::IpAddress::from_ipv4(src.sin_addr.s_addr), ntohs(src.sin_port)},
                     {wire::IpAddress::from_ipv4(dst.sin_addr.s_addr), ntohs(dst.sin_port)},
                     payload, timestamp, dst_mac, comment, fields);
}

bool PcapWriter::write_udp(const wire::IpEndpoint& src, const wire::IpEndpoint& dst,
                           std::span<const uint8_t> payload, std::chrono::nanoseconds timestamp,
                           const uint8_t* dst_mac, std::string_view comment,
                           const IpFields& fields) {
    if (!fd_) // never opened, closed, failed or stopped at the limit
        return false;
    if (payload.size() > kMaxUdpPayload) {
        error_ = path_ + ": a " + std::to_string(payload.size()) +
                 "-byte UDP payload does not fit in an IP packet; not captured";
        return false;
    }
    const bool v6 = !src.addr.is_ipv4();
    const size_t ip_len = v6 ? kIpv6Len : kIpv4Len;
    const size_t frame_len = kEthernetLen + ip_len + kUdpLen + payload.size();
    comment = comment.substr(0, kMaxComment);
    const size_t options = comment.empty() ? 0 : 4 + pad4(comment.size()) + 4;
    const size_t block_len = kEpbFixedLen + pad4(frame_len) + options;
    if (file_bytes_ + block_len > limit_) return stop_at_limit();
    file_bytes_ += block_len;
    if (buffer_.size() + block_len > kBufferSize && !flush()) return false;

    const uint64_t ns = timestamp.count() < 0 ? 0 : static_cast<uint64_t>(timestamp.count());
    const size_t block = buffer_.size();
    put_le32(buffer_, kEnhancedPacket);
    put_le32(buffer_, 0);
    put_le32(buffer_, 0); // interface 0
    put_le32(buffer_, static_cast<uint32_t>(ns >> 32));
    put_le32(buffer_, static_cast<uint32_t>(ns));
    put_le32(buffer_, static_cast<uint32_t>(frame_len)); // captured length
    put_le32(buffer_, static_cast<uint32_t>(frame_len)); // original length

    const size_t at = buffer_.size();
    buffer_.resize(at + kEthernetLen + ip_len + kUdpLen); // within the reserved capacity
    uint8_t* eth = buffer_.data() + at;
    if (dst_mac)
        std::memcpy(eth, dst_mac, 6);
    else
        put_mac(eth, dst.addr);
    put_mac(eth + 6, src.addr);
    put_be16(eth + 12, v6 ? 0x86DD : 0x0800);

    uint8_t* ip = eth + kEthernetLen;
    const uint16_t udp_len = static_cast<uint16_t>(kUdpLen + payload.size());
    uint32_t sum; // the UDP checksum's pseudo-header: addresses, protocol, length
    if (v6) {
        wire::Ipv6Header header;
        header.traffic_class = fields.tos;
        header.flow_label = fields.flow_label;
        header.hop_limit = fields.ttl;
        header.src_addr = src.addr.bytes;
        header.dst_addr = dst.addr.bytes;
        header.payload_length = udp_len;
        wire::put_ipv6_header(ip, header);
        sum = wire::internet_sum(0, ip + 8, 32);
    } else {
        wire::Ipv4Header header;
        header.tos = fields.tos;
        header.id = fields.id;
        header.ttl = fields.ttl;
        header.src_addr = src.addr.ipv4();
        header.dst_addr = dst.addr.ipv4();
        header.payload_length = udp_len;
        wire::put_ipv4_header(ip, header);
        sum = wire::internet_sum(0, ip + 12, 8);
    }
    sum += IPPROTO_UDP + udp_len;

    uint8_t* udp = ip + ip_len;
    put_be16(udp, src.port);
    put_be16(udp + 2, dst.port);
    put_be16(udp + 4, udp_len);
    put_be16(udp + 6, 0);
    // UDP checksum over the pseudo-header, header and payload.
    sum = wire::internet_sum(sum, udp, kUdpLen);
    sum = wire::internet_sum(sum, payload.data(), payload.size());
    uint16_t check = wire::internet_checksum(sum);
    put_be16(udp + 6, check == 0 ? 0xffff : check); // 0 would mean "no checksum"

    buffer_.insert(buffer_.end(), payload.begin(), payload.end());
    put_pad(buffer_, frame_len);
    if (!comment.empty()) {
        put_option(buffer_, kOptComment, comment);
        put_option(buffer_, kOptEnd, {});
    }
    finish_block(buffer_, block);
    return true;
}

bool PcapWriter::write_all(const uint8_t* data, size_t len) {
    while (len > 0) {
        ssize_t n = ::write(fd_.get(), data, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            return fail("write failed", errno);
        }
        data += n;
        len -= static_cast<size_t>(n);
    }
    return true;
}

bool PcapWriter::flush() {
    if (failed_ || !fd_) return false;
    if (!write_all(buffer_.data(), buffer_.size())) return false;
    buffer_.clear();
    return true;
}

bool PcapWriter::close() {
    if (!fd_) return !failed_;
    bool ok = flush();
    if (fd_ && ::close(fd_.release()) != 0 && ok) // still open unless the flush failed
        ok = fail("close failed", errno);
    return ok;
}

std::chrono::nanoseconds PcapWriter::now() {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

} // namespace nicsim
