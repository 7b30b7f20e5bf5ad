// Recovering an IPv4 ID from the ICRC: see emu/wire/icrc_ipv4_id.h.
#include "emu/wire/icrc_ipv4_id.h"

#include <array>

namespace emu::wire {

namespace {

constexpr uint32_t kPoly = 0xEDB88320; // reflected CRC-32 polynomial
constexpr size_t kBth = 12;
constexpr size_t kIcrc = 4;
// Bytes of the ICRC's input after the IPv4 ID field: the rest of the IPv4 header (bytes 6..19)
// and the UDP header; then the UDP payload up to the ICRC.
constexpr size_t kAfterIdInHeaders = 14 + 8;

// One step of the reflected CRC register backwards (no data): the forward step is
// r' = (r >> 1) ^ (r & 1 ? kPoly : 0); kPoly's top bit says whether the xor happened.
constexpr uint32_t back_step(uint32_t r) {
    return (r & 0x80000000u) ? ((r ^ kPoly) << 1) | 1u : r << 1;
}

// A linear map of 32-bit registers as its 32 columns: column i is the image of bit i.
using Matrix = std::array<uint32_t, 32>;

constexpr uint32_t apply(const Matrix& m, uint32_t v) {
    uint32_t r = 0;
    for (int i = 0; v; ++i, v >>= 1)
        if (v & 1) r ^= m[i];
    return r;
}

constexpr Matrix square(const Matrix& m) {
    Matrix out{};
    for (int i = 0; i < 32; ++i)
        out[i] = apply(m, m[i]);
    return out;
}

// m[k]: the register run backwards over 2^k zero bytes (2^(k+3) steps), k < 17, enough
// for any UDP payload.
struct BackPowers {
    std::array<Matrix, 17> m{};
    constexpr BackPowers() {
        Matrix one_byte{};
        for (int i = 0; i < 32; ++i) {
            uint32_t r = 1u << i;
            for (int s = 0; s < 8; ++s)
                r = back_step(r);
            one_byte[i] = r;
        }
        m[0] = one_byte;
        for (size_t k = 1; k < m.size(); ++k)
            m[k] = square(m[k - 1]);
    }
};
constexpr BackPowers kBack;

// The register `r` carried back over `n` zero bytes.
uint32_t back_over(uint32_t r, size_t n) {
    for (size_t k = 0; n; ++k, n >>= 1)
        if (n & 1) r = apply(kBack.m[k], r);
    return r;
}

uint32_t get_le32(const uint8_t* p) {
    return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

} // namespace

std::optional<uint16_t> recover_ipv4_id(const Ipv4Flow& f, const uint8_t* packet, size_t len) {
    if (len < kBth + kIcrc || len - kIcrc > (size_t{1} << 16)) return std::nullopt;
    Ipv4Flow zero = f;
    zero.ip_id = 0;
    // The ICRC's final xor cancels in the difference: what is left is the raw register change,
    // which the ID's bits caused.
    const uint32_t d = icrc(zero, packet, len - kIcrc) ^ get_le32(packet + len - kIcrc);
    // Feeding bytes b0 b1 into a zero register is starting from b0 | b1 << 8 and stepping 16
    // times, and every later byte only steps the change on: carried back over the two ID bytes
    // and everything after them, the change must be exactly the two bytes (ID high byte first).
    const uint32_t r = back_over(d, 2 + kAfterIdInHeaders + (len - kIcrc));
    if (r >> 16) return std::nullopt;
    return static_cast<uint16_t>((r & 0xFF) << 8 | r >> 8);
}

} // namespace emu::wire
