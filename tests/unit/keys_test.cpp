#include "emu/keys.h"

#include <catch2/catch.hpp>

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

TEST_CASE("keys: a seeded allocator also stays unique (and draws again on collisions)", "[keys]") {
    // 2^17 raw draws from 2^32 values hold about two collisions (birthday bound), so with
    // this many keys the redraw path almost surely runs.
    KeyAllocator keys(12345);
    std::unordered_set<uint32_t> seen;
    for (int i = 0; i < (1 << 17); ++i) {
        uint32_t k = keys.allocate();
        REQUIRE(k != 0);
        REQUIRE(k != 0xFFFFFFFF);
        REQUIRE(seen.insert(k).second);
    }
}

TEST_CASE("keys: release and live", "[keys]") {
    KeyAllocator keys(7);
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
    KeyAllocator keys(99);
    for (int i = 0; i < 1000; ++i) {
        uint32_t k = keys.allocate();
        keys.release(k);
        uint32_t next = keys.allocate();
        REQUIRE(next != k);
        keys.release(next);
    }
}

TEST_CASE("keys: the same seed gives the same sequence", "[keys]") {
    KeyAllocator a(0xC0FFEE);
    KeyAllocator b(0xC0FFEE);
    CHECK(draw(a, 1000) == draw(b, 1000));
}

TEST_CASE("keys: different seeds give different sequences", "[keys]") {
    // Neighbouring seeds too: the seed is mixed before it becomes generator state.
    for (uint64_t seed = 1; seed < 16; ++seed) {
        KeyAllocator a(seed);
        KeyAllocator b(seed + 1);
        auto sa = draw(a, 64);
        auto sb = draw(b, 64);
        CHECK(sa != sb);
        std::unordered_set<uint32_t> in_a(sa.begin(), sa.end());
        size_t shared = 0;
        for (uint32_t k : sb)
            shared += in_a.count(k);
        CHECK(shared == 0); // 64*64 pairs out of 2^32 values: a match would be a fluke.
    }
}

TEST_CASE("keys: unseeded allocators differ from each other", "[keys]") {
    KeyAllocator a;
    KeyAllocator b;
    CHECK(draw(a, 16) != draw(b, 16));
}

TEST_CASE("keys: every bit of the key varies", "[keys]") {
    // A key whose low byte were an index or whose top bits were fixed would be guessable.
    KeyAllocator keys(2024);
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
    KeyAllocator keys(31337);
    auto seq = draw(keys, 1000);
    int small_steps = 0;
    for (size_t i = 1; i < seq.size(); ++i) {
        uint32_t d = seq[i] - seq[i - 1];
        if (d < 0x10000 || d > 0xFFFF0000) ++small_steps;
    }
    CHECK(small_steps < 5); // Expected ~0.03 for random keys.
}
