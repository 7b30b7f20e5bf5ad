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
    // Takes `key` itself; false when it is live, reserved or in a window's block.
    bool claim(uint32_t key);
    bool live(uint32_t key) const { return live_.count(key) != 0; }
    size_t size() const { return live_.size(); }

    // A memory window's rkey: its upper 24 bits (the index) are the NIC's for the window's
    // life, the low 8 (the key) are the consumer's to choose at each bind (rxe and mlx5 take
    // only the low byte of a bind's new rkey). So a window holds a whole block of
    // 256 keys: no other key is handed out inside it while it lives. Returns a key of a block
    // none of whose keys is live (its low byte drawn too).
    uint32_t allocate_block();
    // Frees the block of `key`; false when it was not a window's block.
    bool release_block(uint32_t key);
    bool block_live(uint32_t key) const { return blocks_.count(key >> 8) != 0; }
    size_t blocks() const { return blocks_.size(); }

  private:
    bool taken(uint32_t key) const;
    Source source_;
    std::unordered_set<uint32_t> live_;
    std::unordered_set<uint32_t> blocks_; // windows' indexes (key >> 8)
};

} // namespace emu
