// A pcapng file read back block by block, written from the pcapng draft
// (draft-ietf-opsawg-pcapng), not from nicsim's writer: the Section Header, Interface
// Description and Enhanced Packet blocks with the options the tests look at.
#pragma once

#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

namespace pcapng_read {

inline uint32_t le32(const uint8_t* p) {
    return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
inline uint16_t le16(const uint8_t* p) {
    return static_cast<uint16_t>(p[0] | p[1] << 8);
}
inline size_t pad4(size_t n) {
    return (n + 3) & ~size_t(3);
}

struct Packet {
    uint64_t ns = 0; // since the epoch, in the interface's resolution
    std::vector<uint8_t> frame;
    std::string comment; // opt_comment, empty when there is none
};
struct File {
    uint32_t linktype = 0, snaplen = 0;
    uint8_t tsresol = 6; // the default when the option is missing
    std::vector<Packet> packets;
};

// Options from `p` to `end`: (code, value) until opt_endofopt.
inline std::vector<std::pair<uint16_t, std::string>> options(const uint8_t* p, const uint8_t* end) {
    std::vector<std::pair<uint16_t, std::string>> out;
    while (p + 4 <= end) {
        uint16_t code = le16(p), len = le16(p + 2);
        if (code == 0) break;
        REQUIRE(p + 4 + len <= end);
        out.emplace_back(code, std::string(reinterpret_cast<const char*>(p + 4), len));
        p += 4 + pad4(len);
    }
    return out;
}

// Every block must be whole: a file cut in the middle of one fails the test.
inline File parse(const std::vector<uint8_t>& b) {
    File f;
    size_t at = 0;
    REQUIRE(b.size() >= 28);
    REQUIRE(le32(&b[0]) == 0x0A0D0D0A);
    REQUIRE(le32(&b[8]) == 0x1A2B3C4D);
    CHECK(le16(&b[12]) == 1);
    CHECK(le16(&b[14]) == 0);
    while (at < b.size()) {
        REQUIRE(at + 12 <= b.size());
        uint32_t type = le32(&b[at]), len = le32(&b[at + 4]);
        REQUIRE(len % 4 == 0);
        REQUIRE(len >= 12);
        REQUIRE(at + len <= b.size());
        REQUIRE(le32(&b[at + len - 4]) == len); // trailing length
        const uint8_t* body = &b[at + 8];
        const uint8_t* end = &b[at + len - 4];
        if (type == 1) { // Interface Description
            f.linktype = le16(body);
            f.snaplen = le32(body + 4);
            for (auto& [code, value] : options(body + 8, end))
                if (code == 9) f.tsresol = static_cast<uint8_t>(value[0]);
        } else if (type == 6) { // Enhanced Packet
            Packet p;
            REQUIRE(len >= 32);
            p.ns = uint64_t(le32(body + 4)) << 32 | le32(body + 8);
            uint32_t captured = le32(body + 12), original = le32(body + 16);
            CHECK(captured == original);
            REQUIRE(body + 20 + pad4(captured) <= end);
            p.frame.assign(body + 20, body + 20 + captured);
            for (auto& [code, value] : options(body + 20 + pad4(captured), end))
                if (code == 1) p.comment = value;
            f.packets.push_back(std::move(p));
        }
        at += len;
    }
    return f;
}

inline std::vector<uint8_t> read_bytes(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline File parse_file(const std::filesystem::path& path) {
    return parse(read_bytes(path));
}

} // namespace pcapng_read
