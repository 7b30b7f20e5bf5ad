// The one IPv4 header builder: its fields, and a checksum a receiver accepts.
#include "emu/wire/ipv4_header.h"

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <array>

namespace wire = emu::wire;

TEST_CASE("ipv4 header: fields in network order and a checksum that sums to zero", "[wire]") {
    wire::Ipv4Header h;
    h.tos = 0x68;
    h.id = 0xd21c;
    h.src_addr = inet_addr("192.168.122.1");
    h.dst_addr = inet_addr("192.168.122.77");
    h.payload_length = 8 + 1052;
    std::array<uint8_t, wire::kIpv4HeaderLength> ip{};
    wire::put_ipv4_header(ip.data(), h);
    CHECK(ip[0] == 0x45);
    CHECK(ip[1] == 0x68);
    CHECK((ip[2] << 8 | ip[3]) == 20 + 8 + 1052);
    CHECK((ip[4] << 8 | ip[5]) == 0xd21c);
    CHECK((ip[6] << 8 | ip[7]) == 0x4000); // DF
    CHECK(ip[8] == 64);
    CHECK(ip[9] == 17);
    CHECK(std::array<uint8_t, 4>{ip[12], ip[13], ip[14], ip[15]} ==
          std::array<uint8_t, 4>{192, 168, 122, 1});
    CHECK(std::array<uint8_t, 4>{ip[16], ip[17], ip[18], ip[19]} ==
          std::array<uint8_t, 4>{192, 168, 122, 77});
    // RFC 1071: a receiver's sum over the header, checksum included, folds to all ones.
    CHECK(wire::internet_checksum(wire::internet_sum(0, ip.data(), ip.size())) == 0);
}

TEST_CASE("ipv4 header: the Internet checksum of RFC 1071's example", "[wire]") {
    // RFC 1071 section 3: the words 0001 f203 f4f5 f6f7 sum to ddf2 (folded).
    const uint8_t words[] = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
    CHECK(wire::internet_checksum(wire::internet_sum(0, words, sizeof words)) == 0x220d);
    // An odd length pads the last byte with a zero.
    const uint8_t odd[] = {0x12, 0x34, 0x56};
    CHECK(wire::internet_checksum(wire::internet_sum(0, odd, sizeof odd)) ==
          static_cast<uint16_t>(~(0x1234 + 0x5600)));
}
