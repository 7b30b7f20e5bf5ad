#include "emu/uid_list.h"

#include <catch2/catch.hpp>

using emu::parse_uid_list;
using Uids = std::vector<uid_t>;

TEST_CASE("uid list: comma-separated uids", "[uid_list]") {
    CHECK(parse_uid_list("1000") == Uids{1000});
    CHECK(parse_uid_list("0,1000,65534") == Uids{0, 1000, 65534});
    CHECK(parse_uid_list("4294967294") == Uids{4294967294u});
}

TEST_CASE("uid list: anything else is refused", "[uid_list]") {
    for (const char* bad : {"", ",", "1000,", ",1000", "1000,,1001", "-1", "+5", " 5", "5 ",
                            "alice", "4294967295", "4294967296", "1e3"}) {
        INFO("'" << bad << "'");
        CHECK_FALSE(parse_uid_list(bad));
    }
}
