// The emulated device's limits, as ibv_query_device reports them and the daemon enforces them.
// Sized for thousands of QPs per host on a small machine (see docs/architecture.md).
#pragma once

#include <cstdint>

namespace nicsim::limits {

inline constexpr uint32_t kMaxQp = 16384;
inline constexpr uint32_t kMaxQpWr = 16384;
inline constexpr uint32_t kMaxSge = 32;
inline constexpr uint32_t kMaxInlineData = 512;
inline constexpr uint32_t kMaxCq = 16384;
inline constexpr uint32_t kMaxCqe = 4194303; // as mlx5: perftest -q 1000 asks for 128000
inline constexpr uint32_t kMaxMr = 65536;
inline constexpr uint32_t kMaxMw = 65536;
inline constexpr uint64_t kMaxMrSize = 1ull << 40;
inline constexpr uint32_t kMaxPd = 16384;
// Outstanding READs/atomics a QP may issue, as rxe (mlx5 offers 16). A stream of READs moves
// this many messages per round trip, and software's round trip is tens of microseconds: 16 held
// ib_read_bw 4 KiB to ~700 MiB/s (perftest asks for the device's maximum).
inline constexpr uint32_t kMaxQpRdAtom = 128;
inline constexpr uint32_t kMaxSrq = 4096;
inline constexpr uint32_t kMaxSrqWr = 16384;
inline constexpr uint32_t kMaxSrqSge = 32;
inline constexpr uint32_t kMaxAh = 65536;
inline constexpr uint32_t kMaxCompChannels = 4096;
inline constexpr uint32_t kMaxMcastGrp = 8192;
inline constexpr uint32_t kMaxMcastQpAttach = 56; // QPs per group
inline constexpr uint32_t kMaxTotalMcastQpAttach = kMaxMcastGrp * kMaxMcastQpAttach;
// Raw packet QPs: the largest frame a send may carry (a jumbo frame), flow specs per rule,
// indirection tables (RSS) of up to 2^kMaxRwqIndTableLog WQs.
inline constexpr uint32_t kMaxRawFrame = 9216;
inline constexpr uint32_t kMaxFlowSpecs = 8;
inline constexpr uint32_t kMaxFlows = 16384;
inline constexpr uint32_t kMaxWq = 16384;
inline constexpr uint32_t kMaxRwqIndTables = 4096;
inline constexpr uint32_t kMaxRwqIndTableLog = 7;
// Device memory (ibv_alloc_dm), all allocations together. On-chip memory is small: a
// ConnectX-5 reports 128 KiB.
inline constexpr uint64_t kMaxDmSize = 256 * 1024;
inline constexpr uint32_t kMaxDmLogAlign = 12;    // a page: every allocation starts on one
inline constexpr uint32_t kMaxMsgSize = 1u << 30; // 1 GiB
inline constexpr int kGidTableLen = 16;
inline constexpr int kPkeyTableLen = 1;
inline constexpr uint16_t kDefaultPkey = 0xffff;
inline constexpr uint8_t kLocalCaAckDelay = 15;
inline constexpr int kNumCompVectors = 1;

// Our own ids: vendor 0x524445 is "RDE" (not a registered OUI; no real NIC uses it), so
// programs that special-case vendors (perftest) take their generic paths.
inline constexpr uint32_t kVendorId = 0x524445;
inline constexpr uint32_t kVendorPartId = 0x0001;
inline constexpr uint32_t kHwVer = 1;

} // namespace nicsim::limits
