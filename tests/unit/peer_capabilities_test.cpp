// Reading a process's effective capabilities from its /proc/PID/status text.
#include "control/peer_capabilities.h"

#include <catch2/catch.hpp>

#include <unistd.h>

using nicsim::effective_capability;

TEST_CASE("capabilities: CapEff bits", "[caps]") {
    std::string status = "Name:\tx\nCapInh:\t0000000000000000\nCapPrm:\t000001ffffffffff\n"
                         "CapEff:\t0000000000002000\nCapBnd:\t000001ffffffffff\n";
    CHECK(effective_capability(status, 13)); // CAP_NET_RAW
    CHECK_FALSE(effective_capability(status, 12));
    CHECK_FALSE(effective_capability(status, 0));
    CHECK(effective_capability("CapEff:\tffffffffffffffff\n", 63));
    CHECK_FALSE(effective_capability("CapEff:\t0000000000000000\n", 13));
}

TEST_CASE("capabilities: missing or malformed lines give no capability", "[caps]") {
    CHECK_FALSE(effective_capability("", 13));
    CHECK_FALSE(effective_capability("CapPrm:\tffffffffffffffff\n", 13));
    CHECK_FALSE(effective_capability("CapEff:\t\n", 13));
    CHECK_FALSE(effective_capability("CapEff:\tzz\n", 13));
    CHECK_FALSE(effective_capability("XCapEff:\tffff\n", 13)); // not at a line start
    CHECK_FALSE(effective_capability("CapEff:\tffff\n", 64));
    CHECK_FALSE(effective_capability("CapEff:\tffff\n", -1));
}

TEST_CASE("capabilities: a process that does not exist has none", "[caps]") {
    CHECK_FALSE(nicsim::process_has_net_raw(0));
    CHECK_FALSE(nicsim::process_has_net_raw(-5));
}
