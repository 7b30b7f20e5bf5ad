// UD multicast on the emulated fabric (IBA 10.5, RoCE v2 annex A17).
//
// A UD packet to a multicast group carries BTH DestQP 0xFFFFFF, the multicast QPN. On a real
// network the group's address is the IP destination of the packet and switches replicate it to
// every member port. Between emulated hosts each copy is a UDP datagram to the member host's own
// address, so the group travels with the packet instead: 16 bytes of MGID after the ICRC (the
// "multicast trailer"), stripped by the receiving NIC before anything else looks at the packet.
// The ICRC itself is computed over the IP header the packet would have on a real network, with
// the group's address (multicast_group_address) as destination.
//
// No allocation, no exceptions: safe on the per-packet path and on untrusted bytes.
#pragma once

#include "emu/wire/ip_address.h"

#include <cstddef>
#include <cstdint>

namespace emu::wire {

inline constexpr uint32_t kMulticastQpn = 0xFFFFFF; // IBA 9.2: DestQP of every multicast packet
inline constexpr size_t kMcastTrailerLength = 16;   // the MGID, after the ICRC
inline constexpr size_t kGidLength = 16;

// A multicast GID as the kernel's rdma_is_multicast_addr sees it: ff00::/8, or an IPv4-mapped
// IPv4 multicast address (::ffff:224.0.0.0/100).
bool is_multicast_gid(const uint8_t* gid);

// True for an IPv4-mapped GID, ::ffff:a.b.c.d.
bool is_ipv4_mapped(const uint8_t* gid);

// The IPv4 destination of a RoCE v2 packet to `mgid` (network byte order): the GID's low 32
// bits, as a NIC builds the IPv4 header from a GID pair whose source GID is IPv4. For an
// IPv4-mapped group ::ffff:a.b.c.d that is the group address a.b.c.d itself; for an ff00::/8
// MGID it is only the MGID's last four bytes (ff01:0:0:2:c985:: gives 0.0.0.0).
uint32_t multicast_ipv4(const uint8_t* mgid);

// The IP destination of a packet to `mgid` from a host of the family given: over IPv4,
// multicast_ipv4 (IPv4-mapped); over IPv6, the MGID itself, as a NIC whose source GID is IPv6
// builds the header.
IpAddress multicast_group_address(const uint8_t* mgid, bool ipv6);

// The Ethernet destination of a packet to `mgid`, as the kernel resolves it
// (ib_resolve_eth_dmac): 01:00:5e + low 23 bits of the group for an IPv4-mapped group
// (RFC 1112), 33:33 + the last four bytes otherwise (RFC 2464).
void multicast_mac(const uint8_t* mgid, uint8_t mac[6]);

// Writes the trailer (the MGID) at `at`, which must have kMcastTrailerLength bytes of room.
void put_mcast_trailer(const uint8_t* mgid, uint8_t* at);

enum class TrailerResult : uint8_t {
    NotMulticast, // DestQP is not the multicast QPN (or too short to have a BTH): no trailer
    Ok,           // *mgid points at the MGID; *inner_len is the packet without the trailer
    Truncated,    // a multicast packet too short for BTH + ICRC + trailer
    BadGroup,     // the last 16 bytes are not a multicast GID: trailer missing or damaged
};

// Looks at a received UDP payload. A packet whose BTH DestQP is kMulticastQpn must end in a
// trailer; on Ok `*mgid` points at it (inside `data`) and `*inner_len` is `len` without it
// (BTH .. ICRC). Never reads outside [data, data + len).
TrailerResult split_mcast_trailer(const uint8_t* data, size_t len, const uint8_t** mgid,
                                  size_t* inner_len);

const char* describe(TrailerResult r);

} // namespace emu::wire
