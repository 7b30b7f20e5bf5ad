// RoCE v2 ICRC: see emu/wire/icrc.h.
#include "emu/wire/icrc.h"
#include "emu/wire/ipv4_header.h"
#include "emu/wire/ipv6_header.h"

#include <isa-l/crc.h>

#include <cstring>

namespace emu::wire {

namespace {

// The raw register update (no pre/post inversion), by ISA-L's folding CRC (PCLMULQDQ where
// the CPU has it): the CRC runs over every byte sent and received, twice per packet.
uint32_t crc_raw(uint32_t c, const uint8_t* p, size_t n) {
    return n ? ~crc32_gzip_refl(~c, p, n) : c;
}

inline void put16(uint8_t* p, uint16_t v) {
    p[0] = static_cast<uint8_t>(v >> 8);
    p[1] = static_cast<uint8_t>(v);
}
inline uint16_t get16(const uint8_t* p) {
    return static_cast<uint16_t>((p[0] << 8) | p[1]);
}
inline uint32_t get_le32(const uint8_t* p) {
    return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

constexpr size_t kBth = 12;
constexpr size_t kIcrc = 4;
constexpr size_t kUdp = 8;
constexpr size_t kIpv4 = kIpv4HeaderLength;
constexpr size_t kIpv6 = kIpv6HeaderLength;
constexpr size_t kMaxIpHeader = 60; // IPv4 with options

// CRC register after the 8-byte 0xFF prefix, the masked IP and UDP headers and the masked BTH
// (the first 12 bytes of `bth`), continued over the rest of the UDP payload up to the ICRC.
// `ip` holds the IP header already masked; `udp` the UDP header (its checksum gets masked here).
uint32_t icrc_over(const uint8_t* ip, size_t ip_len, const uint8_t* udp, const uint8_t* bth,
                   size_t len_without_icrc) {
    // The masked headers in one buffer, then the rest: two CRC calls per packet (a folding CRC
    // pays a setup per call).
    uint8_t head[8 + kMaxIpHeader + kUdp + kBth];
    uint8_t* p = head;
    std::memset(p, 0xFF, 8);
    p += 8;
    std::memcpy(p, ip, ip_len);
    p += ip_len;
    std::memcpy(p, udp, kUdp);
    p[6] = p[7] = 0xFF; // UDP checksum
    p += kUdp;
    std::memcpy(p, bth, kBth);
    p[4] = 0xFF; // FECN, BECN, reserved
    p += kBth;
    uint32_t c = crc_raw(0xFFFFFFFF, head, static_cast<size_t>(p - head));
    c = crc_raw(c, bth + kBth, len_without_icrc - kBth);
    return ~c;
}

} // namespace

uint32_t crc32_update(uint32_t crc, const uint8_t* data, size_t len) {
    return ~crc_raw(~crc, data, len);
}

uint32_t icrc(const Ipv4Flow& f, const uint8_t* udp_payload, size_t len_without_icrc) {
    if (len_without_icrc < kBth) return 0;
    const size_t udp_len = kUdp + len_without_icrc + kIcrc;
    uint8_t ip[kIpv4];
    Ipv4Header header;
    header.tos = 0xFF; // masked
    header.id = f.ip_id;
    header.flags_frag = f.flags_frag;
    header.ttl = 0xFF; // masked
    header.src_addr = f.src_addr;
    header.dst_addr = f.dst_addr;
    header.payload_length = static_cast<uint16_t>(udp_len);
    put_ipv4_fields(ip, header);
    ip[10] = ip[11] = 0xFF; // header checksum, masked
    uint8_t udp[kUdp];
    put16(udp, f.src_port);
    put16(udp + 2, f.dst_port);
    put16(udp + 4, static_cast<uint16_t>(udp_len));
    udp[6] = udp[7] = 0xFF;
    return icrc_over(ip, kIpv4, udp, udp_payload, len_without_icrc);
}

uint32_t icrc(const Ipv6Flow& f, const uint8_t* udp_payload, size_t len_without_icrc) {
    if (len_without_icrc < kBth) return 0;
    const size_t udp_len = kUdp + len_without_icrc + kIcrc;
    uint8_t ip[kIpv6];
    Ipv6Header header;
    header.src_addr = f.src_addr;
    header.dst_addr = f.dst_addr;
    header.payload_length = static_cast<uint16_t>(udp_len);
    put_ipv6_header(ip, header);
    ip[0] |= 0x0F;                // traffic class, high nibble
    ip[1] = ip[2] = ip[3] = 0xFF; // traffic class, low nibble, and the flow label
    ip[7] = 0xFF;                 // hop limit
    uint8_t udp[kUdp];
    put16(udp, f.src_port);
    put16(udp + 2, f.dst_port);
    put16(udp + 4, static_cast<uint16_t>(udp_len));
    udp[6] = udp[7] = 0xFF;
    return icrc_over(ip, kIpv6, udp, udp_payload, len_without_icrc);
}

namespace {

template <typename Flow> void finish(const Flow& f, uint8_t* packet, size_t len) {
    if (len < kBth + kIcrc) return;
    uint32_t c = icrc(f, packet, len - kIcrc);
    uint8_t* p = packet + len - kIcrc;
    p[0] = static_cast<uint8_t>(c);
    p[1] = static_cast<uint8_t>(c >> 8);
    p[2] = static_cast<uint8_t>(c >> 16);
    p[3] = static_cast<uint8_t>(c >> 24);
}

template <typename Flow> bool ok(const Flow& f, const uint8_t* packet, size_t len) {
    if (len < kBth + kIcrc) return false;
    return icrc(f, packet, len - kIcrc) == get_le32(packet + len - kIcrc);
}

Ipv4Flow v4(const IpFlow& f) {
    return {f.src_addr.ipv4(), f.dst_addr.ipv4(), f.src_port, f.dst_port};
}

Ipv6Flow v6(const IpFlow& f) {
    return {f.src_addr.bytes, f.dst_addr.bytes, f.src_port, f.dst_port};
}

} // namespace

void finish_icrc(const Ipv4Flow& f, uint8_t* packet, size_t len) {
    finish(f, packet, len);
}

bool icrc_ok(const Ipv4Flow& f, const uint8_t* packet, size_t len) {
    return ok(f, packet, len);
}

void finish_icrc(const Ipv6Flow& f, uint8_t* packet, size_t len) {
    finish(f, packet, len);
}

bool icrc_ok(const Ipv6Flow& f, const uint8_t* packet, size_t len) {
    return ok(f, packet, len);
}

void finish_icrc(const IpFlow& f, uint8_t* packet, size_t len) {
    if (f.src_addr.is_ipv4())
        finish(v4(f), packet, len);
    else
        finish(v6(f), packet, len);
}

bool icrc_ok(const IpFlow& f, const uint8_t* packet, size_t len) {
    return f.src_addr.is_ipv4() ? ok(v4(f), packet, len) : ok(v6(f), packet, len);
}

namespace {

// Locates the IP header, UDP header and UDP payload of a captured IP packet and copies the IP
// header, masked, into `ip_masked`. Returns false when it is not a RoCE-sized UDP packet.
struct IpPacket {
    uint8_t ip_masked[kMaxIpHeader];
    size_t ip_len;
    const uint8_t* udp;
    const uint8_t* payload;
    size_t payload_len; // UDP payload, ICRC included
};

bool locate(const uint8_t* pkt, size_t len, IpPacket& out) {
    if (len < 1) return false;
    const unsigned version = pkt[0] >> 4;
    size_t ip_len = 0;
    size_t total = 0;
    if (version == 4) {
        if (len < kIpv4) return false;
        ip_len = size_t{pkt[0] & 0x0Fu} * 4;
        if (ip_len < kIpv4 || ip_len > len) return false;
        if (pkt[9] != 17) return false;
        total = get16(pkt + 2);
        std::memcpy(out.ip_masked, pkt, ip_len);
        out.ip_masked[1] = 0xFF;                      // TOS
        out.ip_masked[8] = 0xFF;                      // TTL
        out.ip_masked[10] = out.ip_masked[11] = 0xFF; // header checksum
    } else if (version == 6) {
        if (len < kIpv6) return false;
        ip_len = kIpv6;
        if (pkt[6] != 17) return false; // next header: UDP, no extension headers
        total = kIpv6 + get16(pkt + 4);
        std::memcpy(out.ip_masked, pkt, ip_len);
        out.ip_masked[0] |= 0x0F; // traffic class (low nibble of byte 0, high of byte 1)
        out.ip_masked[1] = 0xFF;  // traffic class + flow label
        out.ip_masked[2] = out.ip_masked[3] = 0xFF; // flow label
        out.ip_masked[7] = 0xFF;                    // hop limit
    } else {
        return false;
    }
    if (total > len || total < ip_len + kUdp) return false;
    const uint8_t* udp = pkt + ip_len;
    const size_t udp_len = get16(udp + 4);
    if (udp_len != total - ip_len) return false;
    if (udp_len < kUdp + kBth + kIcrc) return false;
    out.ip_len = ip_len;
    out.udp = udp;
    out.payload = udp + kUdp;
    out.payload_len = udp_len - kUdp;
    return true;
}

} // namespace

std::optional<uint32_t> icrc_from_ip_packet(const uint8_t* ip_packet, size_t len) {
    IpPacket p;
    if (!locate(ip_packet, len, p)) return std::nullopt;
    return icrc_over(p.ip_masked, p.ip_len, p.udp, p.payload, p.payload_len - kIcrc);
}

std::optional<uint32_t> stored_icrc_of_ip_packet(const uint8_t* ip_packet, size_t len) {
    IpPacket p;
    if (!locate(ip_packet, len, p)) return std::nullopt;
    return get_le32(p.payload + p.payload_len - kIcrc);
}

} // namespace emu::wire
