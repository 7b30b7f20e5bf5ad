// When the NIC's loop polls after work and when it sleeps at once (poll_loop.h).
//
// Polling yields the CPU between polls. That costs an app that polls with yields too
// (`ibv_poll_cq` on a machine of 1 or 2 CPUs) a few microseconds, and the app's next post or
// packet finds the NIC awake: no kick and no wakeup. It costs an app that spins on memory with no
// syscall (ib_write_lat waits so for the peer's WRITE) the rest of its scheduling slice at every
// message: the NIC's yield returns only when that slice ends, where a sleeping NIC would have been
// woken at once by the packet or the kick. A costly yield now and then is the scheduler's
// (measured in ib_send_lat on 2 CPUs: one of 0.2-3.5 ms every 100 ms or more); two within
// kCostlyPairUs suspend polling (the NIC sleeps after work, as with --poll-us 0), then it tries
// again, for the app may have moved on. A suspension that follows the last one closely is twice
// as long, up to kMaxSuspendUs: an app that never yields meets a polling NIC a few times a
// minute. The guard watches the default window only: `--poll-us N` polls N µs, whatever it costs.
#pragma once

#include <cstdint>

namespace nicsim {

class PollWindow {
  public:
    // Longer than a turn of the apps and NICs that yield (tens of microseconds on 2 CPUs),
    // shorter than the slice of a task that does not (EEVDF's base slice is 0.75 ms and more).
    static constexpr uint64_t kCostlyYieldUs = 200;
    // Two costly yields closer than this suspend polling.
    static constexpr uint64_t kCostlyPairUs = 10'000;
    // The first suspension, and the longest.
    static constexpr uint64_t kSuspendUs = 100'000;
    static constexpr uint64_t kMaxSuspendUs = 6'400'000;

    // `poll_us`: how long to poll after work; 0 never polls. `guarded`: costly yields suspend
    // polling.
    PollWindow(uint64_t poll_us, bool guarded) : poll_us_(poll_us), guarded_(guarded) {}

    void worked(uint64_t now_us) { last_work_us_ = now_us; }
    // Whether to poll rather than sleep at `now_us`.
    bool open(uint64_t now_us) const {
        return poll_us_ != 0 && now_us >= resume_us_ && now_us - last_work_us_ < poll_us_;
    }
    // A yield between polls, from `before_us` to `after_us`. True when it suspended polling.
    bool yielded(uint64_t before_us, uint64_t after_us);
    // How long the last suspension was.
    uint64_t suspension_us() const { return suspend_us_; }

  private:
    uint64_t poll_us_;
    bool guarded_;
    uint64_t last_work_us_ = 0;
    uint64_t resume_us_ = 0;      // polling suspended until then
    uint64_t last_costly_us_ = 0; // when the last costly yield ended (0: none since suspending)
    uint64_t suspend_us_ = 0;     // the last suspension's length
};

} // namespace nicsim
