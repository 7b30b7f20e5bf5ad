#include "emu/keys.h"

#include <sys/random.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <random>

namespace emu {
namespace {

constexpr uint32_t kNoKey = 0;
constexpr uint32_t kAllOnes = 0xFFFFFFFF;

// splitmix64 (Steele, Lea, Flood): spreads a seed over the generator state so that close seeds
// (1, 2, 3 in tests) still give unrelated sequences.
uint64_t splitmix64(uint64_t& x) {
    uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
}

// 64 bits from the kernel's entropy pool; std::random_device and the clock only where
// getrandom() itself is unavailable (very old kernels, seccomp filters).
uint64_t os_seed() {
    uint64_t seed = 0;
    auto* p = reinterpret_cast<unsigned char*>(&seed);
    size_t got = 0;
    while (got < sizeof seed) {
        ssize_t n = getrandom(p + got, sizeof seed - got, 0);
        if (n > 0) {
            got += static_cast<size_t>(n);
        } else if (n < 0 && errno != EINTR) {
            break;
        }
    }
    if (got == sizeof seed) return seed;
    std::random_device rd;
    auto now = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    return (uint64_t{rd()} << 32) ^ rd() ^ now;
}

} // namespace

KeyAllocator::KeyAllocator(uint64_t seed) {
    uint64_t x = seed != 0 ? seed : os_seed();
    // Two outputs of splitmix64 at consecutive counters are never both zero, so the
    // xoroshiro state is never the all-zero state it cannot leave.
    state_[0] = splitmix64(x);
    state_[1] = splitmix64(x);
}

// xoroshiro128+ (Blackman, Vigna 2016). Its lowest bits are weak linear ones; allocate()
// takes the top 32.
uint64_t KeyAllocator::next_random() {
    const uint64_t s0 = state_[0];
    uint64_t s1 = state_[1];
    const uint64_t result = s0 + s1;
    s1 ^= s0;
    state_[0] = rotl(s0, 24) ^ s1 ^ (s1 << 16);
    state_[1] = rotl(s1, 37);
    return result;
}

uint32_t KeyAllocator::allocate() {
    // Collisions with live keys are rare (size()/2^32 per draw); drawing again keeps every
    // live key unique without making the next key predictable from the previous ones.
    for (;;) {
        auto key = static_cast<uint32_t>(next_random() >> 32);
        if (key == kNoKey || key == kAllOnes) continue;
        if (live_.insert(key).second) return key;
    }
}

bool KeyAllocator::claim(uint32_t key) {
    if (key == 0 || key == 0xFFFFFFFF) return false;
    return live_.insert(key).second;
}

bool KeyAllocator::release(uint32_t key) {
    return live_.erase(key) != 0;
}

} // namespace emu
