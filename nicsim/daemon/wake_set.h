// What the NIC's loop sleeps on: one epoll set holding the data path's descriptors (the link's
// socket, each session's doorbell eventfd), registered once and never re-armed, and Asio's own
// epoll descriptor, which is readable whenever anything Asio watches is (control sockets, timers,
// signals). Asio re-arms a descriptor with epoll_ctl at every async_wait: with the data path on
// it, every packet and every kick cost a syscall more (docs/data-path-and-wire.md).
#pragma once

#include "support/unique_fd.h"

#include <boost/asio/io_context.hpp>

namespace nicsim {

class WakeSet {
  public:
    enum Source : unsigned { kAsio = 1, kLink = 2, kKick = 4 };
    static constexpr unsigned kAll = kAsio | kLink | kKick;

    // Throws when it cannot find the epoll descriptor of `io` (whose reactor must exist).
    explicit WakeSet(boost::asio::io_context& io);
    // `edge`: reported once per event (a kick's eventfd is never read: the doorbell bits say
    // what came); otherwise while readable (the link's socket, until it is drained). False
    // with errno when epoll refuses it.
    bool watch(int fd, Source source, bool edge);
    void unwatch(int fd);
    // The sources that are ready, waiting up to `timeout_ms` for one (-1: as long as it takes).
    unsigned wait(int timeout_ms);

  private:
    UniqueFd epoll_;
};

} // namespace nicsim
