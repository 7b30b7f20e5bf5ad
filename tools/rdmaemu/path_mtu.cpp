#include "path_mtu.h"

#include "emu/private_files.h"
#include "emu/wire/ip_address.h"

#include <array>
#include <cstring>
#include <ifaddrs.h>
#include <memory>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

namespace rdmaemu {

namespace {

struct MtuPair {
    int roce;
    int netdev;
};

// IB MTUs, largest first, and the Ethernet MTU each is usually derived from.
constexpr std::array<MtuPair, 5> kMtuPairs = {
    {{4096, 9000}, {2048, 3000}, {1024, 1500}, {512, 700}, {256, 400}}};

using emu::wire::IpAddress;

// The address in an ifaddrs entry's sockaddr (an address or a netmask), if IPv4 or IPv6.
std::optional<IpAddress> address_of(const sockaddr* sa) {
    if (!sa) return std::nullopt;
    const socklen_t len = sa->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    auto ep = emu::wire::from_sockaddr(sa, len);
    if (!ep) return std::nullopt;
    return ep->addr;
}

// How many bits `mask` has when `a` and `b` agree under it; -1 when they do not.
int matching_prefix(const IpAddress& a, const IpAddress& b, const IpAddress& mask) {
    int bits = 0;
    for (size_t i = 0; i < a.bytes.size(); ++i) {
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
    auto wanted = IpAddress::parse(address);
    if (!wanted) return std::nullopt;
    ifaddrs* list = nullptr;
    if (::getifaddrs(&list) != 0) return std::nullopt;
    std::unique_ptr<ifaddrs, decltype(&::freeifaddrs)> owner(list, ::freeifaddrs);
    // The most specific subnet wins (an address of the interface itself is a /32 or /128 match).
    std::string best;
    int best_bits = -1;
    for (const ifaddrs* i = list; i; i = i->ifa_next) {
        auto own = address_of(i->ifa_addr);
        auto mask = address_of(i->ifa_netmask);
        if (!own || !mask || !i->ifa_name || own->is_ipv4() != wanted->is_ipv4()) continue;
        if (*own == *wanted) {
            best = i->ifa_name;
            break;
        }
        if (int bits = matching_prefix(*wanted, *own, *mask); bits > best_bits) {
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
