// The multicast pieces of the wire codec: which GIDs are multicast, the IPv4 address and MAC a
// group's packets go to, and the trailer that carries the MGID between emulated hosts.
#include "emu/wire/multicast.h"

#include <catch2/catch.hpp>

#include <arpa/inet.h>

#include <array>
#include <cstring>
#include <random>
#include <vector>

using namespace emu::wire;
using Gid = std::array<uint8_t, 16>;

namespace {

// perftest's default MGID, ff01:0:0:2:c985::, with the low byte given.
Gid ff_mgid(uint8_t low = 0) {
    return {0xff, 0x01, 0, 0, 0, 0, 0, 0x02, 0xc9, 0x85, 0, 0, 0, 0, 0, low};
}

Gid v4_mapped(const char* ip) {
    Gid g{};
    g[10] = g[11] = 0xff;
    ::inet_pton(AF_INET, ip, g.data() + 12);
    return g;
}

// A UD SEND ONLY-sized packet (BTH, DETH, 8 bytes of payload, ICRC) to `qpn`, then `trailer`.
std::vector<uint8_t> packet(uint32_t qpn, const uint8_t* trailer = nullptr) {
    std::vector<uint8_t> p(12 + 8 + 8 + 4, 0x5a);
    p[0] = 0x64;
    p[5] = static_cast<uint8_t>(qpn >> 16);
    p[6] = static_cast<uint8_t>(qpn >> 8);
    p[7] = static_cast<uint8_t>(qpn);
    if (trailer) {
        size_t at = p.size();
        p.resize(at + kMcastTrailerLength);
        std::memcpy(p.data() + at, trailer, kMcastTrailerLength);
    }
    return p;
}

} // namespace

TEST_CASE("multicast: which GIDs are multicast (rdma_is_multicast_addr)", "[wire][mcast]") {
    CHECK(is_multicast_gid(ff_mgid().data()));
    Gid ff02{0xff, 0x02};
    CHECK(is_multicast_gid(ff02.data()));
    CHECK(is_multicast_gid(v4_mapped("224.0.0.1").data()));
    CHECK(is_multicast_gid(v4_mapped("239.255.255.255").data()));
    CHECK_FALSE(is_multicast_gid(v4_mapped("223.255.255.255").data()));
    CHECK_FALSE(is_multicast_gid(v4_mapped("240.0.0.1").data()));
    CHECK_FALSE(is_multicast_gid(v4_mapped("127.0.1.2").data()));
    Gid zero{};
    CHECK_FALSE(is_multicast_gid(zero.data()));
    Gid v4_compat{}; // ::224.0.0.1 without the ffff: not IPv4-mapped
    v4_compat[12] = 224;
    CHECK_FALSE(is_multicast_gid(v4_compat.data()));
    Gid fe80{0xfe, 0x80};
    CHECK_FALSE(is_multicast_gid(fe80.data()));
}

TEST_CASE("multicast: the IPv4 destination and the MAC of a group", "[wire][mcast]") {
    Gid g = v4_mapped("239.129.2.3");
    in_addr a{multicast_ipv4(g.data())};
    CHECK(std::string(inet_ntoa(a)) == "239.129.2.3");
    uint8_t mac[6];
    multicast_mac(g.data(), mac); // RFC 1112: 01:00:5e + low 23 bits
    CHECK(std::vector<uint8_t>(mac, mac + 6) ==
          std::vector<uint8_t>{0x01, 0x00, 0x5e, 0x01, 0x02, 0x03});

    Gid f = ff_mgid(7);
    a.s_addr = multicast_ipv4(f.data());
    CHECK(std::string(inet_ntoa(a)) == "0.0.0.7"); // the MGID's low 32 bits
    multicast_mac(f.data(), mac);                  // RFC 2464: 33:33 + low 32 bits
    CHECK(std::vector<uint8_t>(mac, mac + 6) == std::vector<uint8_t>{0x33, 0x33, 0, 0, 0, 7});
}

TEST_CASE("multicast trailer: a multicast packet's MGID is found and stripped", "[wire][mcast]") {
    Gid g = ff_mgid(3);
    std::vector<uint8_t> p = packet(kMulticastQpn);
    size_t inner_expected = p.size();
    p.resize(p.size() + kMcastTrailerLength);
    put_mcast_trailer(g.data(), p.data() + inner_expected);
    const uint8_t* mgid = nullptr;
    size_t inner = 0;
    REQUIRE(split_mcast_trailer(p.data(), p.size(), &mgid, &inner) == TrailerResult::Ok);
    CHECK(inner == inner_expected);
    CHECK(mgid == p.data() + inner_expected);
    CHECK(std::memcmp(mgid, g.data(), 16) == 0);
}

TEST_CASE("multicast trailer: unicast packets have none", "[wire][mcast]") {
    Gid g = ff_mgid();
    for (uint32_t qpn : {0x11u, 0xfffffeu, 0x1u}) {
        std::vector<uint8_t> p = packet(qpn, g.data()); // even with 16 MGID-like bytes at the end
        const uint8_t* mgid = nullptr;
        size_t inner = 0;
        CHECK(split_mcast_trailer(p.data(), p.size(), &mgid, &inner) ==
              TrailerResult::NotMulticast);
        CHECK(mgid == nullptr);
    }
    CHECK(split_mcast_trailer(nullptr, 0, nullptr, nullptr) == TrailerResult::NotMulticast);
}

TEST_CASE("multicast trailer: missing, damaged or truncated trailers are refused",
          "[wire][mcast]") {
    const uint8_t* mgid = nullptr;
    size_t inner = 0;
    // No trailer: the last 16 bytes are payload and ICRC, not a multicast GID.
    std::vector<uint8_t> bare = packet(kMulticastQpn);
    CHECK(split_mcast_trailer(bare.data(), bare.size(), &mgid, &inner) == TrailerResult::BadGroup);
    // A unicast GID where the MGID belongs.
    Gid unicast = v4_mapped("127.0.0.1");
    std::vector<uint8_t> wrong = packet(kMulticastQpn, unicast.data());
    CHECK(split_mcast_trailer(wrong.data(), wrong.size(), &mgid, &inner) ==
          TrailerResult::BadGroup);
    // Shorter than BTH + ICRC + trailer.
    std::vector<uint8_t> p = packet(kMulticastQpn);
    for (size_t len = 12; len < 12 + 4 + kMcastTrailerLength; ++len)
        CHECK(split_mcast_trailer(p.data(), len, &mgid, &inner) == TrailerResult::Truncated);
    CHECK(mgid == nullptr);
    CHECK(std::string(describe(TrailerResult::BadGroup)).find("trailer") != std::string::npos);
}

TEST_CASE("multicast trailer: random bytes never read out of bounds", "[wire][mcast]") {
    std::mt19937 rng(4791);
    for (int i = 0; i < 20000; ++i) {
        size_t len = rng() % 64;
        // An exactly sized heap buffer, so ASan sees any read past it.
        std::vector<uint8_t> buf(len);
        for (auto& b : buf)
            b = static_cast<uint8_t>(rng());
        if (len >= 8 && (rng() & 1)) buf[5] = buf[6] = buf[7] = 0xff;
        if (len >= 16 && (rng() & 1)) buf[len - 16] = 0xff;
        const uint8_t* mgid = nullptr;
        size_t inner = 0;
        TrailerResult r = split_mcast_trailer(buf.data(), len, &mgid, &inner);
        if (r == TrailerResult::Ok) {
            CHECK(inner + kMcastTrailerLength == len);
            CHECK(is_multicast_gid(mgid));
        }
    }
}
