#include "net/fault_injector.h"

#include <charconv>
#include <cmath>

namespace nicsim {

namespace {

// splitmix64 (Steele, Lea, Flood): spreads a seed over the generator state so that close seeds
// (0, 1, 2, ...) give unrelated sequences.
uint64_t splitmix64(uint64_t& x) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

constexpr uint64_t rotl(uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
}

// A uniform value in [0, n) (Lemire's multiply-shift; the bias is at most n / 2^64).
uint64_t below(uint64_t random, uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(random) * n) >> 64);
}

// Distinct constants so the decision and corruption streams of one seed are unrelated.
constexpr uint64_t kCorruptionStream = 0x636f7272757074ULL; // "corrupt"

// Host 0 keeps the seed as given; another host's number, times an odd constant, is mixed in, and
// splitmix64 spreads the result into an unrelated stream.
uint64_t host_seed(uint64_t seed, uint32_t host) {
    return seed ^ (uint64_t{host} * 0x9E3779B97F4A7C15ULL);
}

} // namespace

bool FaultConfig::any() const {
    return drop > 0 || duplicate > 0 || reorder > 0 || corrupt > 0 || delay_us != 0;
}

std::optional<double> parse_probability(std::string_view text) {
    // from_chars accepts neither leading spaces nor '+'; a leading '-' is rejected here so that
    // "-0" is not taken for 0.
    if (text.empty() || text.front() == '-') return std::nullopt;
    double value = 0;
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (ec != std::errc() || ptr != end || !std::isfinite(value) || value < 0 || value > 1)
        return std::nullopt;
    return value;
}

FaultInjector::Rng::Rng(uint64_t seed) {
    // Two consecutive splitmix64 outputs are never both zero, so the state never starts at the
    // all-zero state xoroshiro cannot leave.
    s[0] = splitmix64(seed);
    s[1] = splitmix64(seed);
}

uint64_t FaultInjector::Rng::next() {
    const uint64_t s0 = s[0];
    uint64_t s1 = s[1];
    const uint64_t result = rotl(s0 * 5, 7) * 9;
    s1 ^= s0;
    s[0] = rotl(s0, 24) ^ s1 ^ (s1 << 16);
    s[1] = rotl(s1, 37);
    return result;
}

uint64_t FaultInjector::threshold(double p) {
    if (!(p > 0)) // also NaN
        return 0;
    if (p >= 1) return uint64_t{1} << 53;
    return static_cast<uint64_t>(std::ldexp(p, 53)); // p * 2^53, exact
}

FaultInjector::FaultInjector(const FaultConfig& config, uint32_t host)
    : config_(config), drop_(threshold(config.drop)), duplicate_(threshold(config.duplicate)),
      reorder_(threshold(config.reorder)), corrupt_(threshold(config.corrupt)),
      decisions_(host_seed(config.seed, host)),
      corruption_(host_seed(config.seed, host) ^ kCorruptionStream) {}

FaultInjector::Decision FaultInjector::decide() {
    // Always four draws, in a fixed order, so one fault's rate does not shift the others'.
    Decision d;
    d.drop = hit(drop_);
    d.duplicate = hit(duplicate_);
    d.reorder = hit(reorder_);
    d.corrupt = hit(corrupt_);
    if (d.drop) {
        d.duplicate = d.reorder = d.corrupt = false;
        return d;
    }
    d.delay_us = config_.delay_us;
    return d;
}

size_t FaultInjector::corrupt(uint8_t* packet, size_t len) {
    if (len == 0 || packet == nullptr) return 0;
    const uint64_t r = corruption_.next();
    const uint64_t bit = below(r, static_cast<uint64_t>(len) * 8);
    packet[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    return static_cast<size_t>(bit);
}

} // namespace nicsim
