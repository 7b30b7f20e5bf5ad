// The datagram rsocket headers (emu/wire/rsocket_dgram.h) byte for byte, as rdma-core 44's
// rsocket.c lays out struct ds_header and struct ds_udp_header.
#include "emu/wire/rsocket_dgram.h"

#include <arpa/inet.h>
#include <catch2/catch.hpp>

#include <vector>

namespace wire = emu::wire::rsocket_dgram;

namespace {

sockaddr_in ipv4(const char* ip, uint16_t port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    inet_pton(AF_INET, ip, &a.sin_addr);
    return a;
}

template <typename Addr> sockaddr_storage storage(const Addr& a) {
    sockaddr_storage s{};
    std::memcpy(&s, &a, sizeof a);
    return s;
}

} // namespace

TEST_CASE("rsocket datagram header: IPv4 is version 4, length 8, port and address", "[rsocket]") {
    const sockaddr_in from = ipv4("127.0.0.2", 7174);
    uint8_t b[wire::kDsHeaderIpv6] = {};
    REQUIRE(wire::encode_ds_header(storage(from), b) == 8);
    CHECK(std::vector<uint8_t>(b, b + 8) ==
          std::vector<uint8_t>{4, 8, 0x1c, 0x06, 127, 0, 0, 2}); // 7174 = 0x1c06
    auto h = wire::decode_ds_header(b, 8 + 100);
    REQUIRE(h);
    CHECK(h->length == 8);
    const auto* back = reinterpret_cast<const sockaddr_in*>(&h->from);
    CHECK(back->sin_family == AF_INET);
    CHECK(back->sin_port == from.sin_port);
    CHECK(back->sin_addr.s_addr == from.sin_addr.s_addr);
}

TEST_CASE("rsocket datagram header: IPv6 is version 6, length 24, with the flow info",
          "[rsocket]") {
    sockaddr_in6 from{};
    from.sin6_family = AF_INET6;
    from.sin6_port = htons(9);
    from.sin6_flowinfo = htonl(0x12345);
    inet_pton(AF_INET6, "fe80::1", &from.sin6_addr);
    uint8_t b[wire::kDsHeaderIpv6];
    REQUIRE(wire::encode_ds_header(storage(from), b) == 24);
    CHECK(b[0] == 6);
    CHECK(b[1] == 24);
    CHECK(b[8] == 0xfe);
    CHECK(b[23] == 1);
    auto h = wire::decode_ds_header(b, 24);
    REQUIRE(h);
    CHECK(h->from.sin6_flowinfo == from.sin6_flowinfo);
    CHECK(h->from.sin6_port == from.sin6_port);
}

TEST_CASE("rsocket datagram header: what is not one is refused", "[rsocket]") {
    const uint8_t short_one[4] = {4, 8, 0, 0};
    CHECK(!wire::decode_ds_header(short_one, sizeof short_one));
    const uint8_t wrong_length[8] = {4, 24, 0, 0, 1, 2, 3, 4};
    CHECK(!wire::decode_ds_header(wrong_length, sizeof wrong_length));
    const uint8_t v6_truncated[16] = {6, 24};
    CHECK(!wire::decode_ds_header(v6_truncated, sizeof v6_truncated));
    const uint8_t version5[8] = {5, 8};
    CHECK(!wire::decode_ds_header(version5, sizeof version5));
}

TEST_CASE("rsocket UDP header: tag, version, op, length, QPN and address", "[rsocket]") {
    wire::UdpHeader h;
    h.op = wire::kCtrlOp;
    h.qpn = 0xab123456; // 24 bits travel
    const sockaddr_in a = ipv4("127.0.1.3", 0);
    std::memcpy(&h.addr, &a, sizeof a);
    uint8_t b[wire::kUdpHeaderIpv6];
    REQUIRE(wire::encode_udp_header(h, b) == 16);
    CHECK(std::vector<uint8_t>(b, b + 16) == std::vector<uint8_t>{0x55, 0x55, 0x55, 0x55, 4, 7, 16,
                                                                  0, 0, 0x12, 0x34, 0x56, 127, 0, 1,
                                                                  3});
    size_t len = 0;
    auto back = wire::decode_udp_header(b, 16 + 1000, AF_INET, len);
    REQUIRE(back);
    CHECK(len == 16);
    CHECK(back->op == wire::kCtrlOp);
    CHECK(back->qpn == 0x123456);
    CHECK(reinterpret_cast<const sockaddr_in*>(&back->addr)->sin_addr.s_addr == a.sin_addr.s_addr);
}

TEST_CASE("rsocket UDP header: a wrong tag, family or length is not an rsocket's", "[rsocket]") {
    wire::UdpHeader h;
    const sockaddr_in a = ipv4("127.0.0.1", 0);
    std::memcpy(&h.addr, &a, sizeof a);
    uint8_t b[wire::kUdpHeaderIpv6];
    wire::encode_udp_header(h, b);
    size_t len = 0;
    CHECK(!wire::decode_udp_header(b, 16, AF_INET6, len)); // an IPv4 header from an IPv6 sender
    CHECK(!wire::decode_udp_header(b, 15, AF_INET, len));
    b[6] = 28;
    CHECK(!wire::decode_udp_header(b, 16, AF_INET, len));
    b[6] = 16;
    b[0] = 0x54;
    CHECK(!wire::decode_udp_header(b, 16, AF_INET, len));
}
