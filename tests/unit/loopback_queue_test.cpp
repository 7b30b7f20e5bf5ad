// The link's internal loopback: packets a host sends itself are delivered when the turn ends,
// oldest first, and those sent while delivering wait for the next turn.
#include "net/loopback_queue.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

TEST_CASE("loopback queue: delivers in order, and what delivery sends waits a turn", "[link]") {
    nicsim::LoopbackQueue q;
    const std::string a = "first", b = "second packet", c = "3";
    q.push(reinterpret_cast<const uint8_t*>(a.data()), a.size(), 0);
    q.push(reinterpret_cast<const uint8_t*>(b.data()), b.size(), 0x68);
    q.push(reinterpret_cast<const uint8_t*>(c.data()), c.size(), 0);
    REQUIRE(q.size() == 3);
    std::vector<std::string> got;
    std::vector<uint8_t> tos;
    q.deliver_all([&](uint8_t* data, size_t len, uint8_t t) {
        got.emplace_back(reinterpret_cast<char*>(data), len);
        tos.push_back(t);
        const std::string answer = "ack of " + got.back();
        q.push(reinterpret_cast<const uint8_t*>(answer.data()), answer.size(), 0);
    });
    CHECK(got == std::vector<std::string>{a, b, c});
    CHECK(tos == std::vector<uint8_t>{0, 0x68, 0});
    REQUIRE(q.size() == 3); // the answers, for the next turn
    got.clear();
    q.deliver_all([&](uint8_t* data, size_t len, uint8_t) {
        got.emplace_back(reinterpret_cast<char*>(data), len);
    });
    CHECK(got == std::vector<std::string>{"ack of first", "ack of second packet", "ack of 3"});
    CHECK(q.empty());
}
