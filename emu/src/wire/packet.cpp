// RoCE v2 header encode/parse: see emu/wire/packet.h.
#include "emu/wire/packet.h"

#include <cstring>

namespace emu::wire {

namespace {

// Big-endian stores and loads of 1..8-byte fields.
inline void put16(uint8_t* p, uint16_t v) {
    p[0] = static_cast<uint8_t>(v >> 8);
    p[1] = static_cast<uint8_t>(v);
}
inline void put24(uint8_t* p, uint32_t v) {
    p[0] = static_cast<uint8_t>(v >> 16);
    p[1] = static_cast<uint8_t>(v >> 8);
    p[2] = static_cast<uint8_t>(v);
}
inline void put32(uint8_t* p, uint32_t v) {
    p[0] = static_cast<uint8_t>(v >> 24);
    put24(p + 1, v);
}
inline void put64(uint8_t* p, uint64_t v) {
    put32(p, static_cast<uint32_t>(v >> 32));
    put32(p + 4, static_cast<uint32_t>(v));
}
inline uint16_t get16(const uint8_t* p) {
    return static_cast<uint16_t>((p[0] << 8) | p[1]);
}
inline uint32_t get24(const uint8_t* p) {
    return (uint32_t{p[0]} << 16) | (uint32_t{p[1]} << 8) | p[2];
}
inline uint32_t get32(const uint8_t* p) {
    return (uint32_t{p[0]} << 24) | get24(p + 1);
}
inline uint64_t get64(const uint8_t* p) {
    return (uint64_t{get32(p)} << 32) | get32(p + 4);
}

size_t write_headers(const Headers& h, uint8_t pad_count, uint8_t* out) {
    const OpcodeInfo& info = opcode_info(h.opcode);
    if (info.mask == 0) return 0;

    // BTH (IBA 9.2)
    out[0] = h.opcode;
    out[1] = static_cast<uint8_t>((h.se ? 0x80 : 0) | (h.migreq ? 0x40 : 0) |
                                  ((pad_count & 3) << 4) | (h.tver & 0x0F));
    put16(out + 2, h.pkey);
    out[4] = static_cast<uint8_t>((h.fecn ? 0x80 : 0) | (h.becn ? 0x40 : 0));
    put24(out + 5, h.dest_qpn);
    out[8] = h.ack_req ? 0x80 : 0;
    put24(out + 9, h.psn);

    const uint32_t m = info.mask;
    if (m & kHasDeth) {
        uint8_t* p = out + info.offset[static_cast<size_t>(Ext::Deth)];
        put32(p, h.deth.qkey);
        p[4] = 0;
        put24(p + 5, h.deth.src_qpn);
    }
    if (m & kHasXrceth) { // 8 reserved bits, then the 24-bit XRC SRQ number
        uint8_t* p = out + info.offset[static_cast<size_t>(Ext::Xrceth)];
        p[0] = 0;
        put24(p + 1, h.xrc_srqn);
    }
    if (m & kHasReth) {
        uint8_t* p = out + info.offset[static_cast<size_t>(Ext::Reth)];
        put64(p, h.reth.va);
        put32(p + 8, h.reth.rkey);
        put32(p + 12, h.reth.length);
    }
    if (m & kHasAtomicEth) {
        uint8_t* p = out + info.offset[static_cast<size_t>(Ext::AtomicEth)];
        put64(p, h.atomic_eth.va);
        put32(p + 8, h.atomic_eth.rkey);
        put64(p + 12, h.atomic_eth.swap_add);
        put64(p + 20, h.atomic_eth.compare);
    }
    if (m & kHasAeth) {
        uint8_t* p = out + info.offset[static_cast<size_t>(Ext::Aeth)];
        p[0] = h.aeth.syndrome;
        put24(p + 1, h.aeth.msn);
    }
    if (m & kHasAtomicAckEth)
        put64(out + info.offset[static_cast<size_t>(Ext::AtomicAckEth)], h.atomic_ack);
    if (m & kHasImmDt) // already in wire order
        std::memcpy(out + info.offset[static_cast<size_t>(Ext::ImmDt)], &h.imm, 4);
    if (m & kHasIeth) put32(out + info.offset[static_cast<size_t>(Ext::Ieth)], h.ieth_rkey);
    return info.length;
}

size_t frame(const Headers& h, size_t payload_len, uint8_t* out) {
    const OpcodeInfo& info = opcode_info(h.opcode);
    if (info.mask == 0) return 0;
    if (payload_len != 0 && !(info.mask & kHasPayload)) return 0;
    const uint8_t pad = pad_for(payload_len);
    size_t at = write_headers(h, pad, out) + payload_len;
    std::memset(out + at, 0, pad + kIcrcLength);
    return at + pad + kIcrcLength;
}

} // namespace

size_t header_length(uint8_t opcode) {
    return opcode_info(opcode).length;
}

size_t packet_length(uint8_t opcode, size_t payload_len) {
    size_t hdr = header_length(opcode);
    if (hdr == 0) return 0;
    return hdr + payload_len + pad_for(payload_len) + kIcrcLength;
}

size_t encode(const Headers& h, uint8_t* out) {
    return write_headers(h, h.pad_count, out);
}

size_t build(const Headers& h, const uint8_t* payload, size_t payload_len, uint8_t* out) {
    size_t n = frame(h, payload_len, out);
    if (n != 0 && payload_len != 0)
        std::memcpy(out + header_length(h.opcode), payload, payload_len);
    return n;
}

size_t build_in_place(const Headers& h, size_t payload_len, uint8_t* out) {
    return frame(h, payload_len, out);
}

const char* describe(ParseResult r) {
    switch (r) {
    case ParseResult::Ok:
        return "ok";
    case ParseResult::TooShort:
        return "packet shorter than its headers, pad and ICRC";
    case ParseResult::BadOpcode:
        return "unsupported or invalid opcode";
    case ParseResult::BadVersion:
        return "bad transport header version";
    case ParseResult::BadPad:
        return "pad count inconsistent with the packet length";
    case ParseResult::BadLength:
        return "packet length not a multiple of 4";
    case ParseResult::UnexpectedPayload:
        return "payload on an opcode that carries none";
    }
    return "unknown parse result";
}

ParseResult parse(const uint8_t* data, size_t len, Headers& h, const uint8_t** payload,
                  size_t* payload_len) {
    if (len < kBthLength + kIcrcLength) return ParseResult::TooShort;
    const OpcodeInfo& info = opcode_info(data[0]);
    if (info.mask == 0) return ParseResult::BadOpcode;
    const uint8_t tver = data[1] & 0x0F;
    if (tver != 0) return ParseResult::BadVersion;
    const uint8_t pad = (data[1] >> 4) & 3;
    if (len < size_t{info.length} + kIcrcLength) return ParseResult::TooShort;
    if (len % 4 != 0) return ParseResult::BadLength;
    // Header lengths and len are multiples of 4, so payload + pad is too, and a pad of 1..3
    // bytes with payload + pad == 0 is the only inconsistency left (a zero-length payload
    // has no pad).
    const size_t body = len - info.length - kIcrcLength; // payload + pad
    if (!(info.mask & kHasPayload) && body != 0) return ParseResult::UnexpectedPayload;
    if (pad > body) return ParseResult::BadPad;

    h.opcode = data[0];
    h.se = data[1] & 0x80;
    h.migreq = data[1] & 0x40;
    h.pad_count = pad;
    h.tver = tver;
    h.pkey = get16(data + 2);
    h.fecn = data[4] & 0x80;
    h.becn = data[4] & 0x40;
    h.dest_qpn = get24(data + 5);
    h.ack_req = data[8] & 0x80;
    h.psn = get24(data + 9);

    const uint32_t m = info.mask;
    if (m & kHasDeth) {
        const uint8_t* p = data + info.offset[static_cast<size_t>(Ext::Deth)];
        h.deth.qkey = get32(p);
        h.deth.src_qpn = get24(p + 5);
    }
    if (m & kHasXrceth)
        h.xrc_srqn = get24(data + info.offset[static_cast<size_t>(Ext::Xrceth)] + 1);
    if (m & kHasReth) {
        const uint8_t* p = data + info.offset[static_cast<size_t>(Ext::Reth)];
        h.reth.va = get64(p);
        h.reth.rkey = get32(p + 8);
        h.reth.length = get32(p + 12);
    }
    if (m & kHasAtomicEth) {
        const uint8_t* p = data + info.offset[static_cast<size_t>(Ext::AtomicEth)];
        h.atomic_eth.va = get64(p);
        h.atomic_eth.rkey = get32(p + 8);
        h.atomic_eth.swap_add = get64(p + 12);
        h.atomic_eth.compare = get64(p + 20);
    }
    if (m & kHasAeth) {
        const uint8_t* p = data + info.offset[static_cast<size_t>(Ext::Aeth)];
        h.aeth.syndrome = p[0];
        h.aeth.msn = get24(p + 1);
    }
    if (m & kHasAtomicAckEth)
        h.atomic_ack = get64(data + info.offset[static_cast<size_t>(Ext::AtomicAckEth)]);
    if (m & kHasImmDt) std::memcpy(&h.imm, data + info.offset[static_cast<size_t>(Ext::ImmDt)], 4);
    if (m & kHasIeth) h.ieth_rkey = get32(data + info.offset[static_cast<size_t>(Ext::Ieth)]);

    if (payload) *payload = data + info.length;
    if (payload_len) *payload_len = body - pad;
    return ParseResult::Ok;
}

} // namespace emu::wire
