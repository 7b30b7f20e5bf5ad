#include "emu/share_limits.h"

#include <catch2/catch.hpp>

using emu::parse_share_limits;
using emu::Share;

TEST_CASE("share limits: any of qp, cq, mr, context, in any order", "[share_limits]") {
    auto all = parse_share_limits("qp=1000,cq=1000,mr=4096,context=64");
    REQUIRE(all);
    CHECK(all->of(Share::Qp) == 1000);
    CHECK(all->of(Share::Cq) == 1000);
    CHECK(all->of(Share::Mr) == 4096);
    CHECK(all->of(Share::Context) == 64);
    auto some = parse_share_limits("context=2,qp=4294967295");
    REQUIRE(some);
    CHECK(some->of(Share::Context) == 2);
    CHECK(some->of(Share::Qp) == 4294967295u);
    CHECK(some->of(Share::Cq) == 0); // no share: the device's limit only
    CHECK(some->of(Share::Mr) == 0);
}

TEST_CASE("share limits: anything else is refused", "[share_limits]") {
    for (const char* bad :
         {"", ",", "qp", "qp=", "=5", "qp=0", "qp=-1", "qp=+5", "qp= 5", "qp=5 ", "qp=4294967296",
          "qp=1e3", "pd=5", "QP=5", "qp=5,", ",qp=5", "qp=5,,cq=5", "qp=5,qp=6", "qp=5;cq=5"}) {
        INFO("'" << bad << "'");
        CHECK_FALSE(parse_share_limits(bad));
    }
}
