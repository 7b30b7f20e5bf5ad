// UD multicast on the emulated fabric: see emu/wire/multicast.h.
#include "emu/wire/multicast.h"

#include <cstring>

namespace emu::wire {

namespace {
constexpr size_t kBth = 12;
constexpr size_t kIcrc = 4;
} // namespace

bool is_ipv4_mapped(const uint8_t* gid) {
    static constexpr uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return std::memcmp(gid, kPrefix, sizeof kPrefix) == 0;
}

bool is_multicast_gid(const uint8_t* gid) {
    if (gid[0] == 0xff) return true;
    return is_ipv4_mapped(gid) && (gid[12] & 0xf0) == 0xe0; // 224.0.0.0/4
}

uint32_t multicast_ipv4(const uint8_t* mgid) {
    uint32_t a;
    std::memcpy(&a, mgid + 12, 4);
    return a;
}

IpAddress multicast_group_address(const uint8_t* mgid, bool ipv6) {
    return ipv6 ? IpAddress::from_gid(mgid) : IpAddress::from_ipv4(multicast_ipv4(mgid));
}

void multicast_mac(const uint8_t* mgid, uint8_t mac[6]) {
    if (is_ipv4_mapped(mgid)) {
        mac[0] = 0x01;
        mac[1] = 0x00;
        mac[2] = 0x5e;
        mac[3] = mgid[13] & 0x7f;
        mac[4] = mgid[14];
        mac[5] = mgid[15];
        return;
    }
    mac[0] = 0x33;
    mac[1] = 0x33;
    std::memcpy(mac + 2, mgid + 12, 4);
}

void put_mcast_trailer(const uint8_t* mgid, uint8_t* at) {
    std::memcpy(at, mgid, kMcastTrailerLength);
}

TrailerResult split_mcast_trailer(const uint8_t* data, size_t len, const uint8_t** mgid,
                                  size_t* inner_len) {
    if (len < kBth) return TrailerResult::NotMulticast;
    uint32_t qpn = (uint32_t{data[5]} << 16) | (uint32_t{data[6]} << 8) | data[7];
    if (qpn != kMulticastQpn) return TrailerResult::NotMulticast;
    if (len < kBth + kIcrc + kMcastTrailerLength) return TrailerResult::Truncated;
    const uint8_t* group = data + len - kMcastTrailerLength;
    if (!is_multicast_gid(group)) return TrailerResult::BadGroup;
    *mgid = group;
    *inner_len = len - kMcastTrailerLength;
    return TrailerResult::Ok;
}

const char* describe(TrailerResult r) {
    switch (r) {
    case TrailerResult::NotMulticast:
        return "not multicast";
    case TrailerResult::Ok:
        return "ok";
    case TrailerResult::Truncated:
        return "multicast packet too short for its trailer";
    case TrailerResult::BadGroup:
        return "multicast trailer missing or not a multicast GID";
    }
    return "?";
}

} // namespace emu::wire
