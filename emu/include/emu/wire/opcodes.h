// The BTH opcode table (IBA vol. 1 9.2 table 38): for every one of the 256 opcodes, its name,
// a mask of properties, the header length and the offset of each extension header. Code tests
// mask bits (`has(op, kHasReth)`), not lists of opcodes. Only what rdmaemu speaks is valid:
// RC (0x00-0x14, 0x16, 0x17), UC (0x20-0x2B), UD SEND_ONLY[_WITH_IMMEDIATE] (0x64, 0x65) and
// XRC (0xA0-0xB4, 0xB6, 0xB7: RC's operations, requests with an XRCETH after the BTH);
// everything else (RD, CNP, reserved, vendor) has mask 0.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace emu::wire {

// Header sizes in bytes.
inline constexpr size_t kBthLength = 12;
inline constexpr size_t kDethLength = 8;
inline constexpr size_t kRethLength = 16;
inline constexpr size_t kAtomicEthLength = 28;
inline constexpr size_t kAethLength = 4;
inline constexpr size_t kAtomicAckEthLength = 8;
inline constexpr size_t kImmDtLength = 4;
inline constexpr size_t kIethLength = 4;
inline constexpr size_t kXrcethLength = 4; // XRC SRQ number (24 bits)

// --- Opcode property mask bits ---
// Extension headers present (and whether a payload may follow).
inline constexpr uint32_t kHasReth = 1u << 0;
inline constexpr uint32_t kHasAeth = 1u << 1;
inline constexpr uint32_t kHasAtomicEth = 1u << 2;
inline constexpr uint32_t kHasAtomicAckEth = 1u << 3;
inline constexpr uint32_t kHasImmDt = 1u << 4;
inline constexpr uint32_t kHasIeth = 1u << 5;
inline constexpr uint32_t kHasDeth = 1u << 6;
inline constexpr uint32_t kHasPayload = 1u << 7; // may carry payload (zero bytes allowed)
// Direction: sent by the requester, or by the responder.
inline constexpr uint32_t kRequest = 1u << 8;
inline constexpr uint32_t kResponse = 1u << 9;
// Position in the message. Single-packet operations (READ REQUEST, atomics, ACKs) are ONLY.
inline constexpr uint32_t kFirst = 1u << 10;
inline constexpr uint32_t kMiddle = 1u << 11;
inline constexpr uint32_t kLast = 1u << 12;
inline constexpr uint32_t kOnly = kFirst | kLast;
// Operation class (exactly one is set on a valid opcode).
inline constexpr uint32_t kSend = 1u << 13;
inline constexpr uint32_t kWrite = 1u << 14;
inline constexpr uint32_t kRead = 1u << 15; // RDMA READ REQUEST
inline constexpr uint32_t kReadResponse = 1u << 16;
inline constexpr uint32_t kAtomic = 1u << 17; // COMPARE_SWAP, FETCH_ADD
inline constexpr uint32_t kAck = 1u << 18;    // ACKNOWLEDGE
inline constexpr uint32_t kAtomicAck = 1u << 19;
// Transport (exactly one is set on a valid opcode).
inline constexpr uint32_t kRC = 1u << 20;
inline constexpr uint32_t kUC = 1u << 21;
inline constexpr uint32_t kUD = 1u << 22;
// Request semantics.
inline constexpr uint32_t kStart = 1u << 23;    // request that starts a new message (FIRST/ONLY)
inline constexpr uint32_t kComplete = 1u << 24; // ends a message that completes a receive WQE
inline constexpr uint32_t kNeedsRecvWqe =
    1u << 25; // consumes a receive WQE: SEND *, WRITE_IMM LAST/ONLY
inline constexpr uint32_t kHasXrceth = 1u << 26; // XRC requests: the target's XRC SRQ number
inline constexpr uint32_t kXRC = 1u << 27;       // transport (with kRC, kUC, kUD)
inline constexpr uint32_t kWithImm = kHasImmDt;  // carries immediate data (same bit)
inline constexpr uint32_t kWithInv = kHasIeth;   // SEND with invalidate (same bit)

// Extension headers, in wire order (IBA 9.2: XRCETH follows the BTH/DETH, precedes RETH).
enum class Ext : uint8_t { Deth, Xrceth, Reth, AtomicEth, Aeth, AtomicAckEth, ImmDt, Ieth, Count };
inline constexpr size_t kExtCount = static_cast<size_t>(Ext::Count);

struct OpcodeInfo {
    const char* name;          // e.g. "RC_SEND_FIRST"; "INVALID" for opcodes outside the table
    uint32_t mask;             // property bits above; 0 = invalid opcode
    uint8_t length;            // BTH + extension headers, bytes; 0 when invalid
    uint8_t offset[kExtCount]; // byte offset of each present extension header; 0 when absent
};

// Opcode values (transport base + operation).
enum class Transport : uint8_t { RC = 0x00, UC = 0x20, UD = 0x60, XRC = 0xA0 };

namespace opcode {
inline constexpr uint8_t kSendFirst = 0x00;
inline constexpr uint8_t kSendMiddle = 0x01;
inline constexpr uint8_t kSendLast = 0x02;
inline constexpr uint8_t kSendLastImm = 0x03;
inline constexpr uint8_t kSendOnly = 0x04;
inline constexpr uint8_t kSendOnlyImm = 0x05;
inline constexpr uint8_t kWriteFirst = 0x06;
inline constexpr uint8_t kWriteMiddle = 0x07;
inline constexpr uint8_t kWriteLast = 0x08;
inline constexpr uint8_t kWriteLastImm = 0x09;
inline constexpr uint8_t kWriteOnly = 0x0A;
inline constexpr uint8_t kWriteOnlyImm = 0x0B;
inline constexpr uint8_t kReadRequest = 0x0C;
inline constexpr uint8_t kReadResponseFirst = 0x0D;
inline constexpr uint8_t kReadResponseMiddle = 0x0E;
inline constexpr uint8_t kReadResponseLast = 0x0F;
inline constexpr uint8_t kReadResponseOnly = 0x10;
inline constexpr uint8_t kAcknowledge = 0x11;
inline constexpr uint8_t kAtomicAcknowledge = 0x12;
inline constexpr uint8_t kCompareSwap = 0x13;
inline constexpr uint8_t kFetchAdd = 0x14;
inline constexpr uint8_t kSendLastInv = 0x16;
inline constexpr uint8_t kSendOnlyInv = 0x17;
inline constexpr uint8_t kAtomicWrite = 0x1D; // IBA 1.5: 8 bytes written at once, WRITE-like

// Full opcode values: transport base | operation.
constexpr uint8_t make(Transport t, uint8_t op) {
    return static_cast<uint8_t>(t) | op;
}

inline constexpr uint8_t kRcSendOnly = make(Transport::RC, kSendOnly);
inline constexpr uint8_t kRcAcknowledge = make(Transport::RC, kAcknowledge);
inline constexpr uint8_t kUdSendOnly = make(Transport::UD, kSendOnly);         // 0x64
inline constexpr uint8_t kUdSendOnlyImm = make(Transport::UD, kSendOnlyImm);   // 0x65
inline constexpr uint8_t kXrcSendOnly = make(Transport::XRC, kSendOnly);       // 0xA4
inline constexpr uint8_t kXrcAcknowledge = make(Transport::XRC, kAcknowledge); // 0xB1
inline constexpr uint8_t kCnp = 0x81; // RoCE v2 congestion notification packet (not in the table)
} // namespace opcode

namespace detail {

struct OpcodeDef {
    uint8_t opcode;
    const char* name;
    uint32_t mask;
};

// clang-format off
inline constexpr uint32_t kSendFirstMask  = kHasPayload | kRequest | kSend | kNeedsRecvWqe | kFirst | kStart;
inline constexpr uint32_t kSendMiddleMask = kHasPayload | kRequest | kSend | kNeedsRecvWqe | kMiddle;
inline constexpr uint32_t kSendLastMask   = kHasPayload | kRequest | kSend | kNeedsRecvWqe | kLast | kComplete;
inline constexpr uint32_t kSendOnlyMask   = kHasPayload | kRequest | kSend | kNeedsRecvWqe | kOnly | kStart | kComplete;
inline constexpr uint32_t kWriteFirstMask  = kHasReth | kHasPayload | kRequest | kWrite | kFirst | kStart;
inline constexpr uint32_t kWriteMiddleMask = kHasPayload | kRequest | kWrite | kMiddle;
inline constexpr uint32_t kWriteLastMask   = kHasPayload | kRequest | kWrite | kLast;
inline constexpr uint32_t kWriteOnlyMask   = kHasReth | kHasPayload | kRequest | kWrite | kOnly | kStart;
inline constexpr uint32_t kImmRecv = kHasImmDt | kNeedsRecvWqe | kComplete;

// One row per valid opcode: what IBA table 38 and the note's table say it carries.
inline constexpr OpcodeDef kOpcodeDefs[] = {
    {0x00, "RC_SEND_FIRST",                       kRC | kSendFirstMask},
    {0x01, "RC_SEND_MIDDLE",                      kRC | kSendMiddleMask},
    {0x02, "RC_SEND_LAST",                        kRC | kSendLastMask},
    {0x03, "RC_SEND_LAST_WITH_IMMEDIATE",         kRC | kSendLastMask | kHasImmDt},
    {0x04, "RC_SEND_ONLY",                        kRC | kSendOnlyMask},
    {0x05, "RC_SEND_ONLY_WITH_IMMEDIATE",         kRC | kSendOnlyMask | kHasImmDt},
    {0x06, "RC_RDMA_WRITE_FIRST",                 kRC | kWriteFirstMask},
    {0x07, "RC_RDMA_WRITE_MIDDLE",                kRC | kWriteMiddleMask},
    {0x08, "RC_RDMA_WRITE_LAST",                  kRC | kWriteLastMask},
    {0x09, "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE",   kRC | kWriteLastMask | kImmRecv},
    {0x0A, "RC_RDMA_WRITE_ONLY",                  kRC | kWriteOnlyMask},
    {0x0B, "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE",   kRC | kWriteOnlyMask | kImmRecv},
    {0x0C, "RC_RDMA_READ_REQUEST",                kRC | kHasReth | kRequest | kRead | kOnly | kStart},
    {0x0D, "RC_RDMA_READ_RESPONSE_FIRST",         kRC | kHasAeth | kHasPayload | kResponse | kReadResponse | kFirst},
    {0x0E, "RC_RDMA_READ_RESPONSE_MIDDLE",        kRC | kHasPayload | kResponse | kReadResponse | kMiddle},
    {0x0F, "RC_RDMA_READ_RESPONSE_LAST",          kRC | kHasAeth | kHasPayload | kResponse | kReadResponse | kLast},
    {0x10, "RC_RDMA_READ_RESPONSE_ONLY",          kRC | kHasAeth | kHasPayload | kResponse | kReadResponse | kOnly},
    {0x11, "RC_ACKNOWLEDGE",                      kRC | kHasAeth | kResponse | kAck | kOnly},
    {0x12, "RC_ATOMIC_ACKNOWLEDGE",               kRC | kHasAeth | kHasAtomicAckEth | kResponse | kAtomicAck | kOnly},
    {0x13, "RC_COMPARE_SWAP",                     kRC | kHasAtomicEth | kRequest | kAtomic | kOnly | kStart},
    {0x14, "RC_FETCH_ADD",                        kRC | kHasAtomicEth | kRequest | kAtomic | kOnly | kStart},
    {0x16, "RC_SEND_LAST_WITH_INVALIDATE",        kRC | kSendLastMask | kHasIeth},
    {0x17, "RC_SEND_ONLY_WITH_INVALIDATE",        kRC | kSendOnlyMask | kHasIeth},
    {0x1D, "RC_ATOMIC_WRITE",                     kRC | kWriteOnlyMask},

    {0xA0, "XRC_SEND_FIRST",                      kXRC | kHasXrceth | kSendFirstMask},
    {0xA1, "XRC_SEND_MIDDLE",                     kXRC | kHasXrceth | kSendMiddleMask},
    {0xA2, "XRC_SEND_LAST",                       kXRC | kHasXrceth | kSendLastMask},
    {0xA3, "XRC_SEND_LAST_WITH_IMMEDIATE",        kXRC | kHasXrceth | kSendLastMask | kHasImmDt},
    {0xA4, "XRC_SEND_ONLY",                       kXRC | kHasXrceth | kSendOnlyMask},
    {0xA5, "XRC_SEND_ONLY_WITH_IMMEDIATE",        kXRC | kHasXrceth | kSendOnlyMask | kHasImmDt},
    {0xA6, "XRC_RDMA_WRITE_FIRST",                kXRC | kHasXrceth | kWriteFirstMask},
    {0xA7, "XRC_RDMA_WRITE_MIDDLE",               kXRC | kHasXrceth | kWriteMiddleMask},
    {0xA8, "XRC_RDMA_WRITE_LAST",                 kXRC | kHasXrceth | kWriteLastMask},
    {0xA9, "XRC_RDMA_WRITE_LAST_WITH_IMMEDIATE",  kXRC | kHasXrceth | kWriteLastMask | kImmRecv},
    {0xAA, "XRC_RDMA_WRITE_ONLY",                 kXRC | kHasXrceth | kWriteOnlyMask},
    {0xAB, "XRC_RDMA_WRITE_ONLY_WITH_IMMEDIATE",  kXRC | kHasXrceth | kWriteOnlyMask | kImmRecv},
    {0xAC, "XRC_RDMA_READ_REQUEST",               kXRC | kHasXrceth | kHasReth | kRequest | kRead | kOnly | kStart},
    {0xAD, "XRC_RDMA_READ_RESPONSE_FIRST",        kXRC | kHasAeth | kHasPayload | kResponse | kReadResponse | kFirst},
    {0xAE, "XRC_RDMA_READ_RESPONSE_MIDDLE",       kXRC | kHasPayload | kResponse | kReadResponse | kMiddle},
    {0xAF, "XRC_RDMA_READ_RESPONSE_LAST",         kXRC | kHasAeth | kHasPayload | kResponse | kReadResponse | kLast},
    {0xB0, "XRC_RDMA_READ_RESPONSE_ONLY",         kXRC | kHasAeth | kHasPayload | kResponse | kReadResponse | kOnly},
    {0xB1, "XRC_ACKNOWLEDGE",                     kXRC | kHasAeth | kResponse | kAck | kOnly},
    {0xB2, "XRC_ATOMIC_ACKNOWLEDGE",              kXRC | kHasAeth | kHasAtomicAckEth | kResponse | kAtomicAck | kOnly},
    {0xB3, "XRC_COMPARE_SWAP",                    kXRC | kHasXrceth | kHasAtomicEth | kRequest | kAtomic | kOnly | kStart},
    {0xB4, "XRC_FETCH_ADD",                       kXRC | kHasXrceth | kHasAtomicEth | kRequest | kAtomic | kOnly | kStart},
    {0xB6, "XRC_SEND_LAST_WITH_INVALIDATE",       kXRC | kHasXrceth | kSendLastMask | kHasIeth},
    {0xB7, "XRC_SEND_ONLY_WITH_INVALIDATE",       kXRC | kHasXrceth | kSendOnlyMask | kHasIeth},
    {0xBD, "XRC_ATOMIC_WRITE",                    kXRC | kHasXrceth | kWriteOnlyMask},

    {0x20, "UC_SEND_FIRST",                       kUC | kSendFirstMask},
    {0x21, "UC_SEND_MIDDLE",                      kUC | kSendMiddleMask},
    {0x22, "UC_SEND_LAST",                        kUC | kSendLastMask},
    {0x23, "UC_SEND_LAST_WITH_IMMEDIATE",         kUC | kSendLastMask | kHasImmDt},
    {0x24, "UC_SEND_ONLY",                        kUC | kSendOnlyMask},
    {0x25, "UC_SEND_ONLY_WITH_IMMEDIATE",         kUC | kSendOnlyMask | kHasImmDt},
    {0x26, "UC_RDMA_WRITE_FIRST",                 kUC | kWriteFirstMask},
    {0x27, "UC_RDMA_WRITE_MIDDLE",                kUC | kWriteMiddleMask},
    {0x28, "UC_RDMA_WRITE_LAST",                  kUC | kWriteLastMask},
    {0x29, "UC_RDMA_WRITE_LAST_WITH_IMMEDIATE",   kUC | kWriteLastMask | kImmRecv},
    {0x2A, "UC_RDMA_WRITE_ONLY",                  kUC | kWriteOnlyMask},
    {0x2B, "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE",   kUC | kWriteOnlyMask | kImmRecv},

    {0x64, "UD_SEND_ONLY",                        kUD | kSendOnlyMask | kHasDeth},
    {0x65, "UD_SEND_ONLY_WITH_IMMEDIATE",         kUD | kSendOnlyMask | kHasDeth | kHasImmDt},
};
// clang-format on

// Header length and extension header offsets follow from the mask: BTH, then the present
// extension headers in wire order.
constexpr OpcodeInfo make_info(const char* name, uint32_t mask) {
    constexpr struct {
        uint32_t bit;
        size_t length;
    } order[kExtCount] = {
        {kHasDeth, kDethLength},   {kHasXrceth, kXrcethLength},
        {kHasReth, kRethLength},   {kHasAtomicEth, kAtomicEthLength},
        {kHasAeth, kAethLength},   {kHasAtomicAckEth, kAtomicAckEthLength},
        {kHasImmDt, kImmDtLength}, {kHasIeth, kIethLength},
    };
    OpcodeInfo info{name, mask, 0, {}};
    size_t at = kBthLength;
    for (size_t i = 0; i < kExtCount; ++i) {
        if (mask & order[i].bit) {
            info.offset[i] = static_cast<uint8_t>(at);
            at += order[i].length;
        }
    }
    info.length = static_cast<uint8_t>(at);
    return info;
}

constexpr std::array<OpcodeInfo, 256> make_table() {
    std::array<OpcodeInfo, 256> table{};
    for (auto& e : table)
        e = OpcodeInfo{"INVALID", 0, 0, {}};
    for (const auto& d : kOpcodeDefs)
        table[d.opcode] = make_info(d.name, d.mask);
    return table;
}

} // namespace detail

inline constexpr std::array<OpcodeInfo, 256> kOpcodeTable = detail::make_table();

constexpr const OpcodeInfo& opcode_info(uint8_t op) {
    return kOpcodeTable[op];
}
constexpr uint32_t opcode_mask(uint8_t op) {
    return kOpcodeTable[op].mask;
}
constexpr bool opcode_valid(uint8_t op) {
    return kOpcodeTable[op].mask != 0;
}
// True when `op` has every bit of `bits`.
constexpr bool has(uint8_t op, uint32_t bits) {
    return (kOpcodeTable[op].mask & bits) == bits;
}
constexpr bool has_any(uint8_t op, uint32_t bits) {
    return (kOpcodeTable[op].mask & bits) != 0;
}
constexpr const char* opcode_name(uint8_t op) {
    return kOpcodeTable[op].name;
}
// Byte offset of extension header `e` in packets of opcode `op`; 0 when it has none.
constexpr size_t ext_offset(uint8_t op, Ext e) {
    return kOpcodeTable[op].offset[static_cast<size_t>(e)];
}

// Transport of a valid opcode; nullopt for invalid ones.
constexpr std::optional<Transport> transport_of(uint8_t op) {
    uint32_t m = opcode_mask(op);
    if (m & kRC) return Transport::RC;
    if (m & kUC) return Transport::UC;
    if (m & kUD) return Transport::UD;
    if (m & kXRC) return Transport::XRC;
    return std::nullopt;
}

// --- Choosing an opcode (what the requester and responder send) ---

enum class Operation : uint8_t {
    Send,
    Write,
    ReadRequest,
    ReadResponse,
    Ack,
    AtomicAck,
    CompareSwap,
    FetchAdd,
    AtomicWrite,
};
enum class Position : uint8_t { First, Middle, Last, Only };
enum class Modifier : uint8_t { None, Imm, Inv };

// Position of a packet from "is the first packet of its message" / "is the last".
constexpr Position position_of(bool first, bool last) {
    if (first) return last ? Position::Only : Position::First;
    return last ? Position::Last : Position::Middle;
}

// The opcode for (transport, operation, position, immediate/invalidate), or nullopt when that
// combination does not exist (e.g. UD WRITE, UC READ, SEND_FIRST_WITH_IMMEDIATE, WRITE with
// invalidate, READ REQUEST not ONLY). Single-packet operations (ReadRequest, Ack, AtomicAck,
// CompareSwap, FetchAdd, AtomicWrite) take Position::Only.
constexpr std::optional<uint8_t> opcode_for(Transport t, Operation op, Position pos,
                                            Modifier mod = Modifier::None) {
    namespace o = opcode;
    int v = -1;
    const bool plain = mod == Modifier::None;
    switch (op) {
    case Operation::Send:
        switch (pos) {
        case Position::First:
            v = plain ? o::kSendFirst : -1;
            break;
        case Position::Middle:
            v = plain ? o::kSendMiddle : -1;
            break;
        case Position::Last:
            v = plain ? o::kSendLast : mod == Modifier::Imm ? o::kSendLastImm : o::kSendLastInv;
            break;
        case Position::Only:
            v = plain ? o::kSendOnly : mod == Modifier::Imm ? o::kSendOnlyImm : o::kSendOnlyInv;
            break;
        }
        break;
    case Operation::Write:
        if (mod == Modifier::Inv) break;
        switch (pos) {
        case Position::First:
            v = plain ? o::kWriteFirst : -1;
            break;
        case Position::Middle:
            v = plain ? o::kWriteMiddle : -1;
            break;
        case Position::Last:
            v = plain ? o::kWriteLast : o::kWriteLastImm;
            break;
        case Position::Only:
            v = plain ? o::kWriteOnly : o::kWriteOnlyImm;
            break;
        }
        break;
    case Operation::ReadResponse:
        if (!plain) break;
        v = pos == Position::First    ? o::kReadResponseFirst
            : pos == Position::Middle ? o::kReadResponseMiddle
            : pos == Position::Last   ? o::kReadResponseLast
                                      : o::kReadResponseOnly;
        break;
    case Operation::ReadRequest:
        v = o::kReadRequest;
        break;
    case Operation::Ack:
        v = o::kAcknowledge;
        break;
    case Operation::AtomicAck:
        v = o::kAtomicAcknowledge;
        break;
    case Operation::CompareSwap:
        v = o::kCompareSwap;
        break;
    case Operation::FetchAdd:
        v = o::kFetchAdd;
        break;
    case Operation::AtomicWrite:
        v = o::kAtomicWrite;
        break;
    }
    if (v < 0) return std::nullopt;
    if (op != Operation::Send && op != Operation::Write && op != Operation::ReadResponse &&
        (pos != Position::Only || !plain))
        return std::nullopt;
    uint8_t code = o::make(t, static_cast<uint8_t>(v));
    if (!opcode_valid(code)) return std::nullopt;
    return code;
}

// Mask bits as text for logs and test messages, e.g. "RETH|PAYLOAD|REQ|ONLY|WRITE|RC|START".
// Writes at most `size` bytes including the NUL; returns `buf`.
char* mask_to_string(uint32_t mask, char* buf, size_t size);

} // namespace emu::wire
