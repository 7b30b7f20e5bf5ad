// How the NIC shares the CPU with the apps that busy-poll it. The event loop runs what is ready
// and watches the doorbells; after work it keeps polling (sockets, doorbells) for a bounded time,
// as hardware would poll its queues, so a ping-pong's next post or packet finds it awake and the
// app's post costs no syscall, unless polling costs the apps their CPU (poll_window.h). Only
// when nothing came for that long does it tell the sessions it sleeps and block in epoll
// (wake_set.h), woken by a packet, a doorbell kick, a timer or a control request.
#pragma once

#include "daemon/engine.h"
#include "daemon/poll_window.h"

#include <boost/asio/io_context.hpp>
#include <spdlog/logger.h>

#include <cstdint>

namespace nicsim {

class PollLoop {
  public:
    // `counters`: the Nic's, for status; `window`: --poll-us, or its default and guarded.
    PollLoop(boost::asio::io_context& io, Engine& engine, PollCounters& counters,
             spdlog::logger& log, PollWindow window)
        : io_(io), engine_(engine), counters_(counters), log_(log), window_(window) {}
    // Until io.stop().
    void run();
    // The NIC's share of the CPU: a short scheduling slice, so that when a packet or a kick
    // wakes it, it preempts a busy-polling app at once instead of waiting for the app's slice
    // to end; and a higher weight where the NIC may raise it (root). With `realtime`, SCHED_FIFO
    // instead where it may (root, or RLIMIT_RTPRIO): a wakeup always preempts an app, as a
    // NIC's own processor never waits for one. True when the NIC runs real-time.
    static bool claim_cpu(spdlog::logger& log, bool realtime);

  private:
    // Leaves the CPU to whatever shares it, and learns from how long that took.
    void yield(uint64_t before_us);

    boost::asio::io_context& io_;
    Engine& engine_;
    PollCounters& counters_;
    spdlog::logger& log_;
    PollWindow window_;
};

} // namespace nicsim
