// exchange.h: what the examples share, and nothing about RDMA itself.
//
// Before two RDMA queue pairs (QPs) can talk, each side must learn a few numbers from the other:
// the peer's QP number, its first packet sequence number (PSN), its GID (on RoCE: its IP
// address), and, for one-sided operations, where its buffer is and the key (rkey) that opens it.
// Real programs carry these over any channel they like; ibv_rc_pingpong and these examples use a
// plain TCP connection on loopback, rdma_cm (see cm_send_recv.c) does it for you.
//
// Every example is run as
//     PROG -p PORT              the server: listens on 127.0.0.1:PORT
//     PROG -p PORT 127.0.0.1    the client: connects to it
// (under rdmaemu: `rdmaemu run --host 1 -- PROG -p PORT &` and
// `rdmaemu run --host 2 -- PROG -p PORT 127.0.0.1`).
#ifndef RDMAEMU_EXAMPLES_EXCHANGE_H
#define RDMAEMU_EXAMPLES_EXCHANGE_H

#define _GNU_SOURCE // usleep

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

// Prints "FAIL: ..." and exits 1. Every error in the examples ends here, saying what failed.
#define die(...)                                                                                   \
    do {                                                                                           \
        fprintf(stderr, "FAIL: " __VA_ARGS__);                                                     \
        fprintf(stderr, "\n");                                                                     \
        exit(1);                                                                                   \
    } while (0)

// What one side tells the other. Fixed-size fields, so the struct can go over TCP as bytes
// (both ends are on the same machine, so byte order is the same too).
struct conn_info {
    uint32_t qpn;    // my QP number: the peer puts it in its QP's dest_qp_num
    uint32_t psn;    // the first PSN I send with: the peer expects it (rq_psn)
    uint8_t gid[16]; // my port's GID 0: on RoCE v2 an IPv4-mapped IPv6 address
    uint64_t addr;   // my buffer's virtual address (for the peer's one-sided operations)
    uint32_t rkey;   // the remote key of my buffer's MR
    uint32_t len;    // my buffer's length in bytes
};

struct args {
    int port;           // -p PORT
    const char* server; // the server's address (the client's last argument), NULL on the server
    int is_client;      // 1 when an address was given
    const char* me;     // "server" or "client", in front of what the example prints
};

static inline struct args parse_args(int argc, char** argv) {
    struct args a = {0, NULL, 0, NULL};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-p") == 0 && i + 1 < argc)
            a.port = atoi(argv[++i]);
        else
            a.server = argv[i];
    }
    a.is_client = a.server != NULL;
    a.me = a.is_client ? "client" : "server";
    if (a.port <= 0 || a.port > 65535)
        die("usage: %s -p PORT [SERVER_ADDRESS] (server without an address, client with one)",
            argv[0]);
    return a;
}

// Opens the side channel: the server listens and accepts one connection, the client connects
// (retrying for 10 s while the server starts). Returns the connected socket.
static inline int side_channel_open(const struct args* a) {
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)a->port)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) die("socket: %s", strerror(errno));
    if (!a->server) {
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (bind(fd, (struct sockaddr*)&sa, sizeof sa) || listen(fd, 1))
            die("listening on 127.0.0.1:%d: %s", a->port, strerror(errno));
        int conn = accept(fd, NULL, NULL);
        if (conn < 0) die("accept: %s", strerror(errno));
        close(fd);
        return conn;
    }
    if (inet_pton(AF_INET, a->server, &sa.sin_addr) != 1) die("not an IPv4 address: %s", a->server);
    for (int tries = 0; connect(fd, (struct sockaddr*)&sa, sizeof sa) != 0; tries++) {
        if (tries == 100) die("connecting to %s:%d: %s", a->server, a->port, strerror(errno));
        close(fd);
        usleep(100 * 1000);
        fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0) die("socket: %s", strerror(errno));
    }
    return fd;
}

// Sends len bytes and receives len bytes (both sides send first: the kernel buffers them).
static inline void side_channel_swap(int fd, const void* mine, void* theirs, size_t len) {
    if (send(fd, mine, len, MSG_NOSIGNAL) != (ssize_t)len) die("side channel: send failed");
    size_t got = 0;
    while (got < len) {
        ssize_t n = recv(fd, (char*)theirs + got, len - got, 0);
        if (n <= 0) die("side channel: the peer closed the connection (did it fail?)");
        got += (size_t)n;
    }
}

// A barrier: returns once the peer called it too. The examples use it for "I am done, you may
// look now": RDMA itself never tells the target of a WRITE or READ that anything happened.
static inline void side_channel_sync(int fd) {
    char mine = 'x', theirs;
    side_channel_swap(fd, &mine, &theirs, 1);
}

#endif
