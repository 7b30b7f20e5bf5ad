// Memory keys (lkey/rkey): 32-bit values from a cryptographic generator, unique per device.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <unordered_set>

namespace emu {

// 32-bit words from the kernel's CSPRNG (getrandom(2)), fetched 256 bytes at a time.
class KernelRandom {
  public:
    uint32_t operator()();

  private:
    std::array<uint32_t, 64> pool_{};
    size_t next_ = pool_.size();
};

// Hands out keys that are unique among the live ones and unguessable: each key is a fresh draw
// from `source` (by default the kernel's CSPRNG), never 0 and never 0xFFFFFFFF (values some
// apps use as "no key"). A released key is not reused on purpose: a peer's stale rkey must not
// name the next MR, except by a 2^-32 chance.
class KeyAllocator {
  public:
    using Source = std::function<uint32_t()>;

    // `source` other than the kernel's: tests that script the draws.
    explicit KeyAllocator(Source source = KernelRandom());
    uint32_t allocate();
    // Returns false when `key` was not live.
    bool release(uint32_t key);
    // Takes `key` itself (a memory window's new rkey); false when it is live or reserved.
    bool claim(uint32_t key);
    bool live(uint32_t key) const { return live_.count(key) != 0; }
    size_t size() const { return live_.size(); }

  private:
    Source source_;
    std::unordered_set<uint32_t> live_;
};

} // namespace emu
