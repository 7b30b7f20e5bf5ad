// A host's IP address as RoCE v2 names it: the 16 bytes of its GID (IBA annex A17.4.5: the GID
// is the IP address; an IPv4 address as the IPv4-mapped IPv6 address ::ffff:a.b.c.d, RFC 4291
// 2.5.5.2). One type for both families, so that a QP's destination GID, the link's peer and the
// CM's addresses compare as they are, and the family is a property of the address.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <netinet/in.h>
#include <optional>
#include <string>
#include <string_view>
#include <sys/socket.h>

namespace emu::wire {

struct IpAddress {
    std::array<uint8_t, 16> bytes{}; // network order; all zero: unspecified (::)

    // ::ffff:a.b.c.d from an IPv4 address in network order (as in_addr::s_addr).
    static IpAddress from_ipv4(uint32_t addr);
    static IpAddress from_gid(const uint8_t* gid);
    static IpAddress from_in6(const in6_addr& a);
    // "a.b.c.d" or any IPv6 text inet_pton takes (an IPv4-mapped one is the IPv4 address).
    static std::optional<IpAddress> parse(std::string_view text);

    // IPv4, held IPv4-mapped.
    bool is_ipv4() const;
    // The IPv4 address in network order; meaningful only when is_ipv4().
    uint32_t ipv4() const;
    int family() const { return is_ipv4() ? AF_INET : AF_INET6; }
    // :: or 0.0.0.0: a wildcard, no host's.
    bool is_unspecified() const;
    bool is_loopback() const;   // 127.0.0.0/8 or ::1
    bool is_link_local() const; // fe80::/10 (IPv6): needs an interface to mean anything
    bool is_multicast() const;  // 224.0.0.0/4 or ff00::/8
    in6_addr in6() const;
    const uint8_t* data() const { return bytes.data(); }
    // "10.0.0.1" for IPv4, RFC 5952 text ("fd00::1") for IPv6.
    std::string text() const;
    // The GID as Linux writes it in sysfs and rdma-core's tools print it.
    std::string gid_text() const;

    friend bool operator==(const IpAddress&, const IpAddress&) = default;
    friend auto operator<=>(const IpAddress&, const IpAddress&) = default;
};

// Why `a` cannot be an emulated host's address ("" when it can): a host's address is unicast
// and specific, and an IPv6 link-local one (fe80::/10) means nothing without its interface, which
// a GID cannot name.
std::string host_address_fault(const IpAddress& a);

// An address and a UDP port (host order): where a datagram came from or goes to.
struct IpEndpoint {
    IpAddress addr;
    uint16_t port = 0;

    friend bool operator==(const IpEndpoint&, const IpEndpoint&) = default;
};

// The socket address of `ep`: a sockaddr_in for IPv4, a sockaddr_in6 otherwise. Returns its
// length.
socklen_t to_sockaddr(const IpEndpoint& ep, sockaddr_storage& out);
// The endpoint of a sockaddr_in or sockaddr_in6 (an IPv4-mapped IPv6 one is IPv4); nothing for
// another family or a length too short for the family.
std::optional<IpEndpoint> from_sockaddr(const sockaddr* sa, socklen_t len);

} // namespace emu::wire

template <> struct std::hash<emu::wire::IpAddress> {
    size_t operator()(const emu::wire::IpAddress& a) const noexcept {
        uint64_t hi, lo;
        std::memcpy(&hi, a.bytes.data(), 8);
        std::memcpy(&lo, a.bytes.data() + 8, 8);
        return std::hash<uint64_t>{}(hi * 0x9E3779B97F4A7C15ull ^ lo);
    }
};
