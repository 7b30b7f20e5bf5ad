// Memory keys (lkey/rkey): 32-bit values with an unguessable part, unique per device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_set>

namespace emu {

// Hands out keys that are unique among the live ones and hard to guess: each key is drawn from
// a fast PRNG (xoroshiro128+) seeded from getrandom(), never 0 and never 0xFFFFFFFF (values
// some apps use as "no key"). Not a CSPRNG: unguessable to a peer, not to cryptanalysis.
class KeyAllocator {
  public:
    // `seed` != 0 makes the sequence reproducible (tests); 0 seeds from getrandom().
    explicit KeyAllocator(uint64_t seed = 0);
    uint32_t allocate();
    // Returns false when `key` was not live.
    bool release(uint32_t key);
    // Takes `key` itself (a memory window's new rkey); false when it is live or reserved.
    bool claim(uint32_t key);
    bool live(uint32_t key) const { return live_.count(key) != 0; }
    size_t size() const { return live_.size(); }

  private:
    uint64_t next_random();
    uint64_t state_[2];
    std::unordered_set<uint32_t> live_;
};

} // namespace emu
