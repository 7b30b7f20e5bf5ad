// Static-rate conversions between enum ibv_rate, multiples of the 2.5 Gb/s IB base rate, and
// Mb/s. One table drives all four; each lookup is the exact inverse of the other. The lane rates
// that are not multiples of 2.5 Gb/s (FDR10/FDR, EDR, HDR, ...) have no multiple; their Mb/s are
// the data rates after 64b/66b encoding (e.g. 100G EDR: 4 x 25.78125 Gb/s = 103125 Mb/s).
// Unknown inputs: -1 for the int results, IBV_RATE_MAX for the enum results.

#include "export.h"

#include <infiniband/verbs.h>

#include <array>

namespace {

struct RateInfo {
    ibv_rate rate;
    int mult; // of 2.5 Gb/s; -1 when the rate is no such multiple
    int mbps;
};

constexpr std::array<RateInfo, 24> rate_table = {{
    {IBV_RATE_2_5_GBPS, 1, 2500},
    {IBV_RATE_5_GBPS, 2, 5000},
    {IBV_RATE_10_GBPS, 4, 10000},
    {IBV_RATE_20_GBPS, 8, 20000},
    {IBV_RATE_30_GBPS, 12, 30000},
    {IBV_RATE_40_GBPS, 16, 40000},
    {IBV_RATE_60_GBPS, 24, 60000},
    {IBV_RATE_80_GBPS, 32, 80000},
    {IBV_RATE_120_GBPS, 48, 120000},
    {IBV_RATE_14_GBPS, -1, 14062},
    {IBV_RATE_56_GBPS, -1, 56250},
    {IBV_RATE_112_GBPS, -1, 112500},
    {IBV_RATE_168_GBPS, -1, 168750},
    {IBV_RATE_25_GBPS, -1, 25781},
    {IBV_RATE_100_GBPS, -1, 103125},
    {IBV_RATE_200_GBPS, -1, 206250},
    {IBV_RATE_300_GBPS, -1, 309375},
    {IBV_RATE_28_GBPS, 11, 28125},
    {IBV_RATE_50_GBPS, 20, 53125},
    {IBV_RATE_400_GBPS, 160, 425000},
    {IBV_RATE_600_GBPS, 240, 637500},
    {IBV_RATE_800_GBPS, 320, 850000},
    {IBV_RATE_1200_GBPS, 480, 1275000},
    // IBV_RATE_MAX ("port's maximum") has neither a multiple nor a Mb/s value.
    {IBV_RATE_MAX, -1, -1},
}};

const RateInfo* find_rate(ibv_rate rate) {
    for (const RateInfo& info : rate_table)
        if (info.rate == rate) return &info;
    return nullptr;
}

} // namespace

VERBS_EXPORT int ibv_rate_to_mult(ibv_rate rate) {
    const RateInfo* info = find_rate(rate);
    return info ? info->mult : -1;
}

VERBS_EXPORT ibv_rate mult_to_ibv_rate(int mult) {
    for (const RateInfo& info : rate_table)
        if (mult > 0 && info.mult == mult) return info.rate;
    return IBV_RATE_MAX;
}

VERBS_EXPORT int ibv_rate_to_mbps(ibv_rate rate) {
    const RateInfo* info = find_rate(rate);
    return info ? info->mbps : -1;
}

VERBS_EXPORT ibv_rate mbps_to_ibv_rate(int mbps) {
    for (const RateInfo& info : rate_table)
        if (mbps > 0 && info.mbps == mbps) return info.rate;
    return IBV_RATE_MAX;
}
