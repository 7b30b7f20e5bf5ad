// Verifying the ICRC of an IPv4 RoCE v2 packet whose IP ID we cannot see.
//
// The ICRC covers the IPv4 identification field (only TOS, TTL and the header checksum are
// masked, IBA A17.3.3), and a UDP socket never shows the IP header. Our own hosts send ID 0
// (an unconnected socket with IP_PMTUDISC_DO), so their packets are checked in full. Linux
// Soft-RoCE does not: rxe_net.c's prepare_ipv4_hdr() sets DF and takes the ID from
// __ip_select_ident(), a per-destination counter (0xd21c, 0xd21d, ... in a capture), so a
// receiver that assumes ID 0 fails every rxe packet.
//
// CRC-32 is affine over GF(2): flipping input bits changes the CRC register by a linear
// function of the flipped bits that depends only on where they are. With the ICRC computed for
// ID 0 (c0) and the one stored in the packet (s), d = c0 ^ s is what the real ID contributed,
// carried through the bytes that follow it. Carrying d back over those bytes (the CRC's shift
// register run backwards, log-time by precomputed powers) leaves the ID's two bytes in the low
// 16 bits of the register and zeros above them, exactly when some ID makes the ICRC right.
//
// What it costs the check: an intact packet is always accepted with its true ID (the map from
// ID to CRC change is injective: CRC-32 catches every burst of 32 bits or fewer). A damaged
// packet passes when its damage happens to look like an ID change: 2^16 of the 2^32 possible
// register changes, so a random corruption slips through with probability 2^-16 (1.5e-5)
// instead of 2^-32. The recovered ID also puts the header the peer really sent in the capture.
#pragma once

#include "emu/wire/icrc.h"

#include <cstddef>
#include <cstdint>
#include <optional>

namespace emu::wire {

// The IP ID (host order) for which `packet` (the whole UDP payload, BTH .. ICRC, `len` bytes)
// carries the right ICRC for flow `f` (whose ip_id is ignored; its flags_frag is taken as sent).
// nullopt when no ID makes it right (a damaged packet, a wrong flow, len < 16).
std::optional<uint16_t> recover_ipv4_id(const Ipv4Flow& f, const uint8_t* packet, size_t len);

} // namespace emu::wire
