// The opcode table lives in emu/wire/opcodes.h (constexpr); this file checks it at compile time
// against the header sizes of IBA table 38 and prints masks for logs.
#include "emu/wire/opcodes.h"

#include <cstdio>

namespace emu::wire {

namespace {

constexpr uint8_t rc(uint8_t op) {
    return opcode::make(Transport::RC, op);
}
constexpr uint8_t ud(uint8_t op) {
    return opcode::make(Transport::UD, op);
}
constexpr uint8_t xrc(uint8_t op) {
    return opcode::make(Transport::XRC, op);
}

// Header lengths from the layout (BTH 12, RETH 16, AtomicETH 28, AETH 4, AtomicAckETH 8,
// ImmDt 4, IETH 4, DETH 8).
static_assert(opcode_info(rc(opcode::kSendOnly)).length == 12);
static_assert(opcode_info(rc(opcode::kSendOnlyImm)).length == 16);
static_assert(opcode_info(rc(opcode::kSendOnlyInv)).length == 16);
static_assert(opcode_info(rc(opcode::kWriteOnly)).length == 28);
static_assert(opcode_info(rc(opcode::kWriteOnlyImm)).length == 32);
static_assert(opcode_info(rc(opcode::kWriteLastImm)).length == 16);
static_assert(opcode_info(rc(opcode::kReadRequest)).length == 28);
static_assert(opcode_info(rc(opcode::kReadResponseMiddle)).length == 12);
static_assert(opcode_info(rc(opcode::kReadResponseFirst)).length == 16);
static_assert(opcode_info(rc(opcode::kAcknowledge)).length == 16);
static_assert(opcode_info(rc(opcode::kAtomicAcknowledge)).length == 24);
static_assert(opcode_info(rc(opcode::kCompareSwap)).length == 40);
static_assert(opcode_info(ud(opcode::kSendOnly)).length == 20);
static_assert(opcode_info(ud(opcode::kSendOnlyImm)).length == 24);
// Extension header order: RETH before ImmDt, AETH before AtomicAckETH, DETH before ImmDt.
static_assert(ext_offset(rc(opcode::kWriteOnlyImm), Ext::Reth) == 12);
static_assert(ext_offset(rc(opcode::kWriteOnlyImm), Ext::ImmDt) == 28);
static_assert(ext_offset(rc(opcode::kAtomicAcknowledge), Ext::AtomicAckEth) == 16);
static_assert(ext_offset(ud(opcode::kSendOnlyImm), Ext::ImmDt) == 20);
static_assert(!opcode_valid(0x15) && !opcode_valid(0x40) && !opcode_valid(opcode::kCnp));
// XRC: requests carry the 4-byte XRCETH right after the BTH, responses are RC's.
static_assert(opcode_info(xrc(opcode::kSendOnly)).length == 16);
static_assert(ext_offset(xrc(opcode::kSendOnly), Ext::Xrceth) == 12);
static_assert(opcode_info(xrc(opcode::kWriteOnlyImm)).length == 36);
static_assert(ext_offset(xrc(opcode::kWriteOnlyImm), Ext::Reth) == 16);
static_assert(ext_offset(xrc(opcode::kCompareSwap), Ext::AtomicEth) == 16);
static_assert(opcode_info(xrc(opcode::kAcknowledge)).length == 16);
static_assert(opcode_info(xrc(opcode::kReadResponseFirst)).length == 16);
static_assert(!opcode_valid(0xB5) && !opcode_valid(0xB8));

struct BitName {
    uint32_t bit;
    const char* name;
};
constexpr BitName kBitNames[] = {
    {kHasDeth, "DETH"},
    {kHasXrceth, "XRCETH"},
    {kHasReth, "RETH"},
    {kHasAtomicEth, "ATMETH"},
    {kHasAeth, "AETH"},
    {kHasAtomicAckEth, "ATMACK"},
    {kHasImmDt, "IMMDT"},
    {kHasIeth, "IETH"},
    {kHasPayload, "PAYLOAD"},
    {kRequest, "REQ"},
    {kResponse, "RESP"},
    {kFirst, "FIRST"},
    {kMiddle, "MIDDLE"},
    {kLast, "LAST"},
    {kSend, "SEND"},
    {kWrite, "WRITE"},
    {kRead, "READ"},
    {kReadResponse, "READ_RESP"},
    {kAtomic, "ATOMIC"},
    {kAck, "ACK"},
    {kAtomicAck, "ATOMIC_ACK"},
    {kRC, "RC"},
    {kUC, "UC"},
    {kUD, "UD"},
    {kXRC, "XRC"},
    {kStart, "START"},
    {kComplete, "COMP"},
    {kNeedsRecvWqe, "RWR"},
};

} // namespace

char* mask_to_string(uint32_t mask, char* buf, size_t size) {
    if (size == 0) return buf;
    buf[0] = '\0';
    size_t used = 0;
    auto append = [&](const char* s) {
        int n = std::snprintf(buf + used, size - used, "%s%s", used ? "|" : "", s);
        if (n <= 0) return;
        used += static_cast<size_t>(n);
        if (used >= size) used = size - 1; // truncated
    };
    uint32_t known = 0;
    for (const auto& b : kBitNames) {
        known |= b.bit;
        if (mask & b.bit) append(b.name);
    }
    if (mask & ~known) {
        char extra[16];
        std::snprintf(extra, sizeof extra, "0x%x", mask & ~known);
        append(extra);
    }
    if (mask == 0) append("INVALID");
    return buf;
}

} // namespace emu::wire
