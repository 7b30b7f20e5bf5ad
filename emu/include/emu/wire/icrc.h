// RoCE v2 Invariant CRC (IBA annex A17.3.3): a standard CRC-32 (IEEE 802.3 polynomial,
// reflected 0xEDB88320, init and final xor 0xFFFFFFFF) over
//   8 bytes 0xFF | IP header | UDP header | BTH | extension headers | payload | pad
// with the fields that routers may change set to all ones first: IPv4 TOS, TTL and header
// checksum (IPv6 traffic class, flow label, hop limit), the UDP checksum and BTH byte 4
// (FECN, BECN, reserved). It is stored after the pad, least significant byte first.
//
// Our nicsimd sends from a plain UDP socket, so it never sees the IP header: Ipv4Flow says what
// the kernel will put there (an unconnected socket with IP_PMTUDISC_DO sends DF=1, IP ID=0).
// Over IPv6 nothing is left to guess: every field the ICRC covers (version, payload length, next
// header, addresses) is known from the socket, the others are masked (Ipv6Flow).
#pragma once

#include "emu/wire/ip_address.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace emu::wire {

// CRC-32 as zlib's crc32(): crc32_update(0, data, len) == crc32(0, data, len), and
// crc32_update(crc32_update(0, a, n), b, m) is the CRC of a followed by b (ISA-L).
uint32_t crc32_update(uint32_t crc, const uint8_t* data, size_t len);

// The parts of an IPv4 + UDP header the ICRC covers that the flow determines. IHL is 5 (no
// options), protocol 17; total length and UDP length follow from the packet length.
struct Ipv4Flow {
    uint32_t src_addr = 0;        // network byte order (as in sockaddr_in.sin_addr.s_addr)
    uint32_t dst_addr = 0;        // network byte order
    uint16_t src_port = 0;        // host order
    uint16_t dst_port = 4791;     // host order
    uint16_t ip_id = 0;           // host order; 0 for our DF sockets
    uint16_t flags_frag = 0x4000; // host order: flags + fragment offset; DF by default
    // TOS/DSCP/ECN, TTL and both checksums are masked by the ICRC: no fields for them.
};

// ICRC of a RoCE v2 UDP payload `udp_payload` whose first `len_without_icrc` bytes are BTH ...
// pad (the 4 ICRC bytes follow them, or will). Returns 0 when len_without_icrc < 12 (no BTH).
uint32_t icrc(const Ipv4Flow& f, const uint8_t* udp_payload, size_t len_without_icrc);

// `packet`/`len`: the whole UDP payload including its last 4 bytes, the ICRC slot. Writes the
// ICRC there, little-endian (the wire order). Packets shorter than 16 bytes are left alone.
void finish_icrc(const Ipv4Flow& f, uint8_t* packet, size_t len);
// True when the last 4 bytes hold the right ICRC for this flow. False when len < 16.
bool icrc_ok(const Ipv4Flow& f, const uint8_t* packet, size_t len);

// The parts of an IPv6 + UDP header the ICRC covers that the flow determines: version 6,
// payload length (the UDP length), next header 17 and the addresses; traffic class, flow label
// and hop limit are masked (A17.3.3; rxe_icrc.c: priority 0xf, flow_lbl 0xff..., hop_limit 0xff).
struct Ipv6Flow {
    std::array<uint8_t, 16> src_addr{};
    std::array<uint8_t, 16> dst_addr{};
    uint16_t src_port = 0;    // host order
    uint16_t dst_port = 4791; // host order
};

uint32_t icrc(const Ipv6Flow& f, const uint8_t* udp_payload, size_t len_without_icrc);
void finish_icrc(const Ipv6Flow& f, uint8_t* packet, size_t len);
bool icrc_ok(const Ipv6Flow& f, const uint8_t* packet, size_t len);

// A flow of either family, by its source address's: IPv4 as our sockets send it (DF, ID 0), or
// IPv6. Both addresses are of one family.
struct IpFlow {
    IpAddress src_addr;
    IpAddress dst_addr;
    uint16_t src_port = 0;
    uint16_t dst_port = 4791;
};

void finish_icrc(const IpFlow& f, uint8_t* packet, size_t len);
bool icrc_ok(const IpFlow& f, const uint8_t* packet, size_t len);

// The ICRC a RoCE v2 packet should carry, computed from the whole IP packet as captured
// (IPv4 with any options, or IPv6 without extension headers; then UDP, BTH ..., ICRC): the IP
// header fields come from the packet itself, the UDP payload's length from the UDP header.
// nullopt when it is not such a packet (bad version, not UDP, lengths inconsistent or
// truncated, UDP payload shorter than BTH + ICRC).
std::optional<uint32_t> icrc_from_ip_packet(const uint8_t* ip_packet, size_t len);
// The ICRC stored in the captured packet (the last 4 bytes of its UDP payload), same checks.
std::optional<uint32_t> stored_icrc_of_ip_packet(const uint8_t* ip_packet, size_t len);

} // namespace emu::wire
