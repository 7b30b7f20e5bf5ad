// The control protocol's op tables, derived from emu/ipc/ops.h: the wire values the library and
// the daemon agree on, and a name, a request length and a kind for every op.
#include "emu/ipc/cm_protocol.h"
#include "emu/ipc/protocol.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <set>
#include <string>
#include <type_traits>

using namespace emu::ipc;

// The numbering is ABI: a library and a daemon built apart must agree on it.
static_assert(static_cast<uint16_t>(Op::Hello) == 1);
static_assert(static_cast<uint16_t>(Op::QueryDevice) == 2);
static_assert(static_cast<uint16_t>(Op::CreateQp) == 16);
static_assert(static_cast<uint16_t>(Op::Status) == 26);
static_assert(static_cast<uint16_t>(Op::ReopenContext) == 48);
static_assert(static_cast<uint16_t>(Op::CmCreateChannel) == 49);
static_assert(static_cast<uint16_t>(Op::CmLeaveMcast) == 69);
static_assert(static_cast<uint16_t>(Op::Count) == 70);

TEST_CASE("control ops: every op has a name of its own", "[ipc]") {
    std::set<std::string> seen;
    for (uint16_t op = 1; op < static_cast<uint16_t>(Op::Count); ++op) {
        INFO("op " << op);
        std::string name = op_name(static_cast<Op>(op));
        CHECK(name != "unknown");
        CHECK(seen.insert(name).second);
    }
    CHECK(std::string(op_name(Op::Hello)) == "Hello");
    CHECK(std::string(op_name(Op::CreateRwqIndTable)) == "CreateRwqIndTable");
    CHECK(std::string(op_name(Op::CmLeaveMcast)) == "CmLeaveMcast");
}

TEST_CASE("control ops: values that are no op have no name and no length", "[ipc]") {
    for (uint16_t op : {uint16_t{0}, static_cast<uint16_t>(Op::Count), uint16_t{0xFFFF}}) {
        INFO("op " << op);
        CHECK(std::string(op_name(static_cast<Op>(op))) == "unknown");
        CHECK(request_length(op) == 0);
        CHECK_FALSE(is_cm_op(op));
    }
}

TEST_CASE("control ops: the CM ops are those named Cm", "[ipc]") {
    for (uint16_t op = 1; op < static_cast<uint16_t>(Op::Count); ++op) {
        const char* name = op_name(static_cast<Op>(op));
        INFO("op " << name);
        CHECK(is_cm_op(op) == (std::strncmp(name, "Cm", 2) == 0));
    }
}

TEST_CASE("control ops: a request's length is its header and its op's request struct", "[ipc]") {
    CHECK(request_length(static_cast<uint16_t>(Op::QueryDevice)) == sizeof(Header));
    CHECK(request_length(static_cast<uint16_t>(Op::RegMr)) == sizeof(Header) + sizeof(RegMrReq));
    CHECK(request_length(static_cast<uint16_t>(Op::CmConnect)) ==
          sizeof(Header) + sizeof(CmConnectReq));
    STATIC_REQUIRE(std::is_same_v<Types<Op::CreateRssQp>::Reply, CreateQpReply>);
    STATIC_REQUIRE(std::is_same_v<Types<Op::CmGetEvent>::Reply, CmEventRecord>);
}
