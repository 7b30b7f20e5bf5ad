#include "emu/keys.h"

#include <catch2/catch.hpp>

#include <deque>
#include <unordered_set>
#include <vector>

using emu::KeyAllocator;

namespace {

std::vector<uint32_t> draw(KeyAllocator& keys, size_t n) {
    std::vector<uint32_t> out;
    out.reserve(n);
    for (size_t i = 0; i < n; ++i)
        out.push_back(keys.allocate());
    return out;
}

} // namespace

TEST_CASE("keys: 100k live keys are unique and never 0 or 0xFFFFFFFF", "[keys]") {
    KeyAllocator keys;
    std::unordered_set<uint32_t> seen;
    for (int i = 0; i < 100000; ++i) {
        uint32_t k = keys.allocate();
        REQUIRE(k != 0);
        REQUIRE(k != 0xFFFFFFFF);
        REQUIRE(seen.insert(k).second);
    }
    CHECK(keys.size() == 100000);
}

TEST_CASE("keys: 0, 0xFFFFFFFF and live keys are drawn again", "[keys]") {
    // A scripted source: the allocator must skip the reserved values and a key that is live,
    // and hand out exactly what the source gave otherwise.
    std::deque<uint32_t> script{0, 5, 0xFFFFFFFF, 5, 0, 7, 5};
    KeyAllocator keys([&] {
        REQUIRE_FALSE(script.empty());
        uint32_t v = script.front();
        script.pop_front();
        return v;
    });
    CHECK(keys.allocate() == 5);
    CHECK(keys.allocate() == 7);
    CHECK(script.size() == 1); // 0, 0xFFFFFFFF, the live 5 and 0 were drawn and passed over
    CHECK(keys.release(5));
    CHECK(keys.allocate() == 5); // released: the source may give it again
    CHECK(script.empty());
}

TEST_CASE("keys: the kernel source gives unrelated words across instances", "[keys]") {
    // Two generators drawing from getrandom(): 2 x 4096 words (more than one 256-byte pool
    // each), no repeats within or across them beyond what chance allows (~0.008 expected).
    emu::KernelRandom a;
    emu::KernelRandom b;
    std::unordered_set<uint32_t> seen;
    size_t repeats = 0;
    for (int i = 0; i < 4096; ++i) {
        repeats += !seen.insert(a()).second;
        repeats += !seen.insert(b()).second;
    }
    CHECK(repeats <= 1);
}

TEST_CASE("keys: release and live", "[keys]") {
    KeyAllocator keys;
    uint32_t a = keys.allocate();
    uint32_t b = keys.allocate();
    CHECK(a != b);
    CHECK(keys.live(a));
    CHECK(keys.live(b));
    CHECK(keys.size() == 2);

    CHECK(keys.release(a));
    CHECK_FALSE(keys.live(a));
    CHECK(keys.live(b));
    CHECK(keys.size() == 1);

    // A second release, or one of a key never handed out, reports that it was not live.
    CHECK_FALSE(keys.release(a));
    CHECK_FALSE(keys.release(0));
    CHECK_FALSE(keys.release(0xFFFFFFFF));
    CHECK(keys.size() == 1);

    CHECK(keys.release(b));
    CHECK(keys.size() == 0);
    CHECK_FALSE(keys.live(b));
}

TEST_CASE("keys: a released key does not come back as the next key", "[keys]") {
    // Keys are drawn, not recycled: a stale rkey held by a peer must not name the next MR.
    KeyAllocator keys;
    for (int i = 0; i < 1000; ++i) {
        uint32_t k = keys.allocate();
        keys.release(k);
        uint32_t next = keys.allocate();
        REQUIRE(next != k);
        keys.release(next);
    }
}

TEST_CASE("keys: two allocators share no keys", "[keys]") {
    // Keys of one device say nothing about another's: 256 x 256 pairs out of 2^32 values
    // (a shared key is a 1-in-65536 fluke).
    KeyAllocator a;
    KeyAllocator b;
    auto sa = draw(a, 256);
    std::unordered_set<uint32_t> in_a(sa.begin(), sa.end());
    size_t shared = 0;
    for (uint32_t k : draw(b, 256))
        shared += in_a.count(k);
    CHECK(shared == 0);
}

TEST_CASE("keys: every bit of the key varies", "[keys]") {
    // A key whose low byte were an index or whose top bits were fixed would be guessable.
    KeyAllocator keys;
    uint32_t ones = 0;
    uint32_t zeros = 0;
    std::vector<int> set_count(32, 0);
    const int n = 20000;
    for (int i = 0; i < n; ++i) {
        uint32_t k = keys.allocate();
        ones |= k;
        zeros |= ~k;
        for (int bit = 0; bit < 32; ++bit)
            set_count[bit] += (k >> bit) & 1;
    }
    CHECK(ones == 0xFFFFFFFF);
    CHECK(zeros == 0xFFFFFFFF);
    for (int bit = 0; bit < 32; ++bit) {
        INFO("bit " << bit);
        // Fair coin over 20000 draws: mean 10000, sigma ~71; 600 is more than 8 sigma.
        CHECK(set_count[bit] > n / 2 - 600);
        CHECK(set_count[bit] < n / 2 + 600);
    }
}

TEST_CASE("keys: consecutive keys are not sequential", "[keys]") {
    KeyAllocator keys;
    auto seq = draw(keys, 1000);
    int small_steps = 0;
    for (size_t i = 1; i < seq.size(); ++i) {
        uint32_t d = seq[i] - seq[i - 1];
        if (d < 0x10000 || d > 0xFFFF0000) ++small_steps;
    }
    CHECK(small_steps < 5); // Expected ~0.03 for random keys.
}

TEST_CASE("keys: a window's block of 256 keys is its own while it lives", "[keys]") {
    // Scripted: 0x12345678 makes a block (0x123456..); then MR keys inside it are drawn again,
    // one outside is taken. A block with a live key in it, and the blocks of 0 and 0xFFFFFFFF,
    // are never a window's.
    std::deque<uint32_t> script{0x12345678, 0x123456AA, 0x12345600, 0x99,
                                0x00000042, 0xFFFFFF10, 0x00000099, 0x77777777};
    KeyAllocator keys([&] {
        REQUIRE_FALSE(script.empty());
        uint32_t v = script.front();
        script.pop_front();
        return v;
    });
    CHECK(keys.allocate_block() == 0x12345678);
    CHECK(keys.block_live(0x123456FF));
    CHECK(keys.allocate() == 0x99); // 0x123456AA and 0x12345600 lie in the window's block
    CHECK_FALSE(keys.claim(0x12345601));
    // Block 0 holds key 0, block 0xFFFFFF holds 0xFFFFFFFF, block 0 also holds the live 0x99.
    CHECK(keys.allocate_block() == 0x77777777);
    CHECK(script.empty());
    CHECK(keys.blocks() == 2);
    CHECK(keys.release_block(0x12345601)); // any key of the block names it
    CHECK_FALSE(keys.block_live(0x12345678));
    CHECK_FALSE(keys.release_block(0x12345678));
    CHECK(keys.claim(0x12345601));
}
