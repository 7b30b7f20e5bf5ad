#include "emu/wire/icrc.h"
#include "emu/wire/packet.h"

#include <catch2/catch.hpp>

#include <arpa/inet.h>

#include <cstring>
#include <random>
#include <vector>

using namespace emu::wire;
using Bytes = std::vector<uint8_t>;

namespace {

// Bit-at-a-time CRC-32 (reflected 0xEDB88320, init and final xor ~0): the textbook definition,
// independent of the table-driven code under test.
uint32_t ref_crc32(const uint8_t* p, size_t n) {
    uint32_t c = 0xFFFFFFFF;
    for (size_t i = 0; i < n; ++i) {
        c ^= p[i];
        for (int k = 0; k < 8; ++k)
            c = (c >> 1) ^ (0xEDB88320 & (0u - (c & 1)));
    }
    return ~c;
}

// The note's ICRC definition, spelled out naively: copy, mask, prefix 8 x 0xFF, CRC.
uint32_t ref_icrc(const Bytes& ip_packet) {
    Bytes m(8, 0xFF);
    m.insert(m.end(), ip_packet.begin(), ip_packet.end() - 4);
    uint8_t* ip = m.data() + 8;
    size_t ip_len;
    if ((ip[0] >> 4) == 4) {
        ip_len = (ip[0] & 0xF) * 4u;
        ip[1] = 0xFF;           // TOS
        ip[8] = 0xFF;           // TTL
        ip[10] = ip[11] = 0xFF; // checksum
    } else {
        ip_len = 40;
        ip[0] |= 0x0F; // traffic class
        ip[1] = 0xFF;  // traffic class, flow label
        ip[2] = ip[3] = 0xFF;
        ip[7] = 0xFF; // hop limit
    }
    ip[ip_len + 6] = ip[ip_len + 7] = 0xFF; // UDP checksum
    ip[ip_len + 8 + 4] = 0xFF;              // BTH byte 4
    return ref_crc32(m.data(), m.size());
}

uint32_t le32(const uint8_t* p) {
    return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

// RoCE v2 CNP captured on a ConnectX-4 Lx (scapy test/contrib/roce.uts), from the IP header
// on: 10.0.17.1 -> 10.0.18.1, IP ID 0x718c, DF, TTL 64, TOS 0xc2, UDP 0 -> 4791, BTH opcode
// 0x81 BECN dest QP 0x000118, 16 reserved bytes, ICRC 82 fd 00 2a.
const Bytes kCnpCapture = {0x45, 0xc2, 0x00, 0x3c, 0x71, 0x8c, 0x40, 0x00, 0x40, 0x11, 0x91, 0x61,
                           0x0a, 0x00, 0x11, 0x01, 0x0a, 0x00, 0x12, 0x01, 0x00, 0x00, 0x12, 0xb7,
                           0x00, 0x28, 0x00, 0x00, 0x81, 0x00, 0xff, 0xff, 0x40, 0x00, 0x01, 0x18,
                           0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                           0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x82, 0xfd, 0x00, 0x2a};

// scapy's UC_SEND_ONLY example from the same file (ICRC computed by scapy, not hardware):
// 192.168.0.7 -> 192.168.0.7, TOS 1, ID 1144, DF, TTL 64, UDP 49152 -> 4791, M=1, pad 2,
// dest QP 211, PSN 13571856, 18 bytes payload; scapy's icrc field 0x78f353f3.
const Bytes kUcSendOnly = {
    0x45, 0x01, 0x00, 0x40, 0x04, 0x78, 0x40, 0x00, 0x40, 0x11, 0xb4, 0xd5, 0xc0, 0xa8, 0x00, 0x07,
    0xc0, 0xa8, 0x00, 0x07, 0xc0, 0x00, 0x12, 0xb7, 0x00, 0x2c, 0xac, 0xa2, 0x24, 0x60, 0xff, 0xff,
    0x00, 0x00, 0x00, 0xd3, 0x00, 0xcf, 0x17, 0x10, 'F',  '0',  0x81, 0x8b, 0xe2, 0x89, '5',  0xd9,
    0x0e, 0x9a, 0x95, 'P',  'T',  0x01, 0xbe, 0x88, '^',  'P',  0x00, 0x00, 0x78, 0xf3, 0x53, 0xf3};

uint32_t addr(const char* dotted) {
    in_addr a{};
    REQUIRE(inet_pton(AF_INET, dotted, &a) == 1);
    return a.s_addr;
}

// An IPv4 + UDP packet around `udp_payload` with the flow's fields and the given TOS/TTL.
Bytes ipv4_packet(const Ipv4Flow& f, const Bytes& udp_payload, uint8_t tos, uint8_t ttl) {
    Bytes p(28);
    const size_t total = 28 + udp_payload.size();
    p[0] = 0x45;
    p[1] = tos;
    p[2] = static_cast<uint8_t>(total >> 8);
    p[3] = static_cast<uint8_t>(total);
    p[4] = static_cast<uint8_t>(f.ip_id >> 8);
    p[5] = static_cast<uint8_t>(f.ip_id);
    p[6] = static_cast<uint8_t>(f.flags_frag >> 8);
    p[7] = static_cast<uint8_t>(f.flags_frag);
    p[8] = ttl;
    p[9] = 17;
    p[10] = 0x12; // some checksum
    p[11] = 0x34;
    std::memcpy(&p[12], &f.src_addr, 4);
    std::memcpy(&p[16], &f.dst_addr, 4);
    p[20] = static_cast<uint8_t>(f.src_port >> 8);
    p[21] = static_cast<uint8_t>(f.src_port);
    p[22] = static_cast<uint8_t>(f.dst_port >> 8);
    p[23] = static_cast<uint8_t>(f.dst_port);
    const size_t udp_len = 8 + udp_payload.size();
    p[24] = static_cast<uint8_t>(udp_len >> 8);
    p[25] = static_cast<uint8_t>(udp_len);
    p[26] = 0xAB; // some checksum
    p[27] = 0xCD;
    p.insert(p.end(), udp_payload.begin(), udp_payload.end());
    return p;
}

Bytes sample_packet(std::mt19937_64& rng, size_t payload_len) {
    Headers h;
    h.opcode = 0x0A; // RC_RDMA_WRITE_ONLY
    h.dest_qpn = 0x11;
    h.psn = 0xABCDEF;
    h.ack_req = true;
    h.reth = {0x7f0000001000ull, 0x1234, static_cast<uint32_t>(payload_len)};
    Bytes payload(payload_len);
    for (auto& b : payload)
        b = static_cast<uint8_t>(rng());
    Bytes pkt(packet_length(h.opcode, payload_len));
    REQUIRE(build(h, payload.data(), payload_len, pkt.data()) == pkt.size());
    return pkt;
}

} // namespace

TEST_CASE("icrc: CRC-32 core equals the bitwise definition", "[wire][icrc]") {
    const char* check = "123456789";
    CHECK(crc32_update(0, reinterpret_cast<const uint8_t*>(check), 9) == 0xCBF43926);
    CHECK(crc32_update(0, nullptr, 0) == 0);

    std::mt19937_64 rng(32);
    Bytes buf(5000);
    for (auto& b : buf)
        b = static_cast<uint8_t>(rng());
    for (size_t len = 0; len < 300; ++len) {
        for (size_t off : {size_t{0}, size_t{1}, size_t{3}, size_t{7}}) { // any alignment
            INFO("len " << len << " offset " << off);
            REQUIRE(crc32_update(0, buf.data() + off, len) == ref_crc32(buf.data() + off, len));
        }
    }
    REQUIRE(crc32_update(0, buf.data(), buf.size()) == ref_crc32(buf.data(), buf.size()));
    // incremental updates compose
    for (size_t split = 0; split <= 100; split += 7) {
        uint32_t c = crc32_update(0, buf.data(), split);
        c = crc32_update(c, buf.data() + split, 100 - split);
        CHECK(c == ref_crc32(buf.data(), 100));
    }
}

TEST_CASE("icrc: reproduces a ConnectX-4 Lx CNP's ICRC", "[wire][icrc]") {
    REQUIRE(kCnpCapture.size() == 60);
    const uint32_t stored = le32(&kCnpCapture[56]);
    CHECK(stored == 0x2a00fd82);
    CHECK(ref_icrc(kCnpCapture) == stored); // the note's definition, naively
    CHECK(icrc_from_ip_packet(kCnpCapture.data(), kCnpCapture.size()) == stored);
    CHECK(stored_icrc_of_ip_packet(kCnpCapture.data(), kCnpCapture.size()) == stored);

    // the same from the UDP payload and the flow
    Ipv4Flow f;
    f.src_addr = addr("10.0.17.1");
    f.dst_addr = addr("10.0.18.1");
    f.src_port = 0;
    f.dst_port = kRoceV2Port;
    f.ip_id = 0x718c;
    f.flags_frag = 0x4000;
    const uint8_t* udp_payload = kCnpCapture.data() + 28;
    const size_t len = kCnpCapture.size() - 28;
    CHECK(icrc(f, udp_payload, len - kIcrcLength) == stored);
    CHECK(icrc_ok(f, udp_payload, len));
    f.ip_id = 0x718d;
    CHECK(!icrc_ok(f, udp_payload, len));
}

TEST_CASE("icrc: reproduces scapy's UC_SEND_ONLY example", "[wire][icrc]") {
    REQUIRE(kUcSendOnly.size() == 64);
    const uint32_t stored = le32(&kUcSendOnly[60]);
    CHECK(stored == 0xf353f378);
    CHECK(ref_icrc(kUcSendOnly) == stored);
    CHECK(icrc_from_ip_packet(kUcSendOnly.data(), kUcSendOnly.size()) == stored);
    Ipv4Flow f{addr("192.168.0.7"), addr("192.168.0.7"), 49152, kRoceV2Port, 1144, 0x4000};
    CHECK(icrc_ok(f, kUcSendOnly.data() + 28, kUcSendOnly.size() - 28));

    // and our parser reads the same packet
    Headers h;
    const uint8_t* pay = nullptr;
    size_t pay_len = 0;
    REQUIRE(parse(kUcSendOnly.data() + 28, kUcSendOnly.size() - 28, h, &pay, &pay_len) ==
            ParseResult::Ok);
    CHECK(h.opcode == 0x24);
    CHECK(h.migreq);
    CHECK(h.pad_count == 2);
    CHECK(h.dest_qpn == 211);
    CHECK(h.psn == 13571856);
    CHECK(pay_len == 18);
}

TEST_CASE("icrc: finish_icrc, icrc_ok and the fields it must ignore", "[wire][icrc]") {
    std::mt19937_64 rng(99);
    Ipv4Flow f{addr("127.0.0.1"), addr("127.0.0.2"), 0xC123, kRoceV2Port};
    for (size_t payload_len : {size_t{0}, size_t{1}, size_t{13}, size_t{256}, size_t{4096}}) {
        INFO("payload " << payload_len);
        Bytes pkt = sample_packet(rng, payload_len);
        finish_icrc(f, pkt.data(), pkt.size());
        REQUIRE(icrc_ok(f, pkt.data(), pkt.size()));
        const uint32_t stored = le32(&pkt[pkt.size() - 4]);

        // the whole IP packet, with any TOS/TTL/checksums, gives the same ICRC
        for (int k = 0; k < 4; ++k) {
            Bytes ip =
                ipv4_packet(f, pkt, static_cast<uint8_t>(rng()), static_cast<uint8_t>(rng()));
            ip[10] = static_cast<uint8_t>(rng());
            ip[26] = static_cast<uint8_t>(rng());
            CHECK(icrc_from_ip_packet(ip.data(), ip.size()) == stored);
            CHECK(ref_icrc(ip) == stored);
        }

        // FECN/BECN/reserved in BTH byte 4 are not covered
        Bytes marked = pkt;
        marked[4] = 0xC0;
        CHECK(icrc_ok(f, marked.data(), marked.size()));

        // any other bit is
        if (payload_len <= 256) {
            for (size_t i = 0; i < pkt.size(); ++i) {
                if (i == 4) continue;
                for (int bit = 0; bit < 8; ++bit) {
                    Bytes bad = pkt;
                    bad[i] ^= static_cast<uint8_t>(1u << bit);
                    REQUIRE(!icrc_ok(f, bad.data(), bad.size()));
                }
            }
        }
        // and so is the flow
        Ipv4Flow g = f;
        g.src_port ^= 1;
        CHECK(!icrc_ok(g, pkt.data(), pkt.size()));
        g = f;
        g.dst_addr ^= htonl(1);
        CHECK(!icrc_ok(g, pkt.data(), pkt.size()));
        g = f;
        g.flags_frag = 0;
        CHECK(!icrc_ok(g, pkt.data(), pkt.size()));
    }
    CHECK(icrc(f, nullptr, 0) == 0);
    Bytes tiny(15, 0);
    CHECK(!icrc_ok(f, tiny.data(), tiny.size()));
    finish_icrc(f, tiny.data(), tiny.size()); // too short: left alone
    CHECK(tiny == Bytes(15, 0));
}

TEST_CASE("icrc: IPv6 packets from a capture", "[wire][icrc]") {
    std::mt19937_64 rng(6);
    Bytes roce = sample_packet(rng, 40);
    Bytes ip(48, 0);
    ip[0] = 0x60;
    ip[4] = static_cast<uint8_t>((roce.size() + 8) >> 8);
    ip[5] = static_cast<uint8_t>(roce.size() + 8);
    ip[6] = 17;
    ip[7] = 64;
    for (int i = 8; i < 40; ++i)
        ip[i] = static_cast<uint8_t>(rng()); // addresses
    ip[40] = 0xC0;
    ip[42] = 0x12;
    ip[43] = 0xB7;
    ip[44] = static_cast<uint8_t>((roce.size() + 8) >> 8);
    ip[45] = static_cast<uint8_t>(roce.size() + 8);
    ip.insert(ip.end(), roce.begin(), roce.end());
    const auto c = icrc_from_ip_packet(ip.data(), ip.size());
    REQUIRE(c);
    CHECK(*c == ref_icrc(ip));
    // traffic class, flow label, hop limit and UDP checksum are masked
    Bytes other = ip;
    other[0] = 0x6F;
    other[1] = 0xFF;
    other[2] = 0x12;
    other[3] = 0x34;
    other[7] = 1;
    other[46] = 0x55;
    CHECK(icrc_from_ip_packet(other.data(), other.size()) == c);
    other[20] ^= 1; // an address byte is not
    CHECK(icrc_from_ip_packet(other.data(), other.size()) != c);
}

// An RC SEND Only over IPv6 whose ICRC was computed outside this code base by Linux rxe's rules
// (rxe_icrc.c: the raw CRC-32 register seeded 0xdebb20e3 over the IPv6 and UDP headers with
// priority 0xf, flow_lbl ff ff ff, hop_limit 0xff and the UDP checksum 0xffff, then the BTH with
// byte 4 all ones, payload and pad; inverted) and, the same, by zlib's crc32 over 8 x 0xFF and
// the masked bytes. fd00:214::1 -> fd00:214::2, traffic class 0x2e, flow label 0xabcde, hop
// limit 64, UDP 0xe4d1 -> 4791 (checksum 0x1234, masked), dest QP 0x11, AckReq, PSN 0xabcd,
// "RoCE v2 over IPv6" (17 bytes, pad 3), ICRC 9e 64 09 a3.
const Bytes kIpv6SendOnly = {
    0x62, 0xea, 0xbc, 0xde, 0x00, 0x2c, 0x11, 0x40, 0xfd, 0x00, 0x02, 0x14, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0xfd, 0x00, 0x02, 0x14,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0xe4, 0xd1,
    0x12, 0xb7, 0x00, 0x2c, 0x12, 0x34, 0x04, 0x30, 0xff, 0xff, 0x00, 0x00, 0x00, 0x11,
    0x80, 0x00, 0xab, 0xcd, 0x52, 0x6f, 0x43, 0x45, 0x20, 0x76, 0x32, 0x20, 0x6f, 0x76,
    0x65, 0x72, 0x20, 0x49, 0x50, 0x76, 0x36, 0x00, 0x00, 0x00, 0x9e, 0x64, 0x09, 0xa3};

TEST_CASE("icrc: reproduces an IPv6 packet's ICRC computed by rxe's rules", "[wire][icrc]") {
    const Bytes& ip = kIpv6SendOnly;
    constexpr size_t kUdpPayload = 40 + 8;
    const uint32_t want = 0xa309649e;
    REQUIRE(le32(&ip[ip.size() - 4]) == want);
    CHECK(ref_icrc(ip) == want);
    CHECK(icrc_from_ip_packet(ip.data(), ip.size()) == want);
    CHECK(stored_icrc_of_ip_packet(ip.data(), ip.size()) == want);

    // From the flow alone, as a sender over a UDP socket knows it.
    Ipv6Flow f;
    std::memcpy(f.src_addr.data(), &ip[8], 16);
    std::memcpy(f.dst_addr.data(), &ip[24], 16);
    f.src_port = 0xe4d1;
    const Bytes roce(ip.begin() + kUdpPayload, ip.end());
    CHECK(icrc(f, roce.data(), roce.size() - 4) == want);
    CHECK(icrc_ok(f, roce.data(), roce.size()));
    Bytes blank = roce;
    std::memset(&blank[blank.size() - 4], 0, 4);
    finish_icrc(f, blank.data(), blank.size());
    CHECK(blank == roce);
    // The same through the family-neither flow.
    IpFlow any{IpAddress::from_gid(f.src_addr.data()), IpAddress::from_gid(f.dst_addr.data()),
               f.src_port, f.dst_port};
    CHECK(icrc_ok(any, roce.data(), roce.size()));

    // Traffic class, flow label, hop limit and the UDP checksum are masked: a router may change
    // them and a receiver need not know them.
    Bytes rerouted = ip;
    rerouted[0] = 0x6f;
    rerouted[1] = 0x00;
    rerouted[2] = 0x00;
    rerouted[3] = 0x01;
    rerouted[7] = 3;
    rerouted[46] = rerouted[47] = 0;
    CHECK(icrc_from_ip_packet(rerouted.data(), rerouted.size()) == want);
    // Everything else is covered: the addresses, the ports, BTH (but byte 4), payload, pad.
    Ipv6Flow g = f;
    g.src_addr[15] ^= 1;
    CHECK(!icrc_ok(g, roce.data(), roce.size()));
    g = f;
    g.dst_port ^= 1;
    CHECK(!icrc_ok(g, roce.data(), roce.size()));
    for (size_t i = 0; i + 4 < roce.size(); ++i) {
        Bytes bad = roce;
        bad[i] ^= 0x10;
        CHECK(icrc_ok(f, bad.data(), bad.size()) == (i == 4));
    }
    // An IPv4 flow of the same packet is another ICRC.
    IpFlow four{IpAddress::from_ipv4(addr("10.0.0.1")), IpAddress::from_ipv4(addr("10.0.0.2")),
                f.src_port, f.dst_port};
    CHECK(!icrc_ok(four, roce.data(), roce.size()));
}

// Two packets Linux Soft-RoCE (rxe1, kernel 6.1) sent us over IPv6 in the VM interop check
// (interop_ipv6, tests/vm/interop.sh), as our capture recorded them: fd14::1 -> fd14::2, traffic
// class 0, flow label 0, hop limit 64, UDP 60228 -> 4791 (rxe sent UDP checksum 0; the capture's
// is its own, masked anyway). An RC SEND Only of ibv_rc_pingpong -s 1 (PSN 3297638, pad 3) and
// an ACK (syndrome 0x1f, MSN 1). Their ICRCs are rxe's own: a second implementation's word.
const Bytes kRxeIpv6SendOnly = {
    0x60, 0x00, 0x00, 0x00, 0x00, 0x1c, 0x11, 0x40, 0xfd, 0x14, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0xfd, 0x14, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0xeb, 0x44,
    0x12, 0xb7, 0x00, 0x1c, 0xd8, 0x7b, 0x04, 0x30, 0xff, 0xff, 0x00, 0x61, 0x51, 0x9a,
    0x80, 0x32, 0x51, 0x66, 0x00, 0x00, 0x00, 0x00, 0x9b, 0x0d, 0x6c, 0x40};
const Bytes kRxeIpv6Ack = {0x60, 0x00, 0x00, 0x00, 0x00, 0x1c, 0x11, 0x40, 0xfd, 0x14, 0x00, 0x00,
                           0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
                           0xfd, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                           0x00, 0x00, 0x00, 0x02, 0xeb, 0x44, 0x12, 0xb7, 0x00, 0x1c, 0xbc, 0xb5,
                           0x11, 0x00, 0xff, 0xff, 0x00, 0x61, 0x51, 0x9a, 0x00, 0xde, 0xdc, 0x1a,
                           0x1f, 0x00, 0x00, 0x01, 0xec, 0x7b, 0xff, 0x66};

TEST_CASE("icrc: reproduces the ICRCs Linux Soft-RoCE sent over IPv6", "[wire][icrc]") {
    for (const Bytes* p : {&kRxeIpv6SendOnly, &kRxeIpv6Ack}) {
        const Bytes& ip = *p;
        const uint32_t stored = le32(&ip[ip.size() - 4]);
        CHECK(icrc_from_ip_packet(ip.data(), ip.size()) == stored);
        CHECK(ref_icrc(ip) == stored);
        // As our link checks it: from the socket's addresses and ports alone.
        IpFlow f{IpAddress::from_gid(&ip[8]), IpAddress::from_gid(&ip[24]), 60228, 4791};
        const Bytes roce(ip.begin() + 48, ip.end());
        CHECK(icrc_ok(f, roce.data(), roce.size()));
        // Whatever traffic class, flow label or hop limit a router gave it.
        Bytes routed = ip;
        routed[0] = 0x6e;
        routed[1] = 0x12;
        routed[3] = 0x77;
        routed[7] = 1;
        CHECK(icrc_from_ip_packet(routed.data(), routed.size()) == stored);
    }
}

TEST_CASE("icrc: icrc_from_ip_packet rejects what is not RoCE over UDP", "[wire][icrc]") {
    const Bytes& good = kCnpCapture;
    CHECK(icrc_from_ip_packet(good.data(), good.size()));
    // any truncation
    for (size_t len = 0; len < good.size(); ++len) {
        Bytes cut(good.begin(), good.begin() + static_cast<long>(len));
        CHECK(!icrc_from_ip_packet(cut.data(), cut.size()));
        CHECK(!stored_icrc_of_ip_packet(cut.data(), cut.size()));
    }
    // trailing bytes beyond the IP total length (Ethernet padding) are ignored
    Bytes padded = good;
    padded.resize(good.size() + 6, 0);
    CHECK(icrc_from_ip_packet(padded.data(), padded.size()) == 0x2a00fd82u);
    Bytes bad = good;
    bad[9] = 6; // TCP
    CHECK(!icrc_from_ip_packet(bad.data(), bad.size()));
    bad = good;
    bad[0] = 0x55; // version 5
    CHECK(!icrc_from_ip_packet(bad.data(), bad.size()));
    bad = good;
    bad[0] = 0x44; // IHL below 5
    CHECK(!icrc_from_ip_packet(bad.data(), bad.size()));
    bad = good;
    bad[25] = 0x20; // UDP length disagrees with IP total length
    CHECK(!icrc_from_ip_packet(bad.data(), bad.size()));
    // a UDP payload too short for BTH + ICRC
    Ipv4Flow f;
    Bytes small = ipv4_packet(f, Bytes(12, 0), 0, 64);
    CHECK(!icrc_from_ip_packet(small.data(), small.size()));
}

TEST_CASE("icrc: throughput sanity", "[wire][icrc][.bench]") {
    Bytes buf(4096 + 32, 0x5A);
    Ipv4Flow f;
    uint32_t acc = 0;
    for (int i = 0; i < 100000; ++i)
        acc ^= icrc(f, buf.data(), buf.size());
    CHECK(acc != 0x12345678);
}
