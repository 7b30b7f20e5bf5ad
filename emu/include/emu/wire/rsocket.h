// The wire protocol of stream rsockets (SOCK_STREAM over an RC QP), as rdma-core's librdmacm
// speaks it (rsocket.c, rdma-core 44), so that an emulated host can talk to a Linux host running
// rdma-core's rsockets over RoCE:
//
// - The connect header: 40 bytes at the start of the REQ's and the REP's private data (after the
//   IP CM header in the REQ): version 1, flags, the receive credits, the size of the iomap table,
//   where the peer may write buffer updates (the "target SGL") and the first half of the
//   receive buffer. Multi-byte fields are big-endian.
// - Every message is an RDMA WRITE WITH IMMEDIATE (or a zero-length one) whose 32-bit immediate
//   names it: the top 3 bits the operation, the low 29 its argument (bytes written, receive
//   credits, a control code or an iomap index).
// - Buffer updates the receiver writes into the sender's target buffer ({addr, key, length}
//   descriptors, and {offset, descriptor} iomap entries) are in the byte order of the side they
//   are written to: a writer whose order differs from its peer's (the connect header's
//   kFlagNetOrder says) swaps them.
#pragma once

#include <endian.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace emu::wire::rsocket {

inline constexpr uint8_t kVersion = 1;
inline constexpr uint8_t kFlagNetOrder = 1 << 0; // the sender's host order is big-endian
inline constexpr uint8_t kFlagIomap = 1 << 1;    // an iomap table follows the target SGL

// How many receive-buffer descriptors the target SGL holds: the receiver grants its two
// halves in turn.
inline constexpr uint32_t kTargetSglEntries = 2;

// A buffer descriptor, as it lies in memory and travels in RDMA writes.
struct Sge {
    uint64_t addr;
    uint32_t key;
    uint32_t length;
};
static_assert(sizeof(Sge) == 16);

// An iomap entry: the peer may RDMA WRITE into `sge` at offsets [offset, offset + length).
struct IoMap {
    uint64_t offset;
    Sge sge;
};
static_assert(sizeof(IoMap) == 24);

// The connect header, in host order here; encode/decode do the wire's big-endian.
struct ConnData {
    uint8_t version = kVersion;
    uint8_t flags = 0;
    uint16_t credits = 0;          // receives the sender posted: messages its peer may send
    uint8_t target_iomap_size = 0; // iomap entries, scaled (to_scale)
    Sge target_sgl{};              // .length: entries (kTargetSglEntries)
    Sge data_buf{};                // the first half of the receive buffer
};
inline constexpr size_t kConnDataSize = 40;

// Wire offsets (rs_conn_data): version 0, flags 1, credits 2, reserved 4..6, iomap size 7,
// target_sgl 8 (addr, key, length), data_buf 24.
inline void encode(const ConnData& c, uint8_t* out) {
    std::memset(out, 0, kConnDataSize);
    out[0] = c.version;
    out[1] = c.flags;
    const uint16_t credits = htobe16(c.credits);
    std::memcpy(out + 2, &credits, 2);
    out[7] = c.target_iomap_size;
    auto put_sge = [](uint8_t* p, const Sge& s) {
        const uint64_t addr = htobe64(s.addr);
        const uint32_t key = htobe32(s.key);
        const uint32_t length = htobe32(s.length);
        std::memcpy(p, &addr, 8);
        std::memcpy(p + 8, &key, 4);
        std::memcpy(p + 12, &length, 4);
    };
    put_sge(out + 8, c.target_sgl);
    put_sge(out + 24, c.data_buf);
}

// False when `len` is short of a header or the version is not ours.
inline bool decode(const uint8_t* in, size_t len, ConnData& c) {
    if (!in || len < kConnDataSize) return false;
    c.version = in[0];
    c.flags = in[1];
    uint16_t credits;
    std::memcpy(&credits, in + 2, 2);
    c.credits = be16toh(credits);
    c.target_iomap_size = in[7];
    auto get_sge = [](const uint8_t* p, Sge& s) {
        uint64_t addr;
        uint32_t key, length;
        std::memcpy(&addr, p, 8);
        std::memcpy(&key, p + 8, 4);
        std::memcpy(&length, p + 12, 4);
        s = {be64toh(addr), be32toh(key), be32toh(length)};
    };
    get_sge(in + 8, c.target_sgl);
    get_sge(in + 24, c.data_buf);
    return c.version == kVersion;
}

// The operation in an immediate's top 3 bits. 1, 3 and 5 are reserved; Write never travels (it
// names a plain RDMA WRITE of riowrite in the sender's own completions).
enum class Op : uint8_t {
    Data = 0,     // data: bytes written into the receive buffer
    Write = 2,    // riowrite's RDMA WRITE (no immediate)
    Sgl = 4,      // receive credits (the sequence number up to which the peer may send)
    IomapSgl = 6, // an iomap entry was written: its index
    Ctrl = 7,     // a control code (Ctrl)
};
enum class Ctrl : uint32_t { Disconnect = 0, Keepalive = 1, Shutdown = 2 };

inline constexpr uint32_t kDataMask = 0x1FFFFFFF;
constexpr uint32_t imm(Op op, uint32_t data) {
    return static_cast<uint32_t>(op) << 29 | (data & kDataMask);
}
constexpr uint32_t op_bits(uint32_t imm) {
    return imm >> 29;
}
constexpr uint32_t data_of(uint32_t imm) {
    return imm & kDataMask;
}

// rsocket's 8-bit size encoding (rs_value_to_scale / rs_scale_to_value with 8 bits): values up
// to 128 as they are, larger ones as 0x80 | value / 256.
constexpr uint8_t to_scale(uint32_t value) {
    return static_cast<uint8_t>(value <= 128 ? value : 0x80 | ((value >> 8) & 0x7F));
}
constexpr uint32_t from_scale(uint8_t scaled) {
    return scaled <= 128 ? scaled : static_cast<uint32_t>(scaled & 0x7F) << 8;
}

constexpr bool host_is_big_endian() {
    return __BYTE_ORDER == __BIG_ENDIAN;
}

inline Sge swapped(const Sge& s) {
    return {__builtin_bswap64(s.addr), __builtin_bswap32(s.key), __builtin_bswap32(s.length)};
}
inline IoMap swapped(const IoMap& m) {
    return {__builtin_bswap64(m.offset), swapped(m.sge)};
}

} // namespace emu::wire::rsocket
