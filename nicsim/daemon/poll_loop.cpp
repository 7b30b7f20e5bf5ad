#include "daemon/poll_loop.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace nicsim {
namespace {

uint64_t now_us() {
    using namespace std::chrono;
    return duration_cast<microseconds>(steady_clock::now().time_since_epoch()).count();
}

// The shortest slice EEVDF grants a normal task (Linux 6.12+; older kernels ignore it).
constexpr uint64_t kSliceNs = 100'000;

// sched_setattr(2)'s struct (version 0, 48 bytes); glibc has neither the call nor the struct
// (the kernel's header clashes with <sched.h>).
struct SchedAttr {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
};
static_assert(sizeof(SchedAttr) == 48);

// The CPUs this process may run on; 0 when it cannot tell.
int usable_cpus() {
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    return ::sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 0;
}

} // namespace

PollLoop::PollLoop(boost::asio::io_context& io, Engine& engine, PollCounters& counters,
                   spdlog::logger& log, PollWindow window, bool realtime)
    : io_(io), engine_(engine), counters_(counters), log_(log), window_(window),
      leaves_kickers_cpu_(realtime) {
    if (realtime && ::sched_getaffinity(0, sizeof allowed_cpus_, &allowed_cpus_) != 0) {
        log_.warn("cannot read its CPU affinity ({}): it stays on the CPU a kick wakes it on, "
                  "also its app's",
                  std::strerror(errno));
        leaves_kickers_cpu_ = false;
    }
}

// Each pass: Asio's handlers when its descriptor said so, then a turn of the data path. After
// work the loop goes straight to sleep when the polling window is 0: epoll_wait returns at once
// if anything is ready (the link's socket is level-triggered), so nothing is missed and an idle
// pass costs no syscall of its own.
void PollLoop::run() {
    WakeSet& wake = engine_.wake_set();
    unsigned ready = WakeSet::kAll;
    window_.worked(now_us());
    for (;;) {
        size_t done = 0;
        if (ready & WakeSet::kAsio) done += io_.poll();
        if (io_.stopped()) return; // a handler stopped it (SIGTERM): nothing would wake the wait
        done += engine_.turn(ready & WakeSet::kLink);
        const uint64_t now = now_us();
        if (done) window_.worked(now);
        if (engine_.runnable() || window_.open(now)) {
            if (!done) yield(now); // polling, but an app on this CPU may be what it waits for
            ready = wake.wait(0);
        } else if (engine_.prepare_sleep()) {
            ready = wake.wait(-1);
            engine_.woke();
            if (leaves_kickers_cpu_ && (ready & WakeSet::kKick)) leave_kickers_cpu();
        } else {
            ready = 0; // a doorbell bit came as it was falling asleep: the next turn serves it
        }
    }
}

void PollLoop::yield(uint64_t before_us) {
    ::sched_yield();
    const uint64_t after_us = now_us();
    if (!window_.yielded(before_us, after_us)) return;
    ++counters_.polls_suspended;
    log_.debug("a yield kept the NIC off its CPU for {} us (an app that spins without "
               "yielding?): it sleeps after work for the next {} ms",
               after_us - before_us, window_.suspension_us() / 1000);
}

void PollLoop::leave_kickers_cpu() {
    const int cpu = ::sched_getcpu();
    if (cpu < 0 || cpu >= CPU_SETSIZE || !engine_.kicked_from(cpu)) return;
    // The CPUs it was started on, less this one: the call moves it before it returns.
    cpu_set_t others = allowed_cpus_;
    CPU_CLR(cpu, &others);
    if (CPU_COUNT(&others) == 0) return;
    if (::sched_setaffinity(0, sizeof others, &others) != 0) {
        log_.debug("woken by a kick from an app on CPU {}, cannot move off it: {}", cpu,
                   std::strerror(errno));
        return;
    }
    // Then every CPU again: a woken real-time task stays on its last CPU unless a real-time one
    // runs there, so it stays moved, and the kernel may still spread the NICs. Kept narrowed,
    // on 2 CPUs both NICs ended up held on one, where they took turns: ib_write_bw -q 100
    // moved 757-1109 MiB/s instead of 2486-2693 (bench/README.md, 2026-12-06 14:39).
    if (::sched_setaffinity(0, sizeof allowed_cpus_, &allowed_cpus_) != 0)
        log_.debug("cannot allow its other CPUs again: {}", std::strerror(errno));
    ++counters_.cpu_moves;
    log_.info("woken by a kick from an app on CPU {}: moved off it", cpu);
}

bool PollLoop::claim_cpu(spdlog::logger& log, Scheduling scheduling) {
    // On one CPU a real-time NIC has nowhere to go from its app's kick (leave_kickers_cpu): it
    // would preempt the app at every post and send one WR per wakeup.
    if (scheduling == Scheduling::Auto && usable_cpus() == 1) {
        log.info("one CPU to run on: scheduling normal (a real-time NIC would preempt its app "
                 "at every post), apps' polls yield the CPU now and then");
        scheduling = Scheduling::Normal;
    }
    if (scheduling != Scheduling::Normal) {
        // The lowest real-time priority: above every app, below the kernel's own threads.
        // It is bounded: the loop sleeps when it has no work, and polls at most --poll-us.
        sched_param param{};
        param.sched_priority = 1;
        if (::sched_setscheduler(0, SCHED_FIFO, &param) == 0) {
            log.info("scheduling: real-time (SCHED_FIFO 1)");
            return true;
        }
        // Asked for, the refusal is a warning; by default it is how most users run.
        log.log(scheduling == Scheduling::Realtime ? spdlog::level::warn : spdlog::level::info,
                "no real-time priority ({}; root or an RLIMIT_RTPRIO allows it): scheduling "
                "normal, apps' polls yield the CPU now and then",
                std::strerror(errno));
    }
    SchedAttr attr{};
    attr.size = sizeof attr;
    attr.policy = SCHED_OTHER;
    attr.runtime = kSliceNs;
    if (::syscall(SYS_sched_setattr, 0, &attr, 0) != 0)
        log.info("no short scheduling slice ({}): a busy-polling app may delay the NIC by its "
                 "slice",
                 std::strerror(errno));
    if (::setpriority(PRIO_PROCESS, 0, -10) != 0)
        log.info("running at normal priority ({}): busy-polling apps may slow the NIC down",
                 std::strerror(errno));
    return false;
}

} // namespace nicsim
