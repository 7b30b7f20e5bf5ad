// What the NIC does with an IPv4 packet whose ICRC is wrong for IP ID 0 (emu/wire/icrc_ipv4_id.h).
// A UDP socket never shows the IP header, and the ICRC covers the IP ID: our own hosts send ID 0,
// Linux Soft-RoCE sends a per-destination counter. docs/interop.md explains the choice.
#pragma once

#include <optional>
#include <string_view>

namespace nicsim {

enum class Ipv4IdPolicy {
    // Find the ID that makes the ICRC right (a 16-bit check instead of 32 for such packets),
    // accept the packet with it and count it (icrc_ipv4_id_recovered). The default: it is what
    // lets an emulated host talk to rxe. Packets from the set's own hosts, which send ID 0,
    // keep the full check.
    Recover,
    // The ICRC must be right for ID 0: every packet of a peer that sends another ID fails it
    // (icrc_errors), as before; the full 32-bit check for everyone.
    Zero,
};

constexpr std::string_view name(Ipv4IdPolicy p) {
    return p == Ipv4IdPolicy::Recover ? "recover-id" : "id-zero";
}

constexpr std::optional<Ipv4IdPolicy> parse_ipv4_id_policy(std::string_view s) {
    if (s == "recover-id") return Ipv4IdPolicy::Recover;
    if (s == "id-zero") return Ipv4IdPolicy::Zero;
    return std::nullopt;
}

} // namespace nicsim
