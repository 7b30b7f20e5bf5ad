#include "emu/wire/packet.h"

#include <catch2/catch.hpp>

#include <arpa/inet.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

using namespace emu::wire;
using Bytes = std::vector<uint8_t>;

namespace {

Bytes encoded(const Headers& h) {
    Bytes out(64, 0xEE);
    size_t n = encode(h, out.data());
    out.resize(n);
    return out;
}

// Headers with every field set to random values in its range.
Headers random_headers(std::mt19937_64& rng, uint8_t op) {
    auto r = [&] { return rng(); };
    Headers h;
    h.opcode = op;
    h.se = r() & 1;
    h.migreq = r() & 1;
    h.pad_count = 0;
    h.tver = 0;
    h.pkey = static_cast<uint16_t>(r());
    h.fecn = r() & 1;
    h.becn = r() & 1;
    h.dest_qpn = r() & kQpnMask;
    h.ack_req = r() & 1;
    h.psn = r() & 0xFFFFFF;
    h.reth = {r(), static_cast<uint32_t>(r()), static_cast<uint32_t>(r())};
    h.aeth = {static_cast<uint8_t>(r()), static_cast<uint32_t>(r() & 0xFFFFFF)};
    h.atomic_eth = {r(), static_cast<uint32_t>(r()), r(), r()};
    h.atomic_ack = r();
    h.imm = static_cast<uint32_t>(r());
    h.ieth_rkey = static_cast<uint32_t>(r());
    h.deth = {static_cast<uint32_t>(r()), static_cast<uint32_t>(r() & 0xFFFFFF)};
    h.xrc_srqn = static_cast<uint32_t>(r() & 0xFFFFFF);
    return h;
}

// Compares the fields that packets of `op` carry.
void check_same(const Headers& a, const Headers& b) {
    const uint32_t m = opcode_mask(a.opcode);
    CHECK(a.opcode == b.opcode);
    CHECK(a.se == b.se);
    CHECK(a.migreq == b.migreq);
    CHECK(a.pad_count == b.pad_count);
    CHECK(a.tver == b.tver);
    CHECK(a.pkey == b.pkey);
    CHECK(a.fecn == b.fecn);
    CHECK(a.becn == b.becn);
    CHECK(a.dest_qpn == b.dest_qpn);
    CHECK(a.ack_req == b.ack_req);
    CHECK(a.psn == b.psn);
    if (m & kHasReth) {
        CHECK(a.reth.va == b.reth.va);
        CHECK(a.reth.rkey == b.reth.rkey);
        CHECK(a.reth.length == b.reth.length);
    }
    if (m & kHasAeth) {
        CHECK(a.aeth.syndrome == b.aeth.syndrome);
        CHECK(a.aeth.msn == b.aeth.msn);
    }
    if (m & kHasAtomicEth) {
        CHECK(a.atomic_eth.va == b.atomic_eth.va);
        CHECK(a.atomic_eth.rkey == b.atomic_eth.rkey);
        CHECK(a.atomic_eth.swap_add == b.atomic_eth.swap_add);
        CHECK(a.atomic_eth.compare == b.atomic_eth.compare);
    }
    if (m & kHasAtomicAckEth) CHECK(a.atomic_ack == b.atomic_ack);
    if (m & kHasImmDt) CHECK(a.imm == b.imm);
    if (m & kHasIeth) CHECK(a.ieth_rkey == b.ieth_rkey);
    if (m & kHasDeth) {
        CHECK(a.deth.qkey == b.deth.qkey);
        CHECK(a.deth.src_qpn == b.deth.src_qpn);
    }
    if (m & kHasXrceth) CHECK(a.xrc_srqn == b.xrc_srqn);
}

std::vector<uint8_t> valid_opcodes() {
    std::vector<uint8_t> ops;
    for (int i = 0; i < 256; ++i)
        if (opcode_valid(static_cast<uint8_t>(i))) ops.push_back(static_cast<uint8_t>(i));
    return ops;
}

// parse() on an exact-size heap copy, so a sanitizer build catches any read past `len`.
ParseResult parse_copy(const uint8_t* data, size_t len, Headers& h, const uint8_t** pay = nullptr,
                       size_t* pay_len = nullptr, std::unique_ptr<uint8_t[]>* keep = nullptr) {
    std::unique_ptr<uint8_t[]> buf(new uint8_t[len ? len : 1]);
    if (len) std::memcpy(buf.get(), data, len);
    ParseResult r = parse(buf.get(), len, h, pay, pay_len);
    if (keep) *keep = std::move(buf);
    return r;
}

} // namespace

TEST_CASE("packet: BTH layout, byte by byte", "[wire][packet]") {
    Headers h;
    h.opcode = 0x04; // RC_SEND_ONLY
    h.se = true;
    h.migreq = true;
    h.pad_count = 3;
    h.pkey = 0x1234;
    h.fecn = true;
    h.becn = false;
    h.dest_qpn = 0xABCDEF;
    h.ack_req = true;
    h.psn = 0x123456;
    const Bytes expect = {0x04, 0xF0, 0x12, 0x34, 0x80, 0xAB, 0xCD, 0xEF, 0x80, 0x12, 0x34, 0x56};
    CHECK(encoded(h) == expect);

    h.se = false;
    h.migreq = false;
    h.pad_count = 1;
    h.pkey = kDefaultPkey;
    h.fecn = false;
    h.becn = true;
    h.ack_req = false;
    h.dest_qpn = 0x1000011; // masked to 24 bits
    h.psn = 0xFFFFFFFF;     // masked to 24 bits
    const Bytes expect2 = {0x04, 0x10, 0xFF, 0xFF, 0x40, 0x00, 0x00, 0x11, 0x00, 0xFF, 0xFF, 0xFF};
    CHECK(encoded(h) == expect2);
}

TEST_CASE("packet: RETH layout (RC_RDMA_WRITE_ONLY)", "[wire][packet]") {
    Headers h;
    h.opcode = 0x0A;
    h.dest_qpn = 0x11;
    h.psn = 7;
    h.reth = {0x0102030405060708ull, 0xA1B2C3D4, 0x00010000};
    const Bytes expect = {0x0A, 0x00, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x11, 0x00, 0x00,
                          0x00, 0x07, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // VA
                          0xA1, 0xB2, 0xC3, 0xD4,                                     // R_Key
                          0x00, 0x01, 0x00, 0x00};                                    // DMA length
    CHECK(encoded(h) == expect);
}

TEST_CASE("packet: RETH + ImmDt layout (RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE)", "[wire][packet]") {
    Headers h;
    h.opcode = 0x0B;
    h.reth = {0xFFFF800000001000ull, 0x42, 5};
    h.imm = htonl(0xDEADBEEF);
    Bytes out = encoded(h);
    REQUIRE(out.size() == 32);
    const Bytes reth = {0xFF, 0xFF, 0x80, 0x00, 0x00, 0x00, 0x10, 0x00,
                        0x00, 0x00, 0x00, 0x42, 0x00, 0x00, 0x00, 0x05};
    CHECK(Bytes(out.begin() + 12, out.begin() + 28) == reth);
    CHECK(Bytes(out.begin() + 28, out.end()) == Bytes{0xDE, 0xAD, 0xBE, 0xEF});
}

TEST_CASE("packet: AETH layout (RC_ACKNOWLEDGE)", "[wire][packet]") {
    Headers h;
    h.opcode = 0x11;
    h.dest_qpn = 0x000102;
    h.psn = 0xFFFFFE;
    h.aeth = {aeth_nak(NakCode::PsnSequenceError), 0x0A0B0C};
    const Bytes expect = {0x11, 0x00, 0xFF, 0xFF, 0x00, 0x00, 0x01, 0x02,
                          0x00, 0xFF, 0xFF, 0xFE, 0x60, 0x0A, 0x0B, 0x0C};
    CHECK(encoded(h) == expect);
}

TEST_CASE("packet: AtomicETH and AtomicAckETH layouts", "[wire][packet]") {
    Headers h;
    h.opcode = 0x13; // RC_COMPARE_SWAP
    h.atomic_eth = {0x1122334455667788ull, 0x99AABBCC, 0x0102030405060708ull,
                    0xF0E0D0C0B0A09080ull};
    Bytes out = encoded(h);
    REQUIRE(out.size() == 40);
    const Bytes eth = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xAA,
                       0xBB, 0xCC, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
                       0xF0, 0xE0, 0xD0, 0xC0, 0xB0, 0xA0, 0x90, 0x80};
    CHECK(Bytes(out.begin() + 12, out.end()) == eth);

    h.opcode = 0x12; // RC_ATOMIC_ACKNOWLEDGE
    h.aeth = {aeth_ack(), 0x000005};
    h.atomic_ack = 0x8000000000000001ull;
    out = encoded(h);
    REQUIRE(out.size() == 24);
    const Bytes tail = {0x1F, 0x00, 0x00, 0x05, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01};
    CHECK(Bytes(out.begin() + 12, out.end()) == tail);
}

TEST_CASE("packet: DETH + ImmDt (UD) and IETH layouts", "[wire][packet]") {
    Headers h;
    h.opcode = 0x65; // UD_SEND_ONLY_WITH_IMMEDIATE
    h.dest_qpn = 1;
    h.deth = {0x80010000, 0xFEDCBA};
    const uint8_t imm_wire[4] = {0x01, 0x02, 0x03, 0x04};
    std::memcpy(&h.imm, imm_wire, 4);
    Bytes out = encoded(h);
    REQUIRE(out.size() == 24);
    const Bytes tail = {0x80, 0x01, 0x00, 0x00, 0x00, 0xFE, 0xDC, 0xBA, 0x01, 0x02, 0x03, 0x04};
    CHECK(Bytes(out.begin() + 12, out.end()) == tail);

    h.opcode = 0x17; // RC_SEND_ONLY_WITH_INVALIDATE
    h.ieth_rkey = 0x0BADF00D;
    out = encoded(h);
    REQUIRE(out.size() == 16);
    CHECK(Bytes(out.begin() + 12, out.end()) == Bytes{0x0B, 0xAD, 0xF0, 0x0D});
}

TEST_CASE("packet: XRCETH layout (XRC requests) and its absence on XRC responses",
          "[wire][packet][xrc]") {
    Headers h;
    h.opcode = 0xA4; // XRC_SEND_ONLY
    h.dest_qpn = 0x000123;
    h.psn = 9;
    h.xrc_srqn = 0xABCDEF;
    const Bytes expect = {0xA4, 0x00, 0xFF, 0xFF, 0x00, 0x00, 0x01, 0x23, 0x00,
                          0x00, 0x00, 0x09, 0x00, 0xAB, 0xCD, 0xEF}; // reserved byte, SRQ number
    CHECK(encoded(h) == expect);

    h.xrc_srqn = 0xFF123456; // 24 bits on the wire
    Bytes masked = encoded(h);
    CHECK(Bytes(masked.begin() + 12, masked.end()) == Bytes{0x00, 0x12, 0x34, 0x56});

    // XRCETH before RETH and ImmDt (XRC_RDMA_WRITE_ONLY_WITH_IMMEDIATE)
    h.opcode = 0xAB;
    h.xrc_srqn = 0x000042;
    h.reth = {0x1000, 0x77, 8};
    h.imm = htonl(0x01020304);
    Bytes out = encoded(h);
    REQUIRE(out.size() == 36);
    CHECK(Bytes(out.begin() + 12, out.begin() + 16) == Bytes{0x00, 0x00, 0x00, 0x42});
    CHECK(Bytes(out.begin() + 16, out.begin() + 24) == Bytes{0, 0, 0, 0, 0, 0, 0x10, 0});
    CHECK(Bytes(out.begin() + 32, out.end()) == Bytes{0x01, 0x02, 0x03, 0x04});

    // ... and before AtomicETH (XRC_FETCH_ADD)
    h.opcode = 0xB4;
    h.atomic_eth = {0x2000, 0x99, 5, 0};
    out = encoded(h);
    REQUIRE(out.size() == 44);
    CHECK(Bytes(out.begin() + 12, out.begin() + 16) == Bytes{0x00, 0x00, 0x00, 0x42});
    CHECK(out[16 + 7] == 0x00);
    CHECK(out[16 + 6] == 0x20);

    // Responses carry none: XRC_ACKNOWLEDGE is BTH + AETH
    h.opcode = 0xB1;
    h.aeth = {aeth_nak(NakCode::InvalidRequest), 3};
    out = encoded(h);
    REQUIRE(out.size() == 16);
    CHECK(Bytes(out.begin() + 12, out.end()) == Bytes{0x61, 0x00, 0x00, 0x03});
}

TEST_CASE("packet: XRCETH decode; its reserved byte is ignored", "[wire][packet][xrc]") {
    Headers h;
    h.opcode = 0xA0; // XRC_SEND_FIRST
    h.xrc_srqn = 0x00BEEF;
    Bytes payload(256, 0x5A);
    Bytes pkt(packet_length(h.opcode, payload.size()));
    REQUIRE(build(h, payload.data(), payload.size(), pkt.data()) == pkt.size());
    pkt[12] = 0xFF; // reserved
    Headers back;
    const uint8_t* pay = nullptr;
    size_t pay_len = 0;
    REQUIRE(parse(pkt.data(), pkt.size(), back, &pay, &pay_len) == ParseResult::Ok);
    CHECK(back.xrc_srqn == 0x00BEEF);
    CHECK(pay_len == 256);
    CHECK(pay == pkt.data() + 16);
    // A packet cut inside the XRCETH is too short.
    CHECK(parse(pkt.data(), 12 + 4, back, nullptr, nullptr) == ParseResult::TooShort);
}

TEST_CASE("packet: imm stays in wire byte order", "[wire][packet]") {
    // 4 bytes 12 34 56 78 on the wire: ibv_wc.imm_data must be the same bytes in memory,
    // i.e. ntohl(imm) == 0x12345678, whatever the host's byte order.
    Headers h;
    h.opcode = 0x05; // RC_SEND_ONLY_WITH_IMMEDIATE
    h.imm = htonl(0x12345678);
    Bytes pkt(packet_length(h.opcode, 0));
    REQUIRE(build(h, nullptr, 0, pkt.data()) == pkt.size());
    CHECK(Bytes(pkt.begin() + 12, pkt.begin() + 16) == Bytes{0x12, 0x34, 0x56, 0x78});
    Headers back;
    REQUIRE(parse(pkt.data(), pkt.size(), back, nullptr, nullptr) == ParseResult::Ok);
    CHECK(ntohl(back.imm) == 0x12345678);
    CHECK(std::memcmp(&back.imm, pkt.data() + 12, 4) == 0);
}

TEST_CASE("packet: header_length and packet_length", "[wire][packet]") {
    CHECK(header_length(0x04) == 12);
    CHECK(header_length(0x0A) == 28);
    CHECK(header_length(0x15) == 0);
    CHECK(packet_length(0x04, 0) == 16);
    CHECK(packet_length(0x04, 1) == 20);
    CHECK(packet_length(0x04, 4) == 20);
    CHECK(packet_length(0x04, 5) == 24);
    CHECK(packet_length(0x0A, 4096) == 28 + 4096 + 4);
    CHECK(packet_length(0x15, 10) == 0);
    for (size_t n = 0; n < 16; ++n)
        CHECK((n + pad_for(n)) % 4 == 0);
    CHECK(pad_for(1) == 3);
    CHECK(pad_for(2) == 2);
    CHECK(pad_for(3) == 1);
    CHECK(pad_for(4) == 0);
}

TEST_CASE("packet: build lays out headers, payload, pad and an ICRC slot", "[wire][packet]") {
    Headers h;
    h.opcode = 0x04;
    h.pad_count = 0; // build computes it
    h.psn = 1;
    const uint8_t payload[5] = {1, 2, 3, 4, 5};
    Bytes pkt(packet_length(h.opcode, 5), 0xAA);
    REQUIRE(pkt.size() == 24);
    REQUIRE(build(h, payload, 5, pkt.data()) == 24);
    CHECK(((pkt[1] >> 4) & 3) == 3);
    CHECK(Bytes(pkt.begin() + 12, pkt.begin() + 17) == Bytes{1, 2, 3, 4, 5});
    CHECK(Bytes(pkt.begin() + 17, pkt.end()) == Bytes(7, 0)); // 3 pad + 4 ICRC
    Headers back;
    const uint8_t* pay = nullptr;
    size_t pay_len = 0;
    REQUIRE(parse(pkt.data(), pkt.size(), back, &pay, &pay_len) == ParseResult::Ok);
    CHECK(pay == pkt.data() + 12);
    CHECK(pay_len == 5);
    CHECK(back.pad_count == 3);

    // h.pad_count is ignored by build
    h.pad_count = 2;
    REQUIRE(build(h, payload, 4, pkt.data()) == 20);
    CHECK(((pkt[1] >> 4) & 3) == 0);

    // invalid opcode, or payload on an opcode without one: nothing written
    Bytes untouched(64, 0xAA);
    h.opcode = 0x15;
    CHECK(build(h, payload, 4, untouched.data()) == 0);
    h.opcode = 0x11; // ACK
    CHECK(build(h, payload, 4, untouched.data()) == 0);
    CHECK(untouched == Bytes(64, 0xAA));
    CHECK(build(h, nullptr, 0, untouched.data()) == 20);
}

TEST_CASE("packet: build_in_place keeps the caller's payload", "[wire][packet]") {
    Headers h;
    h.opcode = 0x08; // RC_RDMA_WRITE_LAST
    Bytes pkt(packet_length(h.opcode, 6), 0xAA);
    for (size_t i = 0; i < 6; ++i)
        pkt[12 + i] = static_cast<uint8_t>(0x30 + i);
    REQUIRE(build_in_place(h, 6, pkt.data()) == pkt.size());
    CHECK(Bytes(pkt.begin() + 12, pkt.begin() + 18) == Bytes{0x30, 0x31, 0x32, 0x33, 0x34, 0x35});
    CHECK(Bytes(pkt.begin() + 18, pkt.end()) == Bytes(6, 0));
    Headers back;
    size_t pay_len = 0;
    REQUIRE(parse(pkt.data(), pkt.size(), back, nullptr, &pay_len) == ParseResult::Ok);
    CHECK(pay_len == 6);
}

TEST_CASE("packet: round trip of every valid opcode with random fields", "[wire][packet]") {
    std::mt19937_64 rng(0x5EED);
    for (uint8_t op : valid_opcodes()) {
        INFO(opcode_name(op));
        for (int iter = 0; iter < 50; ++iter) {
            Headers h = random_headers(rng, op);
            size_t len = has(op, kHasPayload) ? rng() % 300 : 0;
            if (iter == 0) len = 0;
            Bytes payload(len);
            for (auto& b : payload)
                b = static_cast<uint8_t>(rng());
            Bytes pkt(packet_length(op, len));
            REQUIRE(build(h, payload.data(), len, pkt.data()) == pkt.size());
            h.pad_count = pad_for(len);

            Headers back;
            back.opcode = 0xFF;
            const uint8_t* pay = nullptr;
            size_t pay_len = 12345;
            std::unique_ptr<uint8_t[]> keep;
            REQUIRE(parse_copy(pkt.data(), pkt.size(), back, &pay, &pay_len, &keep) ==
                    ParseResult::Ok);
            check_same(h, back);
            REQUIRE(pay_len == len);
            CHECK(pay == keep.get() + header_length(op));
            CHECK(Bytes(pay, pay + pay_len) == payload);

            // encode() writes the same header bytes, and re-encoding the parse is identical
            Bytes hdr(header_length(op));
            REQUIRE(encode(h, hdr.data()) == hdr.size());
            CHECK(Bytes(pkt.begin(), pkt.begin() + hdr.size()) == hdr);
            Bytes again(header_length(op));
            encode(back, again.data());
            CHECK(again == hdr);
        }
    }
}

TEST_CASE("packet: reserved bits are ignored on receive", "[wire][packet]") {
    Headers h;
    h.opcode = 0x64; // UD_SEND_ONLY
    h.deth = {0x11111111, 0x222222};
    Bytes pkt(packet_length(h.opcode, 8));
    const uint8_t payload[8] = {};
    REQUIRE(build(h, payload, 8, pkt.data()) == pkt.size());
    pkt[4] |= 0x3F; // BTH resv6
    pkt[8] |= 0x7F; // BTH resv7
    pkt[16] = 0xFF; // DETH reserved byte
    Headers back;
    REQUIRE(parse(pkt.data(), pkt.size(), back, nullptr, nullptr) == ParseResult::Ok);
    CHECK(!back.fecn);
    CHECK(!back.becn);
    CHECK(!back.ack_req);
    CHECK(back.deth.src_qpn == 0x222222);
    CHECK(back.deth.qkey == 0x11111111);
}

TEST_CASE("packet: parse rejects truncation at every length", "[wire][packet]") {
    std::mt19937_64 rng(7);
    for (uint8_t op : valid_opcodes()) {
        INFO(opcode_name(op));
        const size_t payload_len = has(op, kHasPayload) ? 7 : 0;
        Headers h = random_headers(rng, op);
        Bytes payload(payload_len, 0x5A);
        Bytes pkt(packet_length(op, payload_len));
        REQUIRE(build(h, payload.data(), payload_len, pkt.data()) == pkt.size());
        const size_t hdr = header_length(op);
        const size_t pad = pad_for(payload_len);
        for (size_t len = 0; len < pkt.size(); ++len) {
            INFO("len " << len);
            Headers back;
            size_t pay_len = 999;
            ParseResult r = parse_copy(pkt.data(), len, back, nullptr, &pay_len);
            if (len < hdr + kIcrcLength) {
                CHECK(r == ParseResult::TooShort);
            } else if (len % 4 != 0) {
                CHECK(r == ParseResult::BadLength);
            } else if (len - hdr - kIcrcLength < pad) {
                CHECK(r == ParseResult::BadPad);
            } else {
                // Without a length field a packet cut at a 4-byte boundary looks like a
                // shorter one; the ICRC catches that.
                REQUIRE(r == ParseResult::Ok);
                CHECK(pay_len == len - hdr - kIcrcLength - pad);
            }
            if (r != ParseResult::Ok) CHECK(pay_len == 999);
        }
    }
}

TEST_CASE("packet: parse rejects bad opcode, version, pad and payload", "[wire][packet]") {
    Headers h;
    h.opcode = 0x04;
    const uint8_t payload[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    Bytes good(packet_length(0x04, 8));
    REQUIRE(build(h, payload, 8, good.data()) == good.size());
    Headers back;
    REQUIRE(parse(good.data(), good.size(), back, nullptr, nullptr) == ParseResult::Ok);

    SECTION("every invalid opcode") {
        for (int op = 0; op < 256; ++op) {
            if (opcode_valid(static_cast<uint8_t>(op))) continue;
            Bytes bad = good;
            bad[0] = static_cast<uint8_t>(op);
            CHECK(parse_copy(bad.data(), bad.size(), back) == ParseResult::BadOpcode);
        }
    }
    SECTION("every non-zero TVer") {
        for (uint8_t v = 1; v < 16; ++v) {
            Bytes bad = good;
            bad[1] = static_cast<uint8_t>((bad[1] & 0xF0) | v);
            CHECK(parse_copy(bad.data(), bad.size(), back) == ParseResult::BadVersion);
        }
    }
    SECTION("pad count on an empty payload") {
        Bytes empty(packet_length(0x04, 0));
        REQUIRE(build(h, nullptr, 0, empty.data()) == 16);
        for (uint8_t pad = 1; pad < 4; ++pad) {
            empty[1] = static_cast<uint8_t>((empty[1] & 0xCF) | (pad << 4));
            CHECK(parse_copy(empty.data(), empty.size(), back) == ParseResult::BadPad);
        }
    }
    SECTION("pad count on opcodes without payload") {
        for (uint8_t op : {uint8_t{0x0C}, uint8_t{0x11}, uint8_t{0x12}, uint8_t{0x13}}) {
            h.opcode = op;
            Bytes pkt(packet_length(op, 0));
            REQUIRE(build(h, nullptr, 0, pkt.data()) == pkt.size());
            REQUIRE(parse_copy(pkt.data(), pkt.size(), back) == ParseResult::Ok);
            pkt[1] |= 0x20;
            CHECK(parse_copy(pkt.data(), pkt.size(), back) == ParseResult::BadPad);
        }
    }
    SECTION("payload on opcodes without payload") {
        h.opcode = 0x11; // ACK
        Bytes ack(packet_length(0x11, 0) + 4);
        REQUIRE(build(h, nullptr, 0, ack.data()) == ack.size() - 4);
        CHECK(parse_copy(ack.data(), ack.size(), back) == ParseResult::UnexpectedPayload);
    }
    SECTION("lengths that are not a multiple of 4") {
        for (size_t extra = 1; extra < 4; ++extra) {
            Bytes bad = good;
            bad.resize(good.size() + extra);
            CHECK(parse_copy(bad.data(), bad.size(), back) == ParseResult::BadLength);
        }
    }
    SECTION("null data with length 0") {
        CHECK(parse(nullptr, 0, back, nullptr, nullptr) == ParseResult::TooShort);
    }
}

TEST_CASE("packet: describe() names every result", "[wire][packet]") {
    for (ParseResult r :
         {ParseResult::Ok, ParseResult::TooShort, ParseResult::BadOpcode, ParseResult::BadVersion,
          ParseResult::BadPad, ParseResult::BadLength, ParseResult::UnexpectedPayload}) {
        CHECK(std::strlen(describe(r)) > 0);
        CHECK(std::string(describe(r)) != "unknown parse result");
    }
    CHECK(std::string(describe(ParseResult::BadVersion)) == "bad transport header version");
}

TEST_CASE("packet: parse is safe on random bytes", "[wire][packet]") {
    std::mt19937_64 rng(0xF022);
    const auto ops = valid_opcodes();
    int ok = 0;
    for (int iter = 0; iter < 20000; ++iter) {
        const size_t len = rng() % 160;
        Bytes buf(len);
        for (auto& b : buf)
            b = static_cast<uint8_t>(rng());
        if (len > 1 && (iter & 1)) { // half with a plausible opcode and TVer 0
            buf[0] = ops[rng() % ops.size()];
            buf[1] &= 0xF0;
        }
        Headers h;
        const uint8_t* pay = nullptr;
        size_t pay_len = 0;
        std::unique_ptr<uint8_t[]> keep;
        ParseResult r = parse_copy(buf.data(), len, h, &pay, &pay_len, &keep);
        if (r != ParseResult::Ok) continue;
        ++ok;
        const size_t hdr = header_length(h.opcode);
        REQUIRE(hdr != 0);
        REQUIRE(pay == keep.get() + hdr);
        REQUIRE(hdr + pay_len + h.pad_count + kIcrcLength == len);
        REQUIRE(len % 4 == 0);
        // what parses re-encodes to the same header bytes (reserved bits aside)
        Bytes again(hdr);
        REQUIRE(encode(h, again.data()) == hdr);
        again[4] = static_cast<uint8_t>(again[4] | (buf[4] & 0x3F));
        again[8] = static_cast<uint8_t>(again[8] | (buf[8] & 0x7F));
        if (has(h.opcode, kHasDeth)) again[16] = buf[16];
        if (has(h.opcode, kHasXrceth)) again[12] = buf[12];
        CHECK(Bytes(buf.begin(), buf.begin() + hdr) == again);
    }
    CHECK(ok > 500);
}

TEST_CASE("packet: AETH syndromes", "[wire][packet][aeth]") {
    CHECK(aeth_ack(0) == 0x00);
    CHECK(aeth_ack() == 0x1F);
    CHECK(aeth_ack(0x3F) == 0x1F);
    CHECK(aeth_rnr_nak(0) == 0x20);
    CHECK(aeth_rnr_nak(14) == 0x2E);
    CHECK(aeth_rnr_nak(31) == 0x3F);
    CHECK(aeth_nak(NakCode::PsnSequenceError) == 0x60);
    CHECK(aeth_nak(NakCode::InvalidRequest) == 0x61);
    CHECK(aeth_nak(NakCode::RemoteAccessError) == 0x62);
    CHECK(aeth_nak(NakCode::RemoteOperationalError) == 0x63);

    for (int s = 0; s < 256; ++s) {
        INFO("syndrome 0x" << std::hex << s);
        const Syndrome c = classify(static_cast<uint8_t>(s));
        CHECK(c.value == (s & 0x1F));
        SyndromeKind expect;
        if (s < 0x20)
            expect = SyndromeKind::Ack;
        else if (s < 0x40)
            expect = SyndromeKind::RnrNak;
        else if (s >= 0x60 && s <= 0x64)
            expect = SyndromeKind::Nak;
        else
            expect = SyndromeKind::Reserved;
        CHECK(c.kind == expect);
    }
    static_assert(classify(0x62).kind == SyndromeKind::Nak && classify(0x62).value == 2);
    static_assert(classify(aeth_rnr_nak(5)).kind == SyndromeKind::RnrNak);
}

TEST_CASE("packet: every NAK code has its one name; the reserved codes say so",
          "[wire][packet][aeth]") {
    CHECK(std::string(nak_name(NakCode::PsnSequenceError)) == "PSN sequence error");
    CHECK(std::string(nak_name(NakCode::InvalidRequest)) == "invalid request");
    CHECK(std::string(nak_name(NakCode::RemoteAccessError)) == "remote access error");
    CHECK(std::string(nak_name(NakCode::RemoteOperationalError)) == "remote operational error");
    CHECK(std::string(nak_name(NakCode::InvalidRdRequest)) == "invalid RD request");
    // A NAK syndrome is named exactly when classify() takes it for one.
    for (int s = 0x60; s < 0x80; ++s) {
        INFO("syndrome 0x" << std::hex << s);
        const Syndrome c = classify(static_cast<uint8_t>(s));
        CHECK((c.kind == SyndromeKind::Nak) == (std::string(nak_name(c.value)) != "reserved"));
    }
    CHECK(std::string(nak_name(uint8_t{255})) == "reserved");
    static_assert(std::string_view(nak_name(NakCode::InvalidRequest)) == "invalid request");
}

TEST_CASE("packet: RNR timer table of IBA 9.7.5.2.8", "[wire][packet][aeth]") {
    CHECK(rnr_timer_us(0) == 655360);
    CHECK(rnr_timer_us(1) == 10);
    CHECK(rnr_timer_us(2) == 20);
    CHECK(rnr_timer_us(3) == 30);
    CHECK(rnr_timer_us(4) == 40);
    CHECK(rnr_timer_us(5) == 60);
    CHECK(rnr_timer_us(12) == 640);
    CHECK(rnr_timer_us(14) == 1280);
    CHECK(rnr_timer_us(18) == 5120);
    CHECK(rnr_timer_us(20) == 10240);
    CHECK(rnr_timer_us(25) == 61440);
    CHECK(rnr_timer_us(31) == 491520);
    // from 0.06 ms on, each value doubles the one two codes before; 655.36 ms = 2 x 327.68 ms
    for (uint8_t code = 5; code < 32; ++code)
        CHECK(rnr_timer_us(code) == 2 * rnr_timer_us(code - 2));
    CHECK(rnr_timer_us(0) == 2 * rnr_timer_us(30));
    for (uint8_t code = 2; code < 32; ++code)
        CHECK(rnr_timer_us(code) > rnr_timer_us(code - 1));
}
