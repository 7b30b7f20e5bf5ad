#include "emu/wire/opcodes.h"

#include <catch2/catch.hpp>

#include <bit>
#include <set>
#include <string>

using namespace emu::wire;

namespace {

constexpr uint8_t rc(uint8_t op) {
    return opcode::make(Transport::RC, op);
}
constexpr uint8_t uc(uint8_t op) {
    return opcode::make(Transport::UC, op);
}
constexpr uint8_t ud(uint8_t op) {
    return opcode::make(Transport::UD, op);
}
uint8_t xrc(uint8_t op) {
    return opcode::make(Transport::XRC, op);
}

int bits(uint32_t m) {
    return std::popcount(m);
}

constexpr uint32_t kOpClasses =
    kSend | kWrite | kRead | kReadResponse | kAtomic | kAck | kAtomicAck;
constexpr uint32_t kTransports = kRC | kUC | kUD | kXRC;

std::string mask_text(uint32_t m) {
    char buf[256];
    return mask_to_string(m, buf, sizeof buf);
}

} // namespace

TEST_CASE("opcodes: header lengths of IBA table 38", "[wire][opcodes]") {
    CHECK(opcode_info(rc(opcode::kSendOnly)).length == 12);
    CHECK(opcode_info(rc(opcode::kWriteOnly)).length == 28);
    CHECK(opcode_info(rc(opcode::kWriteOnlyImm)).length == 32);
    CHECK(opcode_info(rc(opcode::kAtomicAcknowledge)).length == 24);
    CHECK(opcode_info(rc(opcode::kCompareSwap)).length == 40);
    CHECK(opcode_info(rc(opcode::kFetchAdd)).length == 40);
    CHECK(opcode_info(opcode::kUdSendOnly).length == 20);
    CHECK(opcode_info(opcode::kUdSendOnlyImm).length == 24);
    CHECK(opcode_info(rc(opcode::kReadRequest)).length == 28);
    CHECK(opcode_info(rc(opcode::kAcknowledge)).length == 16);
    CHECK(opcode_info(rc(opcode::kReadResponseMiddle)).length == 12);
    CHECK(opcode_info(rc(opcode::kReadResponseOnly)).length == 16);
    CHECK(opcode_info(rc(opcode::kSendLastInv)).length == 16);
    CHECK(opcode_info(uc(opcode::kWriteFirst)).length == 28);
    CHECK(opcode_info(uc(opcode::kSendLastImm)).length == 16);
    static_assert(opcode_info(0x0B).length == 32, "the table is usable at compile time");
}

TEST_CASE("opcodes: names and values", "[wire][opcodes]") {
    CHECK(std::string(opcode_name(0x00)) == "RC_SEND_FIRST");
    CHECK(std::string(opcode_name(0x0B)) == "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE");
    CHECK(std::string(opcode_name(0x11)) == "RC_ACKNOWLEDGE");
    CHECK(std::string(opcode_name(0x12)) == "RC_ATOMIC_ACKNOWLEDGE");
    CHECK(std::string(opcode_name(0x13)) == "RC_COMPARE_SWAP");
    CHECK(std::string(opcode_name(0x14)) == "RC_FETCH_ADD");
    CHECK(std::string(opcode_name(0x16)) == "RC_SEND_LAST_WITH_INVALIDATE");
    CHECK(std::string(opcode_name(0x17)) == "RC_SEND_ONLY_WITH_INVALIDATE");
    CHECK(std::string(opcode_name(0x24)) == "UC_SEND_ONLY");
    CHECK(std::string(opcode_name(0x2B)) == "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE");
    CHECK(std::string(opcode_name(0x64)) == "UD_SEND_ONLY");
    CHECK(std::string(opcode_name(0x65)) == "UD_SEND_ONLY_WITH_IMMEDIATE");
    CHECK(std::string(opcode_name(0xA4)) == "XRC_SEND_ONLY");
    CHECK(std::string(opcode_name(0xB1)) == "XRC_ACKNOWLEDGE");
    CHECK(std::string(opcode_name(0xB7)) == "XRC_SEND_ONLY_WITH_INVALIDATE");
    CHECK(std::string(opcode_name(0x15)) == "INVALID");
    CHECK(std::string(opcode_name(0x81)) == "INVALID");
}

TEST_CASE("opcodes: exactly RC, UC, UD SEND_ONLY[_IMM] and XRC are valid (with ATOMIC WRITE)",
          "[wire][opcodes]") {
    std::set<int> expected;
    for (int op = 0x00; op <= 0x14; ++op)
        expected.insert(op);
    expected.insert(0x16);
    expected.insert(0x17);
    expected.insert(0x1D); // ATOMIC WRITE (IBA 1.5)
    for (int op = 0x20; op <= 0x2B; ++op)
        expected.insert(op);
    expected.insert(0x64);
    expected.insert(0x65);
    for (int op = 0xA0; op <= 0xB4; ++op)
        expected.insert(op);
    expected.insert(0xB6);
    expected.insert(0xB7);
    expected.insert(0xBD);
    for (int op = 0; op < 256; ++op) {
        INFO("opcode 0x" << std::hex << op);
        const OpcodeInfo& info = opcode_info(static_cast<uint8_t>(op));
        CHECK(opcode_valid(static_cast<uint8_t>(op)) == (expected.count(op) == 1));
        if (!opcode_valid(static_cast<uint8_t>(op))) {
            CHECK(info.mask == 0);
            CHECK(info.length == 0);
            CHECK(!transport_of(static_cast<uint8_t>(op)));
        }
    }
}

TEST_CASE("opcodes: every valid entry is consistent", "[wire][opcodes]") {
    for (int i = 0; i < 256; ++i) {
        const uint8_t op = static_cast<uint8_t>(i);
        if (!opcode_valid(op)) continue;
        const OpcodeInfo& info = opcode_info(op);
        const uint32_t m = info.mask;
        const std::string name = info.name;
        INFO(name << " " << mask_text(m));

        // one transport, matching the opcode's top bits and the name
        REQUIRE(bits(m & kTransports) == 1);
        if (m & kRC) CHECK(((op >> 5) == 0 && name.rfind("RC_", 0) == 0));
        if (m & kUC) CHECK(((op >> 5) == 1 && name.rfind("UC_", 0) == 0));
        if (m & kUD) CHECK(((op >> 5) == 3 && name.rfind("UD_", 0) == 0));
        if (m & kXRC) CHECK(((op >> 5) == 5 && name.rfind("XRC_", 0) == 0));
        // XRC: every request names the target's XRC SRQ, no response does
        CHECK(((m & kHasXrceth) != 0) == ((m & kXRC) && (m & kRequest)));
        REQUIRE(transport_of(op).has_value());

        // one operation class, one direction, a position
        CHECK(bits(m & kOpClasses) == 1);
        CHECK(bits(m & (kRequest | kResponse)) == 1);
        const uint32_t pos = m & (kFirst | kMiddle | kLast);
        CHECK((pos == kFirst || pos == kMiddle || pos == kLast || pos == kOnly));
        CHECK((name.find("FIRST") != std::string::npos) == (pos == kFirst));
        CHECK((name.find("MIDDLE") != std::string::npos) == (pos == kMiddle));
        CHECK((name.find("LAST") != std::string::npos) == (pos == kLast));
        if (name.find("ONLY") != std::string::npos) CHECK(pos == kOnly);

        // headers from the name
        CHECK(((m & kHasImmDt) != 0) == (name.find("IMMEDIATE") != std::string::npos));
        CHECK(((m & kHasIeth) != 0) == (name.find("INVALIDATE") != std::string::npos));
        CHECK(((m & kHasDeth) != 0) == ((m & kUD) != 0));
        CHECK(((m & kHasAtomicEth) != 0) == ((m & kAtomic) != 0));
        CHECK(((m & kHasAtomicAckEth) != 0) == ((m & kAtomicAck) != 0));
        CHECK(((m & kWithImm) != 0) == ((m & kHasImmDt) != 0));
        CHECK(((m & kWithInv) != 0) == ((m & kHasIeth) != 0));
        if (m & (kWrite | kSend | kReadResponse)) CHECK((m & kHasPayload));
        if (m & (kRead | kAtomic | kAck | kAtomicAck)) CHECK(!(m & kHasPayload));
        if (m & kResponse) CHECK((m & (kRC | kXRC)));

        // semantics
        CHECK(((m & kStart) != 0) == ((m & kRequest) && (m & kFirst)));
        const bool imm_write_end = (m & kWrite) && (m & kHasImmDt);
        CHECK(((m & kNeedsRecvWqe) != 0) == (((m & kSend) != 0) || imm_write_end));
        CHECK(((m & kComplete) != 0) == (((m & kSend) && (m & kLast)) || imm_write_end));
        if (imm_write_end) CHECK((m & kLast));

        // length = BTH + present extension headers, in wire order
        size_t expect = kBthLength;
        const struct {
            uint32_t bit;
            Ext ext;
            size_t len;
        } order[] = {{kHasDeth, Ext::Deth, kDethLength},
                     {kHasXrceth, Ext::Xrceth, kXrcethLength},
                     {kHasReth, Ext::Reth, kRethLength},
                     {kHasAtomicEth, Ext::AtomicEth, kAtomicEthLength},
                     {kHasAeth, Ext::Aeth, kAethLength},
                     {kHasAtomicAckEth, Ext::AtomicAckEth, kAtomicAckEthLength},
                     {kHasImmDt, Ext::ImmDt, kImmDtLength},
                     {kHasIeth, Ext::Ieth, kIethLength}};
        for (const auto& e : order) {
            if (m & e.bit) {
                CHECK(ext_offset(op, e.ext) == expect);
                expect += e.len;
            } else {
                CHECK(ext_offset(op, e.ext) == 0);
            }
        }
        CHECK(info.length == expect);
        CHECK(info.length % 4 == 0);
    }
}

TEST_CASE("opcodes: properties the engines rely on", "[wire][opcodes]") {
    for (Transport t : {Transport::RC, Transport::UC, Transport::XRC}) {
        const uint8_t base = static_cast<uint8_t>(t);
        // RETH on WRITE FIRST and ONLY, not MIDDLE/LAST
        CHECK(has(base | opcode::kWriteFirst, kHasReth | kWrite | kFirst));
        CHECK(has(base | opcode::kWriteOnly, kHasReth | kWrite | kOnly));
        CHECK(has(base | opcode::kWriteOnlyImm, kHasReth | kHasImmDt | kWrite | kOnly));
        CHECK(!has_any(base | opcode::kWriteMiddle, kHasReth));
        CHECK(!has_any(base | opcode::kWriteLast, kHasReth));
        CHECK(!has_any(base | opcode::kWriteLastImm, kHasReth));
        // plain writes need no receive WQE
        CHECK(!has_any(base | opcode::kWriteOnly, kNeedsRecvWqe));
        CHECK(has(base | opcode::kWriteLastImm, kNeedsRecvWqe | kComplete));
        CHECK(has(base | opcode::kSendMiddle, kNeedsRecvWqe));
        CHECK(!has_any(base | opcode::kSendMiddle, kComplete | kStart));
    }
    for (int i = 0; i < 256; ++i) {
        const uint8_t op = static_cast<uint8_t>(i);
        if (has(op, kReadResponse | kMiddle)) CHECK(!has_any(op, kHasAeth));
        if (has(op, kReadResponse) && !has_any(op, kMiddle)) CHECK(has(op, kHasAeth));
        if (has(op, kWrite | kFirst)) CHECK(has(op, kHasReth)); // FIRST and ONLY
        if (has_any(op, kUD)) CHECK(has(op, kHasDeth | kSend | kOnly));
        if (has_any(op, kRead | kReadResponse | kAtomic | kAck | kAtomicAck))
            CHECK(has_any(op, kRC | kXRC));
        // XRC is RC plus the XRCETH: same operations, same headers otherwise
        if (has_any(op, kXRC)) {
            CHECK(has(static_cast<uint8_t>(op & 0x1F), kRC));
            CHECK((opcode_mask(op) & ~(kXRC | kHasXrceth)) ==
                  (opcode_mask(static_cast<uint8_t>(op & 0x1F)) & ~kRC));
            CHECK(size_t{opcode_info(op).length} ==
                  opcode_info(static_cast<uint8_t>(op & 0x1F)).length +
                      (has(op, kRequest) ? kXrcethLength : 0));
        }
        if (has_any(op, kUC)) CHECK(has_any(op, kSend | kWrite));
    }
    CHECK(has(rc(opcode::kReadRequest), kHasReth | kRequest | kRead | kOnly | kStart));
    CHECK(has(rc(opcode::kAcknowledge), kHasAeth | kResponse | kAck));
    CHECK(has(rc(opcode::kAtomicAcknowledge), kHasAeth | kHasAtomicAckEth | kAtomicAck));
    CHECK(!has_any(rc(opcode::kAcknowledge), kNeedsRecvWqe | kComplete | kStart));
    CHECK(has(ud(opcode::kSendOnlyImm), kHasDeth | kHasImmDt | kNeedsRecvWqe | kComplete));
    CHECK(!opcode_valid(ud(opcode::kSendFirst)));
    CHECK(!opcode_valid(uc(opcode::kReadRequest)));
    CHECK(!opcode_valid(uc(opcode::kSendOnlyInv)));
    CHECK(has(xrc(opcode::kSendOnly), kHasXrceth | kNeedsRecvWqe | kComplete | kXRC));
    CHECK(!has_any(xrc(opcode::kAcknowledge), kHasXrceth));
    CHECK(transport_of(xrc(opcode::kFetchAdd)) == Transport::XRC);
}

TEST_CASE("opcodes: opcode_for picks every valid opcode and nothing else", "[wire][opcodes]") {
    CHECK(opcode_for(Transport::RC, Operation::Send, Position::First) == 0x00);
    CHECK(opcode_for(Transport::RC, Operation::Send, Position::Last, Modifier::Imm) == 0x03);
    CHECK(opcode_for(Transport::RC, Operation::Send, Position::Last, Modifier::Inv) == 0x16);
    CHECK(opcode_for(Transport::RC, Operation::Send, Position::Only, Modifier::Inv) == 0x17);
    CHECK(opcode_for(Transport::RC, Operation::Write, Position::Only, Modifier::Imm) == 0x0B);
    CHECK(opcode_for(Transport::RC, Operation::ReadRequest, Position::Only) == 0x0C);
    CHECK(opcode_for(Transport::RC, Operation::ReadResponse, Position::Middle) == 0x0E);
    CHECK(opcode_for(Transport::RC, Operation::Ack, Position::Only) == 0x11);
    CHECK(opcode_for(Transport::RC, Operation::AtomicAck, Position::Only) == 0x12);
    CHECK(opcode_for(Transport::RC, Operation::CompareSwap, Position::Only) == 0x13);
    CHECK(opcode_for(Transport::RC, Operation::FetchAdd, Position::Only) == 0x14);
    CHECK(opcode_for(Transport::RC, Operation::AtomicWrite, Position::Only) == 0x1D);
    CHECK(opcode_for(Transport::XRC, Operation::AtomicWrite, Position::Only) == 0xBD);
    CHECK(!opcode_for(Transport::UC, Operation::AtomicWrite, Position::Only));
    CHECK(!opcode_for(Transport::RC, Operation::AtomicWrite, Position::First));
    CHECK(opcode_for(Transport::UC, Operation::Write, Position::Last, Modifier::Imm) == 0x29);
    CHECK(opcode_for(Transport::UD, Operation::Send, Position::Only) == 0x64);
    CHECK(opcode_for(Transport::UD, Operation::Send, Position::Only, Modifier::Imm) == 0x65);
    CHECK(!opcode_for(Transport::UD, Operation::Send, Position::First));
    CHECK(!opcode_for(Transport::UD, Operation::Write, Position::Only));
    CHECK(!opcode_for(Transport::UD, Operation::Send, Position::Only, Modifier::Inv));
    CHECK(!opcode_for(Transport::UC, Operation::ReadRequest, Position::Only));
    CHECK(!opcode_for(Transport::UC, Operation::Send, Position::Only, Modifier::Inv));
    CHECK(!opcode_for(Transport::RC, Operation::Send, Position::First, Modifier::Imm));
    CHECK(!opcode_for(Transport::RC, Operation::Write, Position::Middle, Modifier::Imm));
    CHECK(!opcode_for(Transport::RC, Operation::Write, Position::Only, Modifier::Inv));
    CHECK(!opcode_for(Transport::RC, Operation::ReadRequest, Position::First));
    CHECK(!opcode_for(Transport::RC, Operation::Ack, Position::Only, Modifier::Imm));
    CHECK(!opcode_for(Transport::RC, Operation::ReadResponse, Position::Only, Modifier::Imm));
    static_assert(opcode_for(Transport::RC, Operation::Write, Position::First) == 0x06);

    // Every combination that yields an opcode yields one with the asked-for properties, and
    // every valid opcode is reachable.
    const struct {
        Operation op;
        uint32_t cls;
    } ops[] = {{Operation::Send, kSend},
               {Operation::Write, kWrite},
               {Operation::ReadRequest, kRead},
               {Operation::ReadResponse, kReadResponse},
               {Operation::Ack, kAck},
               {Operation::AtomicAck, kAtomicAck},
               {Operation::CompareSwap, kAtomic},
               {Operation::FetchAdd, kAtomic},
               {Operation::AtomicWrite, kWrite}};
    const struct {
        Position pos;
        uint32_t bits;
    } positions[] = {{Position::First, kFirst},
                     {Position::Middle, kMiddle},
                     {Position::Last, kLast},
                     {Position::Only, kOnly}};
    std::set<int> reached;
    for (Transport t : {Transport::RC, Transport::UC, Transport::UD, Transport::XRC}) {
        const uint32_t tbit = t == Transport::RC   ? kRC
                              : t == Transport::UC ? kUC
                              : t == Transport::UD ? kUD
                                                   : kXRC;
        for (const auto& o : ops)
            for (const auto& p : positions)
                for (Modifier mod : {Modifier::None, Modifier::Imm, Modifier::Inv}) {
                    auto code = opcode_for(t, o.op, p.pos, mod);
                    if (!code) continue;
                    INFO(opcode_name(*code));
                    CHECK(reached.insert(*code).second);
                    const uint32_t m = opcode_mask(*code);
                    CHECK((m & tbit));
                    CHECK((m & o.cls));
                    CHECK((m & (kFirst | kMiddle | kLast)) == p.bits);
                    CHECK(((m & kHasImmDt) != 0) == (mod == Modifier::Imm));
                    CHECK(((m & kHasIeth) != 0) == (mod == Modifier::Inv));
                }
    }
    for (int i = 0; i < 256; ++i)
        if (opcode_valid(static_cast<uint8_t>(i))) CHECK(reached.count(i) == 1);
}

TEST_CASE("opcodes: position_of", "[wire][opcodes]") {
    CHECK(position_of(true, true) == Position::Only);
    CHECK(position_of(true, false) == Position::First);
    CHECK(position_of(false, false) == Position::Middle);
    CHECK(position_of(false, true) == Position::Last);
}

TEST_CASE("opcodes: mask_to_string", "[wire][opcodes]") {
    CHECK(mask_text(opcode_mask(rc(opcode::kWriteOnly))) ==
          "RETH|PAYLOAD|REQ|FIRST|LAST|WRITE|RC|START");
    CHECK(mask_text(0) == "INVALID");
    CHECK(mask_text(1u << 31) == "0x80000000");
    char small[8];
    CHECK(std::string(mask_to_string(opcode_mask(rc(opcode::kWriteOnly)), small, sizeof small)) ==
          "RETH|PA");
    char one[1] = {'x'};
    CHECK(mask_to_string(kRC, one, 1)[0] == '\0');
}
