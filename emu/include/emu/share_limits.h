// Per-process shares of a NIC's objects on a command line (rdmaemu up --max-per-process, passed
// on to nicsimd): "qp=1000,cq=1000,mr=4096,context=64", any of them, in any order. Without a
// share a kind is limited only by the device. Parsed on both sides, so that `up` refuses a bad
// value before any daemon starts.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace emu {

enum class Share : uint8_t { Qp, Cq, Mr, Context };
inline constexpr size_t kShareKinds = 4;

// "qp", "cq", "mr", "context": the names on the command line.
const char* share_name(Share kind);

struct ShareLimits {
    std::array<uint32_t, kShareKinds> max{}; // 0: no share (the device's limit only)
    uint32_t of(Share kind) const { return max[static_cast<size_t>(kind)]; }
    bool any() const;
};

// The shares of "KIND=N[,KIND=N...]" (N from 1 to 2^32-1), or nothing when a kind is unknown
// or given twice, a number is not whole or 0, or the list is empty.
std::optional<ShareLimits> parse_share_limits(std::string_view text);

} // namespace emu
