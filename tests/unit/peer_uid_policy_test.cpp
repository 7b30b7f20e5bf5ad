#include "control/peer_uid_policy.h"

#include <catch2/catch.hpp>

using nicsim::PeerUidPolicy;

TEST_CASE("peer uid: the daemon's own uid and root are let in, others are not", "[peer_uid]") {
    PeerUidPolicy policy(1000, {});
    CHECK(policy.allows(1000));
    CHECK(policy.allows(0));
    CHECK_FALSE(policy.allows(1001));
    CHECK_FALSE(policy.allows(65534));
    CHECK(policy.describe() == "uid 0 (root), 1000 (the daemon's)");
}

TEST_CASE("peer uid: a shared set also lets in the uids it names", "[peer_uid]") {
    PeerUidPolicy policy(0, {1000, 1002});
    CHECK(policy.allows(0));
    CHECK(policy.allows(1000));
    CHECK(policy.allows(1002));
    CHECK_FALSE(policy.allows(1001));
    CHECK(policy.describe() == "uid 0 (root), 1000, 1002");
}
