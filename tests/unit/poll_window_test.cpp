// When the NIC's loop polls after work (nicsim/daemon/poll_window.h): for --poll-us after its
// last work, and not for a while after a yield that kept it off its CPU as long as an app's slice.
#include "daemon/poll_window.h"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace nicsim;

TEST_CASE("poll window: polls for --poll-us after work, then sleeps", "[poll]") {
    PollWindow w(500, true);
    w.worked(1000);
    CHECK(w.open(1000));
    CHECK(w.open(1499));
    CHECK_FALSE(w.open(1500));
    w.worked(1600); // a message came while it slept: polling again
    CHECK(w.open(2000));
}

TEST_CASE("poll window: --poll-us 0 never polls", "[poll]") {
    PollWindow w(0, true);
    w.worked(1000);
    CHECK_FALSE(w.open(1000));
}

TEST_CASE("poll window: a short yield keeps it polling", "[poll]") {
    PollWindow w(500, true);
    w.worked(1000);
    CHECK_FALSE(w.yielded(1010, 1010 + PollWindow::kCostlyYieldUs - 1));
    CHECK(w.open(1300));
}

TEST_CASE("poll window: a costly yield now and then keeps it polling", "[poll]") {
    PollWindow w(500, true);
    uint64_t t = 1000;
    for (int i = 0; i < 3; ++i) {
        w.worked(t);
        CHECK_FALSE(w.yielded(t, t + PollWindow::kCostlyYieldUs)); // the scheduler's
        t += PollWindow::kCostlyPairUs;
    }
    w.worked(t);
    CHECK(w.open(t + 1));
}

TEST_CASE("poll window: costly yields close together suspend polling, then it tries again",
          "[poll]") {
    PollWindow w(500, true);
    w.worked(1000);
    uint64_t t = 1010;
    CHECK_FALSE(w.yielded(t, t + PollWindow::kCostlyYieldUs)); // an app that does not yield
    t += PollWindow::kCostlyYieldUs + 50;
    w.worked(t); // its next message woke the NIC
    CHECK(w.open(t + 1));
    CHECK_FALSE(w.yielded(t + 1, t + 6)); // cheap yields between do not make up for it
    const uint64_t back = t + 6 + PollWindow::kCostlyYieldUs;
    CHECK(w.yielded(t + 6, back));
    w.worked(back + 10); // work after it: the NIC still sleeps after work
    CHECK_FALSE(w.open(back + 20));
    const uint64_t resume = back + PollWindow::kSuspendUs;
    CHECK_FALSE(w.open(resume - 1));
    w.worked(resume + 5);
    CHECK(w.open(resume + 10));
    // It starts afresh: one costly yield after the pause does not suspend it again.
    CHECK_FALSE(w.yielded(resume + 10, resume + 10 + PollWindow::kCostlyYieldUs));
}

TEST_CASE("poll window: suspensions that follow each other closely double, up to a limit",
          "[poll]") {
    PollWindow w(500, true);
    uint64_t t = 1000;
    // Two costly yields, kCostlyYieldUs apart.
    auto costly_pair = [&] {
        w.worked(t);
        const bool first = w.yielded(t, t + PollWindow::kCostlyYieldUs);
        t += PollWindow::kCostlyYieldUs;
        const bool second = w.yielded(t, t + PollWindow::kCostlyYieldUs);
        t += PollWindow::kCostlyYieldUs;
        return !first && second;
    };
    uint64_t expected = PollWindow::kSuspendUs;
    for (int i = 0; i < 10; ++i) {
        REQUIRE(costly_pair());
        CHECK(w.suspension_us() == expected);
        CHECK_FALSE(w.open(t + w.suspension_us() - 1));
        t += w.suspension_us(); // polling again after work, and at once it costs again
        w.worked(t);
        CHECK(w.open(t));
        expected = std::min(2 * expected, PollWindow::kMaxSuspendUs);
    }
    CHECK(w.suspension_us() == PollWindow::kMaxSuspendUs);
    // Polling that lasted longer than the suspension before it: back to the first length.
    t += PollWindow::kMaxSuspendUs;
    REQUIRE(costly_pair());
    CHECK(w.suspension_us() == PollWindow::kSuspendUs);
}

TEST_CASE("poll window: a window asked for (--poll-us) polls whatever it costs", "[poll]") {
    PollWindow w(500, false);
    w.worked(1000);
    CHECK_FALSE(w.yielded(1000, 1000 + PollWindow::kCostlyYieldUs));
    CHECK_FALSE(w.yielded(1300, 1300 + PollWindow::kCostlyYieldUs));
    w.worked(1600);
    CHECK(w.open(1700));
}

TEST_CASE("poll window: yields while suspended neither shorten nor reset the suspension",
          "[poll]") {
    PollWindow w(500, true);
    uint64_t t = 1000;
    w.worked(t);
    REQUIRE_FALSE(w.yielded(t, t + PollWindow::kCostlyYieldUs));
    t += PollWindow::kCostlyYieldUs;
    REQUIRE(w.yielded(t, t + PollWindow::kCostlyYieldUs));
    t += PollWindow::kCostlyYieldUs;
    const uint64_t resume = t + PollWindow::kSuspendUs;
    // A busy engine yields during the suspension, costly ones too.
    CHECK_FALSE(w.yielded(t + 10, t + 10 + PollWindow::kCostlyYieldUs));
    CHECK_FALSE(w.yielded(t + 500, t + 500 + PollWindow::kCostlyYieldUs));
    w.worked(resume - 1);
    CHECK_FALSE(w.open(resume - 1));
    CHECK(w.suspension_us() == PollWindow::kSuspendUs);
}
