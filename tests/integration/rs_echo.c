// rs_echo: a plain TCP echo pair written with the sockets API only (socket, bind, listen,
// accept, connect, read, write, poll, select, fcntl, shutdown, close), for running under
// rdma-core's librspreload.so, which turns those calls into rsockets.
//
//   rs_echo -s PORT                 accept one connection, echo until EOF, close, exit 0
//   rs_echo -c ADDR PORT BYTES      send BYTES of a pattern (non-blocking, with poll()) while
//                                   reading the echo; check every byte; SHUT_WR; wait for EOF
//
// The server waits with select(), the client with poll(): both must work on the descriptors
// librspreload hands out. Exit 0 when everything came back as sent.
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

static unsigned char pattern(size_t i) {
    return (unsigned char)(i * 7 + (i >> 11));
}

static int serve(int port) {
    int l = socket(AF_INET, SOCK_STREAM, 0);
    if (l < 0) return perror("socket"), 1;
    int one = 1;
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    if (bind(l, (struct sockaddr*)&a, sizeof a) || listen(l, 4)) return perror("bind/listen"), 1;
    printf("listening on %d\n", port);
    fflush(stdout);
    struct sockaddr_in peer;
    socklen_t len = sizeof peer;
    int c = accept(l, (struct sockaddr*)&peer, &len);
    if (c < 0) return perror("accept"), 1;
    char name[64];
    printf("client %s\n", inet_ntop(AF_INET, &peer.sin_addr, name, sizeof name));
    static char buf[65536];
    size_t total = 0;
    for (;;) {
        fd_set r;
        FD_ZERO(&r);
        FD_SET(c, &r);
        if (select(c + 1, &r, NULL, NULL, NULL) != 1 || !FD_ISSET(c, &r))
            return perror("select"), 1;
        ssize_t n = read(c, buf, sizeof buf);
        if (n < 0) return perror("read"), 1;
        if (n == 0) break; // the client shut its side
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(c, buf + off, n - off);
            if (w <= 0) return perror("write"), 1;
            off += w;
        }
        total += n;
    }
    printf("server echoed %zu bytes, then EOF\n", total);
    close(c);
    close(l);
    return 0;
}

static int client(const char* addr, int port, size_t bytes) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0) return perror("socket"), 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    if (inet_pton(AF_INET, addr, &a.sin_addr) != 1) return fprintf(stderr, "bad address\n"), 2;
    if (connect(s, (struct sockaddr*)&a, sizeof a)) return perror("connect"), 1;
    if (fcntl(s, F_SETFL, fcntl(s, F_GETFL) | O_NONBLOCK)) return perror("fcntl"), 1;
    unsigned char* out = malloc(bytes);
    static unsigned char in[65536];
    for (size_t i = 0; i < bytes; ++i)
        out[i] = pattern(i);
    size_t sent = 0, got = 0, piece = 1;
    int shut = 0;
    while (got < bytes || !shut) {
        struct pollfd p = {.fd = s, .events = POLLIN | (sent < bytes ? POLLOUT : 0)};
        if (poll(&p, 1, 10000) != 1) return fprintf(stderr, "poll: nothing in 10 s\n"), 1;
        if ((p.revents & POLLOUT) && sent < bytes) {
            size_t n = bytes - sent < piece ? bytes - sent : piece;
            ssize_t w = write(s, out + sent, n);
            if (w < 0 && errno != EAGAIN) return perror("write"), 1;
            if (w > 0) sent += w;
            piece = piece * 3 % 100003 + 1; // odd sizes: 1, 4, 13, 40 ...
        }
        if (sent == bytes && !shut) {
            if (shutdown(s, SHUT_WR)) return perror("shutdown"), 1;
            shut = 1;
        }
        if (p.revents & (POLLIN | POLLHUP)) {
            ssize_t n = read(s, in, sizeof in);
            if (n < 0 && errno != EAGAIN) return perror("read"), 1;
            if (n == 0) return fprintf(stderr, "EOF after %zu of %zu bytes\n", got, bytes), 1;
            for (ssize_t i = 0; i < n; ++i)
                if (in[i] != pattern(got + i))
                    return fprintf(stderr, "byte %zu differs\n", got + i), 1;
            if (n > 0) got += n;
        }
    }
    // Everything came back; the server closes after our SHUT_WR: EOF.
    if (fcntl(s, F_SETFL, fcntl(s, F_GETFL) & ~O_NONBLOCK)) return perror("fcntl"), 1;
    ssize_t n = read(s, in, sizeof in);
    if (n != 0) return fprintf(stderr, "expected EOF, read gave %zd\n", n), 1;
    printf("echoed %zu bytes ok, EOF seen\n", bytes);
    close(s);
    free(out);
    return 0;
}

int main(int argc, char** argv) {
    if (argc == 3 && !strcmp(argv[1], "-s")) return serve(atoi(argv[2]));
    if (argc == 5 && !strcmp(argv[1], "-c"))
        return client(argv[2], atoi(argv[3]), strtoull(argv[4], NULL, 0));
    fprintf(stderr, "usage: %s -s PORT | -c ADDR PORT BYTES\n", argv[0]);
    return 2;
}
