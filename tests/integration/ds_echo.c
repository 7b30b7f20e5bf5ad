// ds_echo: a plain UDP echo pair written with the sockets API only (socket, bind, sendto,
// recvfrom, connect, send, recv, poll), for running under rdma-core's librspreload.so, which
// turns those calls into datagram rsockets.
//
//   ds_echo -s PORT               echo every datagram to its sender until a "bye" datagram
//   ds_echo -c ADDR PORT COUNT    send COUNT datagrams of 8 to 1000 bytes (a sequence number,
//                                 then a pattern), the first half with sendto and the second
//                                 after connect() with send; check that each comes back byte
//                                 for byte from ADDR:PORT; then "bye"
//
// UD, like UDP, may lose a datagram (IBA 10.5.3): the client sends one again after 1 s of
// silence and counts it. Exit 0 when every datagram came back as sent.
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum { kMaxSize = 1000 };

static size_t size_of(uint32_t seq) {
    return 8 + (seq * 37) % (kMaxSize - 7);
}

static void fill(unsigned char* buf, uint32_t seq) {
    memcpy(buf, &seq, 4);
    memcpy(buf + 4, "ECHO", 4);
    for (size_t i = 8; i < size_of(seq); ++i)
        buf[i] = (unsigned char)(seq * 13 + i * 7);
}

static int serve(int port) {
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    if (s < 0) return perror("socket"), 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    if (bind(s, (struct sockaddr*)&a, sizeof a)) return perror("bind"), 1;
    struct sockaddr_in me;
    socklen_t len = sizeof me;
    char name[64];
    if (getsockname(s, (struct sockaddr*)&me, &len)) return perror("getsockname"), 1;
    printf("bound to %s:%d\n", inet_ntop(AF_INET, &me.sin_addr, name, sizeof name),
           ntohs(me.sin_port));
    fflush(stdout);
    static unsigned char buf[65536];
    unsigned long echoed = 0;
    for (;;) {
        struct sockaddr_in peer;
        len = sizeof peer;
        ssize_t n = recvfrom(s, buf, sizeof buf, 0, (struct sockaddr*)&peer, &len);
        if (n < 0) return perror("recvfrom"), 1;
        if (n == 3 && !memcmp(buf, "bye", 3)) break;
        if (sendto(s, buf, n, 0, (struct sockaddr*)&peer, len) != n) return perror("sendto"), 1;
        ++echoed;
    }
    printf("server echoed %lu datagrams, then bye\n", echoed);
    close(s);
    return 0;
}

// Waits up to 1 s for the echo of `seq`; 1 when it came back intact, 0 on silence, -1 on error.
static int await_echo(int s, uint32_t seq, const struct sockaddr_in* server) {
    static unsigned char in[65536];
    unsigned char want[kMaxSize];
    fill(want, seq);
    for (;;) {
        struct pollfd p = {.fd = s, .events = POLLIN};
        int r = poll(&p, 1, 1000);
        if (r < 0) return perror("poll"), -1;
        if (r == 0) return 0;
        struct sockaddr_in from;
        socklen_t len = sizeof from;
        ssize_t n = recvfrom(s, in, sizeof in, MSG_DONTWAIT, (struct sockaddr*)&from, &len);
        if (n < 0 && errno == EAGAIN) continue;
        if (n < 0) return perror("recvfrom"), -1;
        if (len != sizeof from || from.sin_addr.s_addr != server->sin_addr.s_addr ||
            from.sin_port != server->sin_port)
            return fprintf(stderr, "datagram %u: from another address\n", seq), -1;
        uint32_t got;
        memcpy(&got, in, 4);
        if (got < seq) continue; // the echo of a datagram sent twice
        if ((size_t)n != size_of(seq) || memcmp(in, want, size_of(seq)))
            return fprintf(stderr, "datagram %u: %zd bytes back, not as sent\n", seq, n), -1;
        return 1;
    }
}

static int client(const char* addr, int port, uint32_t count) {
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    if (s < 0) return perror("socket"), 1;
    struct sockaddr_in server = {.sin_family = AF_INET, .sin_port = htons(port)};
    if (inet_pton(AF_INET, addr, &server.sin_addr) != 1) return fprintf(stderr, "bad address\n"), 2;
    unsigned char out[kMaxSize];
    unsigned resent = 0;
    for (uint32_t seq = 0; seq < count; ++seq) {
        if (seq == count / 2 && connect(s, (struct sockaddr*)&server, sizeof server))
            return perror("connect"), 1;
        fill(out, seq);
        for (int tries = 0;; ++tries) {
            if (tries == 5) return fprintf(stderr, "datagram %u: no echo in 5 tries\n", seq), 1;
            ssize_t w = seq < count / 2 ? sendto(s, out, size_of(seq), 0, (struct sockaddr*)&server,
                                                 sizeof server)
                                        : send(s, out, size_of(seq), 0);
            if (w != (ssize_t)size_of(seq)) return perror("send"), 1;
            int r = await_echo(s, seq, &server);
            if (r < 0) return 1;
            if (r > 0) break;
            ++resent;
        }
    }
    for (int i = 0; i < 3; ++i) { // it may be lost too; the server stops at the first
        if (send(s, "bye", 3, 0) != 3) return perror("send bye"), 1;
        usleep(100000);
    }
    printf("echoed %u datagrams ok (%u sent again)\n", count, resent);
    close(s);
    return 0;
}

int main(int argc, char** argv) {
    if (argc == 3 && !strcmp(argv[1], "-s")) return serve(atoi(argv[2]));
    if (argc == 5 && !strcmp(argv[1], "-c"))
        return client(argv[2], atoi(argv[3]), (uint32_t)strtoul(argv[4], NULL, 0));
    fprintf(stderr, "usage: %s -s PORT | -c ADDR PORT COUNT\n", argv[0]);
    return 2;
}
