// 24-bit packet sequence numbers (IBA 9.7.1): every PSN computation is modulo 2^24, and two
// PSNs compare by the sign of their 24-bit difference, so a window of up to 2^23 PSNs is
// ordered correctly across the wrap from 0xFFFFFF to 0 (rxe's psn_compare).
#pragma once

#include <cstdint>

namespace emu::wire {

inline constexpr uint32_t kPsnMask = 0x00FFFFFF;
inline constexpr uint32_t kPsnModulus = 0x01000000;

// (psn + n) mod 2^24; n may be negative.
constexpr uint32_t psn_add(uint32_t psn, int64_t n) {
    return static_cast<uint32_t>(static_cast<uint64_t>(psn) + static_cast<uint64_t>(n)) & kPsnMask;
}
constexpr uint32_t psn_next(uint32_t psn) {
    return psn_add(psn, 1);
}

// Signed distance a - b modulo 2^24, in [-2^23, 2^23): > 0 when a is after b.
constexpr int32_t psn_diff(uint32_t a, uint32_t b) {
    // Put the 24-bit difference in the top bits of a 32-bit value and shift back arithmetically.
    uint32_t d = ((a - b) & kPsnMask) << 8;
    return static_cast<int32_t>(d) >> 8;
}

// <0, 0 or >0 as a is before, equal to or after b (rxe psn_compare).
constexpr int psn_compare(uint32_t a, uint32_t b) {
    int32_t d = psn_diff(a, b);
    return (d > 0) - (d < 0);
}
constexpr bool psn_lt(uint32_t a, uint32_t b) {
    return psn_diff(a, b) < 0;
}
constexpr bool psn_le(uint32_t a, uint32_t b) {
    return psn_diff(a, b) <= 0;
}
constexpr bool psn_gt(uint32_t a, uint32_t b) {
    return psn_diff(a, b) > 0;
}
constexpr bool psn_ge(uint32_t a, uint32_t b) {
    return psn_diff(a, b) >= 0;
}

// True when psn lies in [first, first + count) modulo 2^24 (count <= 2^23).
constexpr bool psn_in_window(uint32_t psn, uint32_t first, uint32_t count) {
    return ((psn - first) & kPsnMask) < count;
}

} // namespace emu::wire
