// RoCE v2 packet codec: the InfiniBand Base Transport Header (BTH) and its extension headers as
// they sit in a UDP datagram's payload (IBA vol. 1 ch. 9.2-9.4, RoCE v2 annex A17):
//
//   BTH | [DETH][XRCETH][RETH][AtomicETH][AETH][AtomicAckETH][ImmDt][IETH] | payload | pad | ICRC
//
// Which extension headers follow the BTH is fixed by the opcode (opcodes.h). All fields are
// big-endian on the wire and host order in `Headers`, except `Headers::imm` (see there).
// No allocation, no exceptions: safe to use on the per-packet path and on untrusted bytes.
#pragma once

#include "emu/wire/opcodes.h"

#include <cstddef>
#include <cstdint>
#include <iterator>

namespace emu::wire {

inline constexpr uint16_t kRoceV2Port = 4791;    // IANA UDP destination port of RoCE v2
inline constexpr uint16_t kDefaultPkey = 0xFFFF; // full-membership default partition
inline constexpr size_t kIcrcLength = 4;
inline constexpr uint32_t kQpnMask = 0x00FFFFFF;

// RDMA Extended Transport Header (16 bytes): on WRITE FIRST/ONLY and READ REQUEST.
struct Reth {
    uint64_t va = 0;
    uint32_t rkey = 0;
    uint32_t length = 0; // DMA length of the whole message, bytes
};

// ACK Extended Transport Header (4 bytes): on ACKs, atomic ACKs and READ RESPONSE FIRST/LAST/ONLY.
struct Aeth {
    uint8_t syndrome = 0; // see the aeth_* helpers below
    uint32_t msn = 0;     // 24 bits: message sequence number
};

// Atomic Extended Transport Header (28 bytes): on COMPARE_SWAP and FETCH_ADD.
struct AtomicEth {
    uint64_t va = 0; // must be 8-byte aligned (checked by the responder, not here)
    uint32_t rkey = 0;
    uint64_t swap_add = 0; // swap value (CMP_SWP) or add value (FETCH_ADD)
    uint64_t compare = 0;  // compare value (CMP_SWP); sent as 0 for FETCH_ADD
};

// Datagram Extended Transport Header (8 bytes): on every UD packet.
struct Deth {
    uint32_t qkey = 0;
    uint32_t src_qpn = 0; // 24 bits
};

// Every field a RoCE v2 packet can carry. Fields of extension headers the opcode does not have
// are ignored by encode() and left untouched by parse(). All values are host order except `imm`.
struct Headers {
    // --- BTH (12 bytes) ---
    uint8_t opcode = 0;
    bool se = false;       // solicited event
    bool migreq = false;   // M bit: migration state (APM); 0 unless APM is used
    uint8_t pad_count = 0; // 0..3 pad bytes after the payload; build() sets it
    uint8_t tver = 0;      // transport header version; must be 0
    uint16_t pkey = kDefaultPkey;
    bool fecn = false; // ECN bits of BTH byte 4 (ignored by the ICRC, see icrc.h)
    bool becn = false;
    uint32_t dest_qpn = 0; // 24 bits
    bool ack_req = false;
    uint32_t psn = 0; // 24 bits
    // --- extension headers ---
    Reth reth;
    Aeth aeth;
    AtomicEth atomic_eth;
    uint64_t atomic_ack = 0; // AtomicAckETH: original remote value (8 bytes)
    // ImmDt (4 bytes), kept exactly as the 4 wire bytes read into a uint32_t with memcpy (i.e.
    // big-endian / network order, NOT converted): it can be copied straight into
    // ibv_wc.imm_data and from ibv_send_wr.imm_data, which are __be32 in the verbs API.
    uint32_t imm = 0;
    uint32_t ieth_rkey = 0; // IETH: R_Key to invalidate (SEND_*_WITH_INVALIDATE), host order
    Deth deth;
    uint32_t xrc_srqn = 0; // XRCETH (XRC requests): the target's XRC SRQ number, 24 bits
};

// Bytes of BTH + extension headers for `opcode`; 0 when the opcode is invalid (not in the table).
size_t header_length(uint8_t opcode);

// Pad bytes needed after `payload_len` bytes of payload: (4 - payload_len % 4) % 4.
constexpr uint8_t pad_for(size_t payload_len) {
    return static_cast<uint8_t>((0 - payload_len) & 3);
}

// Whole UDP payload for one packet: header_length + payload + pad + ICRC. 0 if opcode invalid.
size_t packet_length(uint8_t opcode, size_t payload_len);

// Writes BTH + the extension headers of h.opcode (big-endian) to `out`, which must have room
// for header_length(h.opcode) bytes. Uses h.pad_count as given; reserved bits are written as 0
// and 24-bit fields are masked to 24 bits. Returns the bytes written, 0 if h.opcode is invalid.
size_t encode(const Headers& h, uint8_t* out);

// Builds a whole packet but the ICRC: headers (with pad_count computed from payload_len,
// whatever h.pad_count says), payload, zero pad, and 4 zero bytes where finish_icrc() (icrc.h)
// writes the ICRC. `out` needs packet_length(h.opcode, payload_len) bytes; payload may be null
// when payload_len is 0. Returns packet_length(...), or 0 (nothing written) if h.opcode is
// invalid or payload_len > 0 for an opcode without payload.
size_t build(const Headers& h, const uint8_t* payload, size_t payload_len, uint8_t* out);

// Same as build() but does not copy a payload: the caller has written, or will write, the
// payload_len payload bytes at out + header_length(h.opcode) itself (e.g. DMA straight into the
// packet buffer). Headers, pad and the zeroed ICRC slot are written around them.
size_t build_in_place(const Headers& h, size_t payload_len, uint8_t* out);

enum class ParseResult : uint8_t {
    Ok = 0,
    TooShort,          // shorter than BTH, or than header + pad + ICRC for its opcode
    BadOpcode,         // opcode not in the table (unknown, RD, reserved, CNP, vendor)
    BadVersion,        // BTH TVer != 0
    BadPad,            // pad count inconsistent with the length
    BadLength,         // packet length not a multiple of 4
    UnexpectedPayload, // payload bytes (or pad) on an opcode that carries none
};

// Short English text for logs, e.g. "bad transport header version".
const char* describe(ParseResult r);

// Parses one RoCE v2 UDP payload: `data`/`len` = BTH ... payload, pad, 4-byte ICRC. On Ok fills
// `h` (all BTH fields plus the opcode's extension headers), sets *payload to the first payload
// byte inside `data` and *payload_len to len - header - pad - ICRC. Checks: len >= 12, opcode
// valid, TVer 0, len >= header + pad + ICRC, len % 4 == 0, and no payload or pad on opcodes
// without payload. Never reads outside [data, data + len). Does NOT check the ICRC (icrc.h) nor
// anything that needs QP state (P_Key, QPN, PSN, opcode sequence). payload/payload_len may be
// null. On failure `h` may be partly written and *payload / *payload_len are not touched.
ParseResult parse(const uint8_t* data, size_t len, Headers& h, const uint8_t** payload,
                  size_t* payload_len);

// --- AETH syndrome (IBA 9.7.5.1): bit 7 reserved 0; bits 6:5 kind; bits 4:0 value ---

enum class SyndromeKind : uint8_t { Ack, RnrNak, Nak, Reserved };

// NAK codes (bits 4:0 of a NAK syndrome).
enum class NakCode : uint8_t {
    PsnSequenceError = 0,       // 0x60: carries the expected PSN
    InvalidRequest = 1,         // 0x61
    RemoteAccessError = 2,      // 0x62
    RemoteOperationalError = 3, // 0x63
    InvalidRdRequest = 4,       // 0x64 (RD only; listed for completeness)
};

// Each NAK code's name, indexed by its value, as the NIC's logs and the timeline show it.
inline constexpr const char* kNakNames[] = {
    "PSN sequence error",       // PsnSequenceError
    "invalid request",          // InvalidRequest
    "remote access error",      // RemoteAccessError
    "remote operational error", // RemoteOperationalError
    "invalid RD request",       // InvalidRdRequest
};
static_assert(std::size(kNakNames) == static_cast<size_t>(NakCode::InvalidRdRequest) + 1,
              "a name for every NAK code");

// "reserved" for a code past the table (a syndrome classify() calls Reserved).
constexpr const char* nak_name(uint8_t code) {
    return code < std::size(kNakNames) ? kNakNames[code] : "reserved";
}
constexpr const char* nak_name(NakCode code) {
    return nak_name(static_cast<uint8_t>(code));
}

inline constexpr uint8_t kCreditsInvalid = 0x1F; // ACK credit field: "no credit count"

constexpr uint8_t aeth_ack(uint8_t credits = kCreditsInvalid) {
    return credits & 0x1F;
}
constexpr uint8_t aeth_rnr_nak(uint8_t timer_code) {
    return static_cast<uint8_t>(0x20 | (timer_code & 0x1F));
}
constexpr uint8_t aeth_nak(NakCode code) {
    return static_cast<uint8_t>(0x60 | static_cast<uint8_t>(code));
}

struct Syndrome {
    SyndromeKind kind;
    uint8_t value; // Ack: credits; RnrNak: RNR timer code; Nak: NakCode value; Reserved: bits 4:0
};

// Splits a syndrome. Reserved: bit 7 set, bits 6:5 = 10, or a NAK code above 0x64.
constexpr Syndrome classify(uint8_t syndrome) {
    uint8_t value = syndrome & 0x1F;
    if (syndrome & 0x80) return {SyndromeKind::Reserved, value};
    switch ((syndrome >> 5) & 3) {
    case 0:
        return {SyndromeKind::Ack, value};
    case 1:
        return {SyndromeKind::RnrNak, value};
    case 3:
        if (value <= static_cast<uint8_t>(NakCode::InvalidRdRequest))
            return {SyndromeKind::Nak, value};
        return {SyndromeKind::Reserved, value};
    default:
        return {SyndromeKind::Reserved, value};
    }
}

// RNR NAK timer codes (IBA table 45; ibv_qp_attr.min_rnr_timer) in microseconds:
// 0 = 655.36 ms, 1 = 0.01 ms, 2 = 0.02, 3 = 0.03, 4 = 0.04, 5 = 0.06, ... 31 = 491.52 ms.
inline constexpr uint32_t kRnrTimerUs[32] = {
    655360, 10,    20,    30,    40,    60,     80,     120,    160,    240,    320,
    480,    640,   960,   1280,  1920,  2560,   3840,   5120,   7680,   10240,  15360,
    20480,  30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};
constexpr uint32_t rnr_timer_us(uint8_t code) {
    return kRnrTimerUs[code & 0x1F];
}

} // namespace emu::wire
