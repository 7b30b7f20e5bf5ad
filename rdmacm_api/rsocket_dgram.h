// Datagram rsockets (SOCK_DGRAM) inside librdmacm: UDP semantics over UD QPs, with rdma-core's
// protocol (emu/wire/rsocket_dgram.h). The rsocket's fd is a real UDP socket bound to the
// socket's address: the first datagrams to a destination travel over it, naming our QP, until
// the peer's answer names its QP; from then on they are UD SENDs. rdma-core runs a service
// thread that reads the UDP sockets; here every call on the socket (send, receive, rpoll) reads
// what waits on it first, so no thread is needed: a datagram that came over UDP is queued for
// the app directly, where rdma-core sends it to itself through its QP.
//
// Where this differs from rdma-core, and why:
// - A socket bound to the wildcard, or used unbound, is bound to its host's own address: the
//   set's hosts share one network namespace, where the kernel would give a local destination
//   itself as the source, and a peer would answer the wrong host.
// - A datagram longer than a slot or the path MTU allows (header included) fails EMSGSIZE,
//   where rdma-core overruns its 2 KiB slot or posts a send the NIC cannot deliver.
// - No address handle to ourselves without a GRH: RoCE requires one, and nothing needs it here.
#pragma once

#include <infiniband/verbs.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

namespace rdmacm::ds {

struct Qp;

// Where datagrams go: a socket address, the local QP that sends to it, and the peer QP's
// address handle once its number is known.
struct Dest {
    sockaddr_storage addr{};
    Qp* qp = nullptr;
    ibv_ah* ah = nullptr; // none: over UDP
    uint32_t qpn = 0;
};

// One UD QP per local address of the socket, with its receive slots.
struct Qp {
    rdma_cm_id* id = nullptr;
    sockaddr_storage local{};
    uint8_t header[24] = {}; // the datagram header naming `local`
    size_t header_len = 0;
    size_t max_payload = 0; // the slot or the path MTU, less the header
    uint8_t* rbuf = nullptr;
    ibv_mr* smr = nullptr;
    ibv_mr* rmr = nullptr;
    bool armed = false; // its CQ was armed: an event may wait on the channel
};

// A datagram for the app: in a receive slot of `qp` (reposted once taken), or copied (it came
// over UDP).
struct Received {
    Qp* qp = nullptr;
    uint32_t offset = 0; // the slot's offset in qp->rbuf
    const uint8_t* data = nullptr;
    size_t length = 0;
    std::vector<uint8_t> copy;
    sockaddr_storage from{};
};

struct Socket {
    int fd = -1; // the UDP socket, and the rsocket's descriptor
    int fd_flags = 0;
    bool readable = true; // until rshutdown(SHUT_RD)
    bool writable = true; // until rshutdown(SHUT_WR)
    bool started = false; // the send buffer exists: sizes are fixed
    uint32_t sq_size = 0;
    uint32_t rq_size = 0;
    uint32_t sbuf_size = 0;
    uint32_t rbuf_size = 0;
    uint32_t sq_inline = 0;
    uint8_t* sbuf = nullptr;
    std::vector<uint32_t> free_slots; // offsets of send slots not in flight
    std::vector<std::unique_ptr<Qp>> qps;
    std::vector<std::unique_ptr<Dest>> dests;
    Dest* conn_dest = nullptr; // rconnect's: the destination of rsend
    std::deque<Received> queue;
    // A poll saw the UDP socket readable; otherwise a spinning receiver reads it once a tick.
    bool udp_ready = true;
    uint64_t udp_tick = 0;
    std::mutex mutex;

    bool nonblocking(int msg_flags) const;
};

// The datagram rsocket behind fd, or none.
Socket* lookup(int fd);

// The calls, as their r* names (errno set on failure).
int create(int domain, int type_flags);
int bind(Socket& s, const sockaddr* addr, socklen_t len);
int connect(Socket& s, const sockaddr* addr, socklen_t len);
ssize_t sendto(Socket& s, const iovec* iov, int iovcnt, int flags, const sockaddr* to,
               socklen_t tolen);
ssize_t recvfrom(Socket& s, const iovec* iov, int iovcnt, int flags, sockaddr* from,
                 socklen_t* fromlen);
int shutdown(Socket& s, int how);
int close(Socket* s);
int setsockopt(Socket& s, int level, int optname, const void* optval, socklen_t optlen);
int getsockopt(Socket& s, int level, int optname, void* optval, socklen_t* optlen);
int fcntl(Socket& s, int cmd, int arg);

// For rpoll: what poll() would say now, after taking what arrived.
short revents(Socket& s, short events);
// For rpoll's sleep: arms the CQs and appends the fds to sleep on; true when the socket
// turned ready meanwhile (then nothing is appended).
bool arm(Socket& s, short events, std::vector<pollfd>& sleep_on);
// For rpoll, after its sleep: fd, one that arm() appended, was ready.
void woke(Socket& s, int fd);

// --- between rsocket_dgram.cpp (sockets, addresses, QPs) and rsocket_dgram_io.cpp ---
// Fixes the sizes and makes the send slots (at the first bind, connect or send). 0 or -1.
int start(Socket& s);
// Binds an unbound socket to its host's own address (port 0). 0 or -1.
int ensure_bound(Socket& s);
// The destination for `addr`, made with its local QP when new; null with errno on failure.
Dest* get_dest(Socket& s, const sockaddr* addr, socklen_t len);
// The peer's QP is `qpn`: a new address handle to it (none when its route does not resolve).
void make_ah(Dest& d, uint32_t qpn);
// Hands a receive slot of qp back to the NIC.
void repost(Socket& s, Qp& qp, uint32_t offset);
socklen_t addr_len(const sockaddr* addr);
bool same_addr(const sockaddr* a, const sockaddr* b);

} // namespace rdmacm::ds
