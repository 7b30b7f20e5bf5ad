#include "emu/ipc/message_check.h"

#include "emu/ipc/protocol.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <set>
#include <string>
#include <vector>

using namespace emu::ipc;

namespace {

// A request as a client would send it: header, then `body` bytes of pattern.
std::vector<unsigned char> request(uint16_t op, size_t body, uint32_t length_field) {
    std::vector<unsigned char> msg(sizeof(Header) + body, 0xA5);
    Header h{};
    h.magic = kMagic;
    h.version = kVersion;
    h.op = op;
    h.length = length_field;
    h.seq = 42;
    std::memcpy(msg.data(), &h, sizeof h);
    return msg;
}

std::vector<unsigned char> request(Op op, size_t body) {
    return request(static_cast<uint16_t>(op), body, static_cast<uint32_t>(sizeof(Header) + body));
}

RequestCheck check(const std::vector<unsigned char>& msg) {
    return check_request(msg.data(), msg.size());
}

void patch_header(std::vector<unsigned char>& msg, const Header& h) {
    std::memcpy(msg.data(), &h, sizeof h);
}

Header header_of(const std::vector<unsigned char>& msg) {
    Header h;
    std::memcpy(&h, msg.data(), sizeof h);
    return h;
}

} // namespace

TEST_CASE("message check: well-formed requests of several ops pass", "[ipc]") {
    // Body sizes spelled out from the request structs, not taken from request_length().
    CHECK(check(request(Op::Hello, sizeof(HelloReq))) == RequestCheck::Ok);
    CHECK(check(request(Op::QueryDevice, 0)) == RequestCheck::Ok); // Empty: header only.
    CHECK(check(request(Op::AllocPd, 0)) == RequestCheck::Ok);
    CHECK(check(request(Op::QueryPort, sizeof(QueryPortReq))) == RequestCheck::Ok);
    CHECK(check(request(Op::RegMr, sizeof(RegMrReq))) == RequestCheck::Ok);
    CHECK(check(request(Op::DeregMr, sizeof(HandleReq))) == RequestCheck::Ok);
    CHECK(check(request(Op::CreateQp, sizeof(CreateQpReq))) == RequestCheck::Ok);
    CHECK(check(request(Op::ModifyQp, sizeof(ModifyQpReq))) == RequestCheck::Ok);
    CHECK(check(request(Op::CreateAh, sizeof(CreateAhReq))) == RequestCheck::Ok);
    CHECK(check(request(Op::Status, 0)) == RequestCheck::Ok); // The last op.
}

TEST_CASE("message check: every op's request fits kMaxRequest", "[ipc]") {
    for (uint16_t op = 1; op < static_cast<uint16_t>(Op::Count); ++op) {
        INFO("op " << op_name(static_cast<Op>(op)));
        size_t len = request_length(op);
        CHECK(len >= sizeof(Header));
        CHECK(len <= kMaxRequest);
        auto msg = request(op, len - sizeof(Header), static_cast<uint32_t>(len));
        CHECK(check(msg) == RequestCheck::Ok);
    }
}

TEST_CASE("message check: the header is read from any alignment", "[ipc]") {
    auto msg = request(Op::RegMr, sizeof(RegMrReq));
    std::vector<unsigned char> shifted(msg.size() + 1);
    std::memcpy(shifted.data() + 1, msg.data(), msg.size());
    CHECK(check_request(shifted.data() + 1, msg.size()) == RequestCheck::Ok);
}

TEST_CASE("message check: shorter than a header", "[ipc]") {
    auto msg = request(Op::QueryDevice, 0);
    CHECK(check_request(msg.data(), 0) == RequestCheck::TooShort);
    CHECK(check_request(msg.data(), 1) == RequestCheck::TooShort);
    CHECK(check_request(msg.data(), sizeof(Header) - 1) == RequestCheck::TooShort);
    CHECK(check_request(msg.data(), sizeof(Header)) == RequestCheck::Ok);
    // Too short wins over everything inside the (partial) header.
    std::vector<unsigned char> junk(sizeof(Header) - 1, 0);
    CHECK(check(junk) == RequestCheck::TooShort);
}

TEST_CASE("message check: bad magic", "[ipc]") {
    auto msg = request(Op::RegMr, sizeof(RegMrReq));
    Header h = header_of(msg);
    for (uint32_t magic : {0u, 0x524d4555u /* byte-swapped */, kMagic ^ 1u, 0xFFFFFFFFu}) {
        INFO("magic 0x" << std::hex << magic);
        h.magic = magic;
        patch_header(msg, h);
        CHECK(check(msg) == RequestCheck::BadMagic);
    }
    // Magic is checked before version and op.
    h.magic = 0;
    h.version = kVersion + 1;
    h.op = 0;
    patch_header(msg, h);
    CHECK(check(msg) == RequestCheck::BadMagic);
}

TEST_CASE("message check: bad version", "[ipc]") {
    auto msg = request(Op::Hello, sizeof(HelloReq));
    Header h = header_of(msg);
    for (uint16_t version : {uint16_t{0}, uint16_t(kVersion + 1), uint16_t{0xFFFF}}) {
        INFO("version " << version);
        h.version = version;
        patch_header(msg, h);
        CHECK(check(msg) == RequestCheck::BadVersion);
    }
    // Version is checked before the op.
    h.op = 0;
    patch_header(msg, h);
    CHECK(check(msg) == RequestCheck::BadVersion);
}

TEST_CASE("message check: unknown op", "[ipc]") {
    for (uint16_t op : {uint16_t{0}, static_cast<uint16_t>(Op::Count), uint16_t{0xFFFF}}) {
        INFO("op " << op);
        auto header_only = request(op, 0, sizeof(Header));
        CHECK(check(header_only) == RequestCheck::UnknownOp);
        // Whatever the length says.
        auto with_body = request(op, 64, sizeof(Header) + 64);
        CHECK(check(with_body) == RequestCheck::UnknownOp);
    }
}

TEST_CASE("message check: datagram length differs from the op's length", "[ipc]") {
    const size_t body = sizeof(RegMrReq);
    SECTION("longer, header.length agreeing with the datagram") {
        auto msg = request(Op::RegMr, body + 1);
        CHECK(check(msg) == RequestCheck::BadLength);
        msg = request(Op::QueryDevice, 8); // Empty body with trailing bytes.
        CHECK(check(msg) == RequestCheck::BadLength);
    }
    SECTION("shorter, header.length agreeing with the datagram") {
        auto msg = request(Op::RegMr, body - 1);
        CHECK(check(msg) == RequestCheck::BadLength);
        msg = request(Op::RegMr, 0); // Header only.
        CHECK(check(msg) == RequestCheck::BadLength);
    }
}

TEST_CASE("message check: header.length disagrees with the datagram", "[ipc]") {
    const uint32_t good = static_cast<uint32_t>(sizeof(Header) + sizeof(ModifyQpReq));
    SECTION("datagram is the op's length, header.length is not") {
        for (uint32_t length : {0u, uint32_t(sizeof(Header)), good - 1, good + 1, 0xFFFFFFFFu}) {
            INFO("header.length " << length);
            auto msg = request(static_cast<uint16_t>(Op::ModifyQp), sizeof(ModifyQpReq), length);
            CHECK(check(msg) == RequestCheck::BadLength);
        }
    }
    SECTION("header.length is the op's length, the datagram is not") {
        auto longer = request(static_cast<uint16_t>(Op::ModifyQp), sizeof(ModifyQpReq) + 4, good);
        CHECK(check(longer) == RequestCheck::BadLength);
        auto shorter = request(static_cast<uint16_t>(Op::ModifyQp), sizeof(ModifyQpReq) - 4, good);
        CHECK(check(shorter) == RequestCheck::BadLength);
    }
}

TEST_CASE("message check: every result has its own description", "[ipc]") {
    std::set<std::string> seen;
    for (auto c : {RequestCheck::Ok, RequestCheck::TooShort, RequestCheck::BadMagic,
                   RequestCheck::BadVersion, RequestCheck::UnknownOp, RequestCheck::BadLength}) {
        const char* d = describe(c);
        REQUIRE(d != nullptr);
        CHECK(std::strlen(d) > 0);
        CHECK(seen.insert(d).second);
    }
}
