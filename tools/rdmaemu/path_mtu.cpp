#include "path_mtu.h"

#include "emu/private_files.h"

#include <arpa/inet.h>
#include <array>
#include <cstring>
#include <ifaddrs.h>
#include <memory>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace rdmaemu {

namespace {

struct MtuPair {
    int roce;
    int netdev;
};

// IB MTUs, largest first, and the Ethernet MTU each is usually derived from.
constexpr std::array<MtuPair, 5> kMtuPairs = {
    {{4096, 9000}, {2048, 3000}, {1024, 1500}, {512, 700}, {256, 400}}};

// An address in network order, with its length in bytes (4 or 16).
struct RawAddress {
    int family = AF_UNSPEC;
    std::array<unsigned char, 16> bytes{};
    size_t size = 0;
};

RawAddress raw_of(const sockaddr* sa) {
    RawAddress r;
    if (!sa) return r;
    if (sa->sa_family == AF_INET) {
        const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
        std::memcpy(r.bytes.data(), &in->sin_addr, 4);
        r.size = 4;
    } else if (sa->sa_family == AF_INET6) {
        const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
        std::memcpy(r.bytes.data(), &in6->sin6_addr, 16);
        r.size = 16;
    } else {
        return r;
    }
    r.family = sa->sa_family;
    return r;
}

std::optional<RawAddress> parse(const std::string& text) {
    RawAddress r;
    if (inet_pton(AF_INET, text.c_str(), r.bytes.data()) == 1) {
        r.family = AF_INET;
        r.size = 4;
        return r;
    }
    if (inet_pton(AF_INET6, text.c_str(), r.bytes.data()) == 1) {
        r.family = AF_INET6;
        r.size = 16;
        return r;
    }
    return std::nullopt;
}

// The length of `mask`'s prefix when `a` and `b` agree under it; -1 when they do not.
int matching_prefix(const RawAddress& a, const RawAddress& b, const RawAddress& mask) {
    if (a.family != b.family || mask.family != a.family) return -1;
    int bits = 0;
    for (size_t i = 0; i < a.size; ++i) {
        if ((a.bytes[i] & mask.bytes[i]) != (b.bytes[i] & mask.bytes[i])) return -1;
        bits += __builtin_popcount(mask.bytes[i]);
    }
    return bits;
}

std::optional<int> mtu_of(const std::string& name) {
    emu::OwnedFd s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!s) return std::nullopt;
    ifreq req{};
    std::strncpy(req.ifr_name, name.c_str(), IFNAMSIZ - 1);
    if (::ioctl(s.get(), SIOCGIFMTU, &req) != 0) return std::nullopt;
    return req.ifr_mtu;
}

} // namespace

int roce_mtu_fitting(int netdev_mtu) {
    for (const MtuPair& p : kMtuPairs)
        if (p.roce + kRoceHeaderAllowance <= netdev_mtu) return p.roce;
    return 0;
}

int netdev_mtu(int roce_mtu) {
    for (const MtuPair& p : kMtuPairs)
        if (p.roce == roce_mtu) return p.netdev;
    return 1500;
}

std::optional<InterfaceMtu> interface_mtu(const std::string& address) {
    auto wanted = parse(address);
    if (!wanted) return std::nullopt;
    ifaddrs* list = nullptr;
    if (::getifaddrs(&list) != 0) return std::nullopt;
    std::unique_ptr<ifaddrs, decltype(&::freeifaddrs)> owner(list, ::freeifaddrs);
    // The most specific subnet wins (an address of the interface itself is a /32 or /128 match).
    std::string best;
    int best_bits = -1;
    for (const ifaddrs* i = list; i; i = i->ifa_next) {
        RawAddress own = raw_of(i->ifa_addr);
        RawAddress mask = raw_of(i->ifa_netmask);
        if (own.family != wanted->family || !i->ifa_name) continue;
        if (std::memcmp(own.bytes.data(), wanted->bytes.data(), own.size) == 0) {
            best = i->ifa_name;
            break;
        }
        int bits = matching_prefix(*wanted, own, mask);
        if (bits > best_bits) {
            best_bits = bits;
            best = i->ifa_name;
        }
    }
    if (best.empty()) return std::nullopt;
    auto mtu = mtu_of(best);
    if (!mtu) return std::nullopt;
    return InterfaceMtu{best, *mtu};
}

} // namespace rdmaemu
