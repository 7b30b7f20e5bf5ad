#include "emu/wire/psn.h"

#include <catch2/catch.hpp>

#include <random>

using namespace emu::wire;

static_assert(psn_add(0xFFFFFF, 1) == 0);
static_assert(psn_diff(0, 0xFFFFFF) == 1);
static_assert(psn_lt(0xFFFFFF, 0));

TEST_CASE("psn: add wraps at 2^24", "[wire][psn]") {
    CHECK(psn_add(0, 1) == 1);
    CHECK(psn_add(0xFFFFFF, 1) == 0);
    CHECK(psn_add(0xFFFFFE, 5) == 3);
    CHECK(psn_add(0, -1) == 0xFFFFFF);
    CHECK(psn_add(3, -5) == 0xFFFFFE);
    CHECK(psn_add(0x123456, 0x1000000) == 0x123456);
    CHECK(psn_next(0xFFFFFF) == 0);
    CHECK(psn_add(0x1FFFFFF, 0) == 0xFFFFFF); // input outside 24 bits is masked
}

TEST_CASE("psn: signed difference and comparisons across the wrap", "[wire][psn]") {
    CHECK(psn_diff(5, 3) == 2);
    CHECK(psn_diff(3, 5) == -2);
    CHECK(psn_diff(0, 0xFFFFFF) == 1);
    CHECK(psn_diff(0xFFFFFF, 0) == -1);
    CHECK(psn_diff(0x000010, 0xFFFFF0) == 0x20);
    CHECK(psn_diff(0x800000, 0) == -0x800000); // exactly half way: "before"
    CHECK(psn_diff(0x7FFFFF, 0) == 0x7FFFFF);
    CHECK(psn_lt(0xFFFFF0, 0x10));
    CHECK(psn_le(0xFFFFF0, 0x10));
    CHECK(psn_gt(0x10, 0xFFFFF0));
    CHECK(psn_ge(0x10, 0xFFFFF0));
    CHECK(psn_le(7, 7));
    CHECK(psn_ge(7, 7));
    CHECK(!psn_lt(7, 7));
    CHECK(!psn_gt(7, 7));
    CHECK(psn_compare(1, 0xFFFFFF) == 1);
    CHECK(psn_compare(0xFFFFFF, 1) == -1);
    CHECK(psn_compare(42, 42) == 0);
}

TEST_CASE("psn: matches 64-bit reference arithmetic", "[wire][psn]") {
    std::mt19937_64 rng(24);
    for (int i = 0; i < 100000; ++i) {
        const uint32_t a = rng() & kPsnMask;
        const int64_t step = static_cast<int64_t>(rng() % 0x1000000) - 0x800000; // [-2^23, 2^23)
        const uint32_t b = psn_add(a, step);
        CHECK((static_cast<int64_t>(a) + step - static_cast<int64_t>(b)) % 0x1000000 == 0);
        REQUIRE(psn_diff(b, a) == step);
        REQUIRE(psn_compare(b, a) == (step > 0) - (step < 0));
        REQUIRE(psn_lt(b, a) == (step < 0));
        REQUIRE(psn_in_window(b, a, 0x800000) == (step >= 0));
    }
}

TEST_CASE("psn: window membership", "[wire][psn]") {
    CHECK(psn_in_window(0xFFFFFE, 0xFFFFFE, 4));
    CHECK(psn_in_window(0x000001, 0xFFFFFE, 4));
    CHECK(!psn_in_window(0x000002, 0xFFFFFE, 4));
    CHECK(!psn_in_window(0xFFFFFD, 0xFFFFFE, 4));
    CHECK(!psn_in_window(5, 5, 0));
}
