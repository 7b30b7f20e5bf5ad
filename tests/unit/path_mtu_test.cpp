// The path MTU `rdmaemu up` gives a host's port when --mtu is not given (tools/rdmaemu/
// path_mtu.cpp): Soft-RoCE's rule, the largest IB MTU that fits the interface's MTU less 80 bytes
// of headers, and the interface found from the host's address or its subnet.
#include "path_mtu.h"

#include <catch2/catch.hpp>

using rdmaemu::interface_mtu;
using rdmaemu::netdev_mtu;
using rdmaemu::roce_mtu_fitting;

TEST_CASE("the IB MTU that fits an interface leaves Soft-RoCE's 80 bytes for headers") {
    CHECK(roce_mtu_fitting(65536) == 4096); // loopback
    CHECK(roce_mtu_fitting(9000) == 4096);  // jumbo frames
    CHECK(roce_mtu_fitting(4176) == 4096);
    CHECK(roce_mtu_fitting(4175) == 2048);
    CHECK(roce_mtu_fitting(1500) == 1024); // Ethernet
    CHECK(roce_mtu_fitting(1103) == 512);
    CHECK(roce_mtu_fitting(336) == 256);
    CHECK(roce_mtu_fitting(335) == 0);
}

TEST_CASE("the set's interfaces get back the path MTU they were made for") {
    for (int mtu : {256, 512, 1024, 2048, 4096})
        CHECK(roce_mtu_fitting(netdev_mtu(mtu)) == mtu);
    CHECK(netdev_mtu(1024) == 1500);
}

TEST_CASE("an address on loopback, or in its subnet, is on lo and its MTU") {
    // lo holds 127.0.0.1/8 in every network namespace where it is up, as it is where tests run.
    for (const char* address : {"127.0.0.1", "127.0.1.2", "127.255.0.9"}) {
        auto i = interface_mtu(address);
        REQUIRE(i);
        CHECK(i->name == "lo");
        CHECK(i->mtu >= 1500);
    }
}

TEST_CASE("an address no interface holds, or no address, finds no interface") {
    CHECK_FALSE(interface_mtu("not an address"));
    CHECK_FALSE(interface_mtu(""));
    // TEST-NET-3 (RFC 5737), kept for documentation: no interface's subnet covers it.
    CHECK_FALSE(interface_mtu("203.0.113.77"));
}
