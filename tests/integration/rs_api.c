// rs_api: the rsocket calls one by one, in one process on one host that connects to its own
// address (as a socket program can), checking what each returns as rdma-core documents it
// (rsocket(7)) and TCP programs expect: refused connects, non-blocking connect and accept
// (EINPROGRESS, EAGAIN, rpoll, SO_ERROR), names, MSG_PEEK and MSG_WAITALL, iovecs, options,
// riomap/riowrite, rselect, half-close with SHUT_WR, EOF after the peer's rclose, a blocked
// reader woken by the peer closing, and a peer process killed mid-connection; and datagram
// rsockets (names, datagrams both ways with their senders, MSG_PEEK, short reads, EMSGSIZE,
// rconnect, iovecs, shutdown).
//
// usage: rs_api ADDRESS PORT MTU   (ADDRESS: the host's own, 127.0.S.i; PORT to PORT+3 are used;
//                                  MTU: its port's path MTU, which TCP_MAXSEG reports)
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <rdma/rsocket.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (cond) {                                                                                \
            printf("ok   %s\n", #cond);                                                            \
        } else {                                                                                   \
            printf("FAIL %s (line %d, errno %d %s): ", #cond, __LINE__, errno, strerror(errno));   \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
            ++failures;                                                                            \
        }                                                                                          \
    } while (0)

static struct sockaddr_in addr_of(const char* ip, int port) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, ip, &a.sin_addr);
    return a;
}

static int listener(const char* ip, int port) {
    int l = rsocket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    struct sockaddr_in a = addr_of(ip, port);
    if (l < 0 || rsetsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
        rbind(l, (struct sockaddr*)&a, sizeof a) || rlisten(l, 8)) {
        perror("listener");
        exit(1);
    }
    return l;
}

static int wait_for(int fd, short events, int ms) {
    struct pollfd p = {.fd = fd, .events = events};
    int n = rpoll(&p, 1, ms);
    return n == 1 ? p.revents : n;
}

// A non-blocking connect and the accept that answers it, both in this thread.
static void connect_pair(const char* ip, int port, int l, int* client, int* server) {
    int c = rsocket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    rsetsockopt(c, SOL_RDMA, RDMA_IOMAPSIZE, &one, sizeof one);
    rfcntl(c, F_SETFL, rfcntl(c, F_GETFL) | O_NONBLOCK);
    struct sockaddr_in a = addr_of(ip, port);
    int r = rconnect(c, (struct sockaddr*)&a, sizeof a);
    CHECK(r == -1 && errno == EINPROGRESS, "rconnect gave %d", r);
    CHECK(wait_for(l, POLLIN, 5000) == POLLIN, "no POLLIN on the listener");
    struct sockaddr_in peer;
    socklen_t len = sizeof peer;
    int s = raccept(l, (struct sockaddr*)&peer, &len);
    CHECK(s >= 0, "raccept gave %d", s);
    CHECK(len == sizeof peer && peer.sin_addr.s_addr == a.sin_addr.s_addr, "peer address");
    CHECK(wait_for(c, POLLOUT, 5000) == POLLOUT, "the connect did not finish");
    int err = -1;
    len = sizeof err;
    CHECK(rgetsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0, "SO_ERROR %d", err);
    *client = c;
    *server = s;
}

struct reader {
    int fd;
    ssize_t ret;
    int err;
};

static void* blocked_reader(void* arg) {
    struct reader* r = arg;
    char b[16];
    r->ret = rrecv(r->fd, b, sizeof b, 0);
    r->err = errno;
    return NULL;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

// The peer that gets killed: connects, sends two bytes, waits.
static int peer(const char* ip, int port) {
    int k = rsocket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = addr_of(ip, port);
    if (rconnect(k, (struct sockaddr*)&a, sizeof a) || rsend(k, "hi", 2, 0) != 2) return 1;
    pause();
    return 0;
}

// Datagram rsockets: two sockets of this process exchange datagrams on the host's address
// (PORT+2 and PORT+3): the first over UDP, the rest as UD SENDs once the answer named a QP.
static void datagrams(const char* ip, int port) {
    int a = rsocket(AF_INET, SOCK_DGRAM, 0);
    int b = rsocket(AF_INET, SOCK_DGRAM, 0);
    CHECK(a >= 0 && b >= 0, "SOCK_DGRAM rsockets");
    struct sockaddr_in any = {.sin_family = AF_INET, .sin_port = htons(port + 2)};
    CHECK(rbind(a, (struct sockaddr*)&any, sizeof any) == 0, "rbind to the wildcard");
    struct sockaddr_in at = addr_of(ip, port + 2), bt = addr_of(ip, port + 3), me, from;
    socklen_t len = sizeof me;
    CHECK(rgetsockname(a, (struct sockaddr*)&me, &len) == 0 &&
              me.sin_addr.s_addr == at.sin_addr.s_addr && me.sin_port == at.sin_port,
          "the wildcard is the host's own address");
    CHECK(rbind(b, (struct sockaddr*)&bt, sizeof bt) == 0, "rbind to the address");
    CHECK(rlisten(a, 1) == -1 && errno == EOPNOTSUPP, "rlisten on a datagram socket");
    CHECK(rsend(b, "x", 1, 0) == -1 && errno == EDESTADDRREQ, "rsend, not connected");
    rfcntl(a, F_SETFL, O_NONBLOCK);
    char buf[2048], want[64];
    CHECK(rrecv(a, buf, sizeof buf, 0) == -1 && errno == EAGAIN, "nothing to receive: EAGAIN");
    int round_trips = 0;
    for (int i = 0; i < 50; ++i) {
        int n = snprintf(want, sizeof want, "datagram %d", i);
        if (rsendto(b, want, n, 0, (struct sockaddr*)&at, sizeof at) != n) break;
        if (wait_for(a, POLLIN, 5000) != POLLIN) break;
        len = sizeof from;
        if (rrecvfrom(a, buf, sizeof buf, 0, (struct sockaddr*)&from, &len) != n ||
            memcmp(buf, want, n) != 0 || len != sizeof from || from.sin_port != bt.sin_port ||
            from.sin_addr.s_addr != bt.sin_addr.s_addr)
            break;
        if (rsendto(a, buf, n, 0, (struct sockaddr*)&from, len) != n) break;
        if (rrecvfrom(b, buf, sizeof buf, 0, NULL, NULL) != n || memcmp(buf, want, n) != 0) break;
        ++round_trips;
    }
    CHECK(round_trips == 50, "50 datagrams there and back, sender's address seen (%d)",
          round_trips);
    CHECK(rsendto(b, "0123456789", 10, 0, (struct sockaddr*)&at, sizeof at) == 10, "rsendto");
    CHECK(wait_for(a, POLLIN, 5000) == POLLIN, "POLLIN");
    CHECK(rrecv(a, buf, 4, MSG_PEEK) == 4 && memcmp(buf, "0123", 4) == 0, "MSG_PEEK");
    CHECK(rrecv(a, buf, 3, 0) == 3 && memcmp(buf, "012", 3) == 0,
          "a short read takes the datagram");
    CHECK(rrecv(a, buf, sizeof buf, 0) == -1 && errno == EAGAIN, "its rest is gone");
    static char big[4096];
    CHECK(rsendto(b, big, sizeof big, 0, (struct sockaddr*)&at, sizeof at) == -1 &&
              errno == EMSGSIZE,
          "a datagram over the path MTU: EMSGSIZE");
    CHECK(rconnect(b, (struct sockaddr*)&at, sizeof at) == 0, "rconnect");
    len = sizeof from;
    CHECK(rgetpeername(b, (struct sockaddr*)&from, &len) == 0 && from.sin_port == at.sin_port,
          "rgetpeername after rconnect");
    struct iovec out[2] = {{"ab", 2}, {"cde", 3}};
    struct msghdr m = {.msg_iov = out, .msg_iovlen = 2};
    CHECK(rsendmsg(b, &m, 0) == 5, "rsendmsg: one datagram of two pieces");
    CHECK(wait_for(a, POLLIN, 5000) == POLLIN, "POLLIN");
    char x[2], y[8];
    struct iovec in[2] = {{x, 2}, {y, 8}};
    struct msghdr mi = {
        .msg_name = &from, .msg_namelen = sizeof from, .msg_iov = in, .msg_iovlen = 2};
    CHECK(rrecvmsg(a, &mi, 0) == 5 && memcmp(x, "ab", 2) == 0 && memcmp(y, "cde", 3) == 0 &&
              from.sin_port == bt.sin_port,
          "rrecvmsg: the datagram and its sender");
    CHECK(rshutdown(a, SHUT_RD) == 0 && rrecv(a, buf, sizeof buf, 0) == 0,
          "shut for reading: 0, as UDP");
    CHECK(rclose(a) == 0 && rclose(b) == 0, "rclose");
}

int main(int argc, char** argv) {
    if (argc == 4 && !strcmp(argv[1], "--peer")) return peer(argv[2], atoi(argv[3]));
    if (argc != 4) {
        fprintf(stderr, "usage: %s ADDRESS PORT MTU\n", argv[0]);
        return 2;
    }
    const char* ip = argv[1];
    const int port = atoi(argv[2]);
    const int mtu = atoi(argv[3]);
    setvbuf(stdout, NULL, _IOLBF, 0);

    datagrams(ip, port);
    // Other families are not sockets rsockets make.
    CHECK(rsocket(AF_UNIX, SOCK_STREAM, 0) == -1, "AF_UNIX");
    CHECK(rclose(12345) == -1 && errno == EBADF, "rclose of no rsocket");

    // Nobody listens on port+1: refused at once.
    int c0 = rsocket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in none = addr_of(ip, port + 1);
    CHECK(rconnect(c0, (struct sockaddr*)&none, sizeof none) == -1 && errno == ECONNREFUSED,
          "rconnect to a port nobody listens on");
    char b[256];
    CHECK(rsend(c0, "x", 1, 0) == -1 && errno == ENOTCONN, "rsend after a refused connect");
    rclose(c0);

    int l = listener(ip, port);
    rfcntl(l, F_SETFL, O_NONBLOCK);
    CHECK(raccept(l, NULL, NULL) == -1 && errno == EAGAIN, "non-blocking raccept, nobody there");
    CHECK(wait_for(l, POLLIN, 0) == 0, "a quiet listener polls empty");

    int c, s;
    connect_pair(ip, port, l, &c, &s);
    struct sockaddr_in me, them;
    socklen_t len = sizeof me;
    CHECK(rgetsockname(c, (struct sockaddr*)&me, &len) == 0 && me.sin_port != 0, "rgetsockname");
    len = sizeof them;
    CHECK(rgetpeername(s, (struct sockaddr*)&them, &len) == 0 && them.sin_port == me.sin_port,
          "the server's peer is the client's name");
    len = sizeof them;
    CHECK(rgetpeername(c, (struct sockaddr*)&them, &len) == 0 && them.sin_port == htons(port),
          "the client's peer is the listener's port");

    // Options.
    int v = 0;
    len = sizeof v;
    CHECK(rgetsockopt(c, SOL_SOCKET, SO_RCVBUF, &v, &len) == 0 && v == 1 << 17, "SO_RCVBUF %d", v);
    CHECK(rgetsockopt(c, SOL_RDMA, RDMA_SQSIZE, &v, &len) == 0 && v == 384, "RDMA_SQSIZE %d", v);
    CHECK(rgetsockopt(c, IPPROTO_TCP, TCP_MAXSEG, &v, &len) == 0 && v == mtu,
          "TCP_MAXSEG %d, path MTU %d", v, mtu);
    v = 1;
    CHECK(rsetsockopt(c, IPPROTO_TCP, TCP_NODELAY, &v, sizeof v) == 0, "TCP_NODELAY");
    v = 0;
    CHECK(rgetsockopt(c, IPPROTO_TCP, TCP_NODELAY, &v, &len) == 0 && v == 1, "TCP_NODELAY read");
    v = 64;
    CHECK(rsetsockopt(c, SOL_RDMA, RDMA_SQSIZE, &v, sizeof v) == -1 && errno == EINVAL,
          "RDMA_SQSIZE once connected");
    CHECK(rgetsockopt(c, SOL_SOCKET, 9999, &v, &len) == -1 && errno == ENOTSUP, "an unknown one");

    // Data: peek, then read; nothing more: EAGAIN on a non-blocking socket.
    CHECK(rsend(c, "hello", 5, 0) == 5, "rsend");
    CHECK(wait_for(s, POLLIN, 5000) == POLLIN, "POLLIN on the server");
    CHECK(rrecv(s, b, 2, MSG_PEEK) == 2 && memcmp(b, "he", 2) == 0, "MSG_PEEK");
    CHECK(rrecv(s, b, sizeof b, 0) == 5 && memcmp(b, "hello", 5) == 0, "rrecv");
    CHECK(rrecv(c, b, sizeof b, 0) == -1 && errno == EAGAIN, "nothing to read: EAGAIN");

    // iovecs both ways; MSG_WAITALL gathers two sends.
    struct iovec out[3] = {{"ab", 2}, {"cde", 3}, {"f", 1}};
    struct msghdr m = {.msg_iov = out, .msg_iovlen = 3};
    CHECK(rsendmsg(c, &m, 0) == 6, "rsendmsg");
    CHECK(rsend(c, "gh", 2, 0) == 2, "rsend");
    char x[4], y[4];
    struct iovec in[2] = {{x, 4}, {y, 4}};
    struct msghdr mi = {.msg_iov = in, .msg_iovlen = 2};
    CHECK(rrecvmsg(s, &mi, MSG_WAITALL) == 8 && memcmp(x, "abcd", 4) == 0 &&
              memcmp(y, "efgh", 4) == 0,
          "rrecvmsg with MSG_WAITALL");

    // rselect sees the rsocket readable.
    CHECK(rsend(s, "z", 1, 0) == 1, "rsend back");
    fd_set r;
    FD_ZERO(&r);
    FD_SET(c, &r);
    struct timeval tv = {5, 0};
    CHECK(rselect(c + 1, &r, NULL, NULL, &tv) == 1 && FD_ISSET(c, &r), "rselect");
    CHECK(rrecv(c, b, sizeof b, 0) == 1, "rrecv after rselect");

    // riomap on the server, riowrite from the client into it (the mapping goes with the
    // server's next send).
    static char mapped[4096];
    CHECK(riomap(s, mapped, sizeof mapped, PROT_WRITE, 0, 0) == 0, "riomap");
    CHECK(rsend(s, "m", 1, 0) == 1, "rsend carries the mapping");
    rfcntl(c, F_SETFL, 0);
    CHECK(rrecv(c, b, 1, 0) == 1, "the client has it");
    char pat[100];
    for (int i = 0; i < 100; ++i)
        pat[i] = (char)(i + 1);
    CHECK(riowrite(c, pat, sizeof pat, 10, 0) == sizeof pat, "riowrite");
    double t0 = now();
    while (memcmp(mapped + 10, pat, sizeof pat) != 0 && now() - t0 < 5)
        usleep(1000);
    CHECK(memcmp(mapped + 10, pat, sizeof pat) == 0, "the bytes are in the server's memory");
    CHECK(riowrite(c, pat, 1, 5000, 0) == (size_t)-1 && errno == EINVAL, "past the mapping");
    CHECK(riounmap(s, mapped, sizeof mapped) == 0, "riounmap");

    // SHUT_WR: the server reads EOF, can still answer; the client cannot send.
    CHECK(rshutdown(c, SHUT_WR) == 0, "rshutdown SHUT_WR");
    CHECK(rrecv(s, b, sizeof b, 0) == 0, "EOF on the server");
    CHECK(rsend(s, "back", 4, 0) == 4, "the server still sends");
    CHECK(rrecv(c, b, 4, MSG_WAITALL) == 4 && memcmp(b, "back", 4) == 0, "the client reads");
    CHECK(rsend(c, "no", 2, 0) == -1 && errno == EPIPE, "no send after SHUT_WR");

    // The server closes: the client polls POLLIN|POLLHUP and reads EOF.
    CHECK(rclose(s) == 0, "rclose");
    short ev = (short)wait_for(c, POLLIN, 5000);
    CHECK(ev == (POLLIN | POLLHUP), "POLLIN|POLLHUP after the peer closed: %#x", ev);
    CHECK(rrecv(c, b, sizeof b, 0) == 0, "EOF on the client");
    CHECK(rclose(c) == 0, "rclose");

    // A reader blocked in rrecv wakes when the peer closes.
    connect_pair(ip, port, l, &c, &s);
    rfcntl(c, F_SETFL, 0);
    struct reader rd = {.fd = c};
    pthread_t t;
    pthread_create(&t, NULL, blocked_reader, &rd);
    usleep(200000);
    t0 = now();
    rclose(s);
    pthread_join(t, NULL);
    CHECK(rd.ret == 0 && now() - t0 < 2, "the blocked rrecv returned %zd after %.2fs", rd.ret,
          now() - t0);
    rclose(c);

    // A peer process killed mid-connection: its NIC disconnects; our reader gets EOF.
    rfcntl(l, F_SETFL, 0);
    // (exec'd: a child of fork() must not use the parent's devices)
    pid_t child = fork();
    if (child == 0) {
        execl("/proc/self/exe", argv[0], "--peer", ip, argv[2], (char*)NULL);
        _exit(127);
    }
    s = raccept(l, NULL, NULL);
    CHECK(s >= 0, "raccept (blocking)");
    CHECK(rrecv(s, b, 2, MSG_WAITALL) == 2, "the child's bytes");
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    t0 = now();
    ssize_t got = rrecv(s, b, sizeof b, 0);
    CHECK((got == 0 || (got == -1 && errno == ECONNRESET)) && now() - t0 < 10,
          "rrecv after the peer was killed: %zd after %.2fs", got, now() - t0);
    rclose(s);
    rclose(l);

    printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
    return failures != 0;
}
