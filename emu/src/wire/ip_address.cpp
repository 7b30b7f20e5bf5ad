#include "emu/wire/ip_address.h"

#include <arpa/inet.h>

namespace emu::wire {

namespace {
constexpr uint8_t kMappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
} // namespace

IpAddress IpAddress::from_ipv4(uint32_t addr) {
    IpAddress a;
    std::memcpy(a.bytes.data(), kMappedPrefix, sizeof kMappedPrefix);
    std::memcpy(a.bytes.data() + 12, &addr, 4);
    return a;
}

IpAddress IpAddress::from_gid(const uint8_t* gid) {
    IpAddress a;
    std::memcpy(a.bytes.data(), gid, 16);
    return a;
}

IpAddress IpAddress::from_in6(const in6_addr& in) {
    return from_gid(in.s6_addr);
}

std::optional<IpAddress> IpAddress::parse(std::string_view text) {
    char buf[INET6_ADDRSTRLEN + 1];
    if (text.empty() || text.size() >= sizeof buf) return std::nullopt;
    std::memcpy(buf, text.data(), text.size());
    buf[text.size()] = 0;
    in_addr four{};
    if (::inet_pton(AF_INET, buf, &four) == 1) return from_ipv4(four.s_addr);
    in6_addr six{};
    if (::inet_pton(AF_INET6, buf, &six) == 1) return from_in6(six);
    return std::nullopt;
}

bool IpAddress::is_ipv4() const {
    return std::memcmp(bytes.data(), kMappedPrefix, sizeof kMappedPrefix) == 0;
}

uint32_t IpAddress::ipv4() const {
    uint32_t a;
    std::memcpy(&a, bytes.data() + 12, 4);
    return a;
}

bool IpAddress::is_unspecified() const {
    if (is_ipv4()) return ipv4() == 0;
    for (uint8_t b : bytes)
        if (b) return false;
    return true;
}

bool IpAddress::is_loopback() const {
    if (is_ipv4()) return bytes[12] == 127;
    for (size_t i = 0; i < 15; ++i)
        if (bytes[i]) return false;
    return bytes[15] == 1;
}

bool IpAddress::is_link_local() const {
    return bytes[0] == 0xfe && (bytes[1] & 0xc0) == 0x80;
}

bool IpAddress::is_multicast() const {
    return is_ipv4() ? (bytes[12] & 0xf0) == 0xe0 : bytes[0] == 0xff;
}

in6_addr IpAddress::in6() const {
    in6_addr a{};
    std::memcpy(a.s6_addr, bytes.data(), 16);
    return a;
}

std::string IpAddress::text() const {
    char buf[INET6_ADDRSTRLEN] = "?";
    if (is_ipv4()) {
        const uint32_t a = ipv4();
        ::inet_ntop(AF_INET, &a, buf, sizeof buf);
    } else {
        const in6_addr a = in6();
        ::inet_ntop(AF_INET6, &a, buf, sizeof buf);
    }
    return buf;
}

std::string IpAddress::gid_text() const {
    char buf[INET6_ADDRSTRLEN] = "?";
    const in6_addr a = in6();
    ::inet_ntop(AF_INET6, &a, buf, sizeof buf);
    return buf;
}

std::string host_address_fault(const IpAddress& a) {
    if (a.is_unspecified()) return a.text() + " is the unspecified address, no host's";
    if (a.is_multicast()) return a.text() + " is a multicast address, no host's";
    if (a.is_link_local())
        return a.text() +
               " is IPv6 link-local (fe80::/10): it needs an interface, which a GID cannot name; "
               "give a global or unique-local (fd00::/8) address";
    return "";
}

socklen_t to_sockaddr(const IpEndpoint& ep, sockaddr_storage& out) {
    out = {};
    if (ep.addr.is_ipv4()) {
        auto* sin = reinterpret_cast<sockaddr_in*>(&out);
        sin->sin_family = AF_INET;
        sin->sin_port = htons(ep.port);
        sin->sin_addr.s_addr = ep.addr.ipv4();
        return sizeof(sockaddr_in);
    }
    auto* sin6 = reinterpret_cast<sockaddr_in6*>(&out);
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(ep.port);
    sin6->sin6_addr = ep.addr.in6();
    return sizeof(sockaddr_in6);
}

std::optional<IpEndpoint> from_sockaddr(const sockaddr* sa, socklen_t len) {
    if (!sa || len < static_cast<socklen_t>(sizeof(sa_family_t))) return std::nullopt;
    if (sa->sa_family == AF_INET && len >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
        sockaddr_in sin;
        std::memcpy(&sin, sa, sizeof sin);
        return IpEndpoint{IpAddress::from_ipv4(sin.sin_addr.s_addr), ntohs(sin.sin_port)};
    }
    if (sa->sa_family == AF_INET6 && len >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
        sockaddr_in6 sin6;
        std::memcpy(&sin6, sa, sizeof sin6);
        return IpEndpoint{IpAddress::from_in6(sin6.sin6_addr), ntohs(sin6.sin6_port)};
    }
    return std::nullopt;
}

} // namespace emu::wire
