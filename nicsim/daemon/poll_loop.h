// How the NIC shares the CPU with the apps that busy-poll it. The event loop runs what is ready
// and watches the doorbells; after work it keeps polling (sockets, doorbells) for a bounded time,
// as hardware would poll its queues, so a ping-pong's next post or packet finds it awake and the
// app's post costs no syscall, unless polling costs the apps their CPU (poll_window.h). Only
// when nothing came for that long does it tell the sessions it sleeps and block in epoll
// (wake_set.h), woken by a packet, a doorbell kick, a timer or a control request.
#pragma once

#include "daemon/engine.h"
#include "daemon/poll_window.h"
#include "nic/config.h"

#include <boost/asio/io_context.hpp>
#include <spdlog/logger.h>

#include <cstdint>
#include <sched.h>

namespace nicsim {

class PollLoop {
  public:
    // `counters`: the Nic's, for status; `window`: --poll-us, or its default and guarded.
    // `realtime`: claim_cpu got it.
    PollLoop(boost::asio::io_context& io, Engine& engine, PollCounters& counters,
             spdlog::logger& log, PollWindow window, bool realtime);
    // Until io.stop().
    void run();
    // The NIC's share of the CPU: a short scheduling slice, so that when a packet or a kick
    // wakes it, it preempts a busy-polling app at once instead of waiting for the app's slice
    // to end; and a higher weight where the NIC may raise it (root). Unless `scheduling` says
    // normal, SCHED_FIFO instead where it may (root, or RLIMIT_RTPRIO; auto: and it has more
    // than one CPU): a wakeup always preempts an app, as a NIC's own processor never waits for
    // one. True when the NIC runs real-time.
    static bool claim_cpu(spdlog::logger& log, Scheduling scheduling);

  private:
    // Leaves the CPU to whatever shares it, and learns from how long that took.
    void yield(uint64_t before_us);
    // A real-time NIC woken by a kick on the kicking app's CPU would preempt that app at every
    // post, send its one WR and sleep: a datagram per message (bench/README.md, 2026-12-06
    // 11:00). It moves to the other CPUs instead, where it preempts whatever runs there.
    void leave_kickers_cpu();

    boost::asio::io_context& io_;
    Engine& engine_;
    PollCounters& counters_;
    spdlog::logger& log_;
    PollWindow window_;
    bool leaves_kickers_cpu_;  // real-time, and its CPUs known
    cpu_set_t allowed_cpus_{}; // as started (taskset): it moves within these
};

} // namespace nicsim
