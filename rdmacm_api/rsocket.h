// Stream rsockets inside librdmacm: the socket object behind each rsocket fd, the table of them,
// and the calls the rsocket API files share (rsockets.cpp: lifetime, connecting, options;
// rsocket_io.cpp: sending, receiving, iomaps; rsocket_poll.cpp: waiting, rpoll, rselect).
//
// An rsocket's fd is its CM ID's event channel fd, as in rdma-core: a real fd, which rpoll
// watches until the connection is up; afterwards rpoll watches the completion channel of the
// socket's CQ (and the channel still, for a disconnect). Every fd the socket owns is
// O_NONBLOCK; a blocking call waits for it with poll(2) itself, so that blocking and
// non-blocking sockets share one state machine.
#pragma once

#include "rsocket_flow.h"

#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <sys/socket.h>

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace rdmacm::rs {

// The defaults rdma-core reads from /etc/rdma/rsocket (one number per file); the same files
// are read here, once.
struct Defaults {
    uint32_t polling_time_us = 10; // polling_time: spin this long before sleeping
    int wake_up_interval_ms = 500; // wake_up_interval: rpoll re-checks at least this often
    uint32_t inline_size = 64;     // inline_default
    uint32_t sq_size = 384;        // sqsize_default
    uint32_t rq_size = 384;        // rqsize_default
    uint32_t rbuf_size = 1 << 17;  // mem_default
    uint32_t sbuf_size = 1 << 17;  // wmem_default
    uint32_t iomap_size = 0;       // iomap_size
};
const Defaults& defaults();

enum class Phase : uint8_t {
    Idle,
    Bound,
    Listening,
    ResolvingAddr,  // the active side's steps, driven by drive_connect()
    ResolvingRoute, //
    Connecting,     //
    Accepting,      // accepted, waiting for ESTABLISHED
    Open,           // the flow runs (its link says whether it is still connected)
    ConnectError,   // connecting failed: err says why
};

constexpr bool opening(Phase p) {
    return p >= Phase::ResolvingAddr && p <= Phase::Accepting;
}

class VerbsQp : public QpPort {
  public:
    ibv_qp* qp = nullptr;
    int post_send(ibv_send_wr& wr) override;
    int post_recv(ibv_recv_wr& wr) override;
};

// One riomap: a slot of the peer's iomap table (index >= 0, sent once) or a local mapping.
struct IomapMr {
    ibv_mr* mr = nullptr;
    uint64_t offset = 0;
    int index = -1;
    bool sent = false;
};

struct RSocket {
    int fd = -1;
    rdma_cm_id* id = nullptr; // a synchronous ID: its own event channel
    Phase phase = Phase::Idle;
    int err = 0; // SO_ERROR
    int retries = 0;
    int fd_flags = 0; // F_GETFL: O_NONBLOCK is the only one acted on

    // Options (set before connecting) and the sizes they give.
    uint32_t sbuf_size = 0;
    uint32_t rbuf_size = 0;
    uint32_t sq_size = 0;
    uint32_t rq_size = 0;
    uint32_t sq_inline = 0;
    uint32_t iomap_size = 0; // entries of our iomap table the peer may fill
    uint64_t so_opts = 0;    // 1 << SO_xxx of the boolean SOL_SOCKET options set
    uint64_t tcp_opts = 0;   // 1 << TCP_xxx
    uint64_t ipv6_opts = 0;
    bool keepalive = false;
    unsigned keepalive_time = 0; // seconds
    std::vector<uint8_t> route;  // RDMA_ROUTE: path records to use instead of resolving

    // The connection.
    uint8_t* sbuf = nullptr; // send ring + control slots
    uint8_t* rbuf = nullptr;
    uint8_t* target = nullptr;
    size_t target_len = 0;
    ibv_mr* smr = nullptr;
    ibv_mr* rmr = nullptr;
    ibv_mr* tmr = nullptr;
    ibv_cq* cq = nullptr; // id->send_cq == id->recv_cq
    ibv_comp_channel* comp = nullptr;
    VerbsQp port;
    std::unique_ptr<StreamFlow> flow;
    int wake_fd = -1;           // an eventfd: another thread changed the state (rshutdown)
    uint64_t last_cm_check = 0; // CLOCK_MONOTONIC ms of the last look at the CM channel

    std::vector<IomapMr> iomaps; // guarded by mutex

    // mutex guards everything above once the socket is in the table; send_mutex and
    // recv_mutex make rsend and rrecv calls one at a time each. One thread at a time sleeps on
    // the socket's fds (waiter); others wait on cv for it to come back.
    std::mutex mutex;
    std::mutex send_mutex;
    std::mutex recv_mutex;
    std::condition_variable cv;
    bool waiter = false;

    bool nonblocking(int msg_flags) const {
        return (fd_flags & O_NONBLOCK) || (msg_flags & MSG_DONTWAIT);
    }
};

// The table: rsocket fd -> socket.
RSocket* lookup(int fd);

// --- rsockets.cpp ---
// One step of connecting (the active side's, or the accepted side's wait for ESTABLISHED), with
// s.mutex held: 0 once Open, -1 with errno EAGAIN while waiting for the CM, other errno when it
// failed (phase ConnectError, s.err).
int drive_connect(RSocket& s);
// Waits (unless nonblocking: EINPROGRESS) until the socket is Open. 0 or -1 with errno.
int finish_connect(RSocket& s, std::unique_lock<std::mutex>& lock, bool nonblock);

// --- rsocket_poll.cpp ---
// One pass over the CQ: completions into the flow, receives reposted, credits granted.
void progress(RSocket& s);
// Takes the CM events waiting on the ID's channel (a disconnect closes the flow).
void take_cm_events(RSocket& s);
// Acknowledges the completion events waiting on the socket's completion channel.
void take_cq_events(RSocket& s);
// Drives an Open socket until ready(s), with s.mutex held through `lock` (released while
// sleeping). 0, or -1 with errno EAGAIN when nonblocking and not ready.
int wait_until(RSocket& s, std::unique_lock<std::mutex>& lock, bool nonblock,
               bool (*ready)(const RSocket&));
// Sleeps on one fd (the CM channel while connecting, a listener's channel) for at most
// timeout_ms (-1: no limit), with `lock` released. The poll(2) result.
int wait_fd(int fd, std::unique_lock<std::mutex>* lock, int timeout_ms);
// Wakes a thread sleeping on the socket's fds (after a state change it cannot see).
void kick(RSocket& s);
// poll(2) without going through an interposed poll(): under librspreload.so the app's poll is
// rdma-core's, which would look our own fds up in its table on every call.
int sys_poll(pollfd* fds, nfds_t n, int timeout_ms);

// --- keepalive (rsockets.cpp) ---
void keepalive_update(RSocket& s); // on SO_KEEPALIVE / TCP_KEEPIDLE changes
void keepalive_remove(RSocket& s);

// --- rsocket_io.cpp ---
// Sends the iomap entries riomap queued (before any data): 0 or -1 with errno.
int send_pending_iomaps(RSocket& s, std::unique_lock<std::mutex>& lock, int msg_flags);
void release_iomaps(RSocket& s);

} // namespace rdmacm::rs
