// Which QP sends next and when each QP's timer fires: the NIC's run queue and timer heap. The
// caller owns the clock and says when to run and when to fire, so the daemon's Engine (an event
// loop and a steady clock) and the protocol rigs (a clock the test moves) schedule alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <queue>
#include <vector>

namespace nicsim {

class Nic;
class TransportEnv;
struct Qp;

class QpScheduler {
  public:
    static constexpr int kBudgetPerTurn = 16; // packets one QP sends before the next QP's turn
    static constexpr int kTurnsPerRun = 64;   // QP turns before the NIC looks at its sockets

    explicit QpScheduler(Nic& nic) : nic_(nic) {}

    // Queues `qp` for a turn; a QP already queued keeps its place.
    void schedule(Qp& qp);
    bool runnable() const { return !runnable_.empty(); }
    // Gives up to `turns` queued QPs `budget` packets each; a QP left with packets to send goes
    // to the back of the queue. A QP destroyed while queued is skipped.
    void run(TransportEnv& env, int turns = kTurnsPerRun, int budget = kBudgetPerTurn);

    // Asks for the transport's on_timer for `qp` at `at_us` (0: none). True when the deadline
    // was queued, so the caller's wake-up may have to come earlier.
    bool set_timer(Qp& qp, uint64_t at_us);
    uint64_t next_deadline() const { return deadlines_.empty() ? 0 : deadlines_.top().first; }
    // Calls on_timer for every QP whose queued deadline is at or before `now_us`; how many.
    size_t fire_due(TransportEnv& env, uint64_t now_us);

  private:
    Nic& nic_;
    // QPs are named by QPN, never by pointer: a QP destroyed while queued is simply not found.
    std::deque<uint32_t> runnable_;
    using Deadline = std::pair<uint64_t, uint32_t>; // (time, qpn)
    std::priority_queue<Deadline, std::vector<Deadline>, std::greater<>> deadlines_;
    std::vector<uint32_t> due_; // fire_due's scratch, kept: no allocation per tick
};

} // namespace nicsim
