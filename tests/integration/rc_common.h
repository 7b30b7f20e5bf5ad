// rc_common.h: what the integration test programs share: one-line check reporting, a TCP side
// channel on loopback (as ibv_rc_pingpong exchanges its QPN/PSN/GID), opening the one device a
// process sees, taking an RC QP to RTS, and the seeded data streams the integrity programs
// (rc_integrity, ud_integrity) check byte for byte. Header-only (static functions), plain C11
// against the system <infiniband/verbs.h>.
#ifndef RDMAEMU_IT_RC_COMMON_H
#define RDMAEMU_IT_RC_COMMON_H

#define _GNU_SOURCE
#include <infiniband/verbs.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

// ---- reporting -------------------------------------------------------------------------------

static const char* g_role = "?"; // "server" / "client", in front of every line

static inline void rc_vprint(const char* tag, const char* fmt, va_list ap) {
    printf("%s %s: ", tag, g_role);
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
}

// A check that held.
__attribute__((format(printf, 1, 2))) static inline void pass(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    rc_vprint("ok  ", fmt, ap);
    va_end(ap);
}

// Information that is not a check (figures, what the other side saw).
__attribute__((format(printf, 1, 2))) static inline void note(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    rc_vprint("note", fmt, ap);
    va_end(ap);
}

// A failed check or a broken precondition: prints and exits 1.
__attribute__((noreturn, format(printf, 1, 2))) static inline void die(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    rc_vprint("FAIL", fmt, ap);
    va_end(ap);
    exit(1);
}

static inline const char* wc_status_name(enum ibv_wc_status s) {
    static const char* const names[] = {
        [IBV_WC_SUCCESS] = "IBV_WC_SUCCESS",
        [IBV_WC_LOC_LEN_ERR] = "IBV_WC_LOC_LEN_ERR",
        [IBV_WC_LOC_QP_OP_ERR] = "IBV_WC_LOC_QP_OP_ERR",
        [IBV_WC_LOC_EEC_OP_ERR] = "IBV_WC_LOC_EEC_OP_ERR",
        [IBV_WC_LOC_PROT_ERR] = "IBV_WC_LOC_PROT_ERR",
        [IBV_WC_WR_FLUSH_ERR] = "IBV_WC_WR_FLUSH_ERR",
        [IBV_WC_MW_BIND_ERR] = "IBV_WC_MW_BIND_ERR",
        [IBV_WC_BAD_RESP_ERR] = "IBV_WC_BAD_RESP_ERR",
        [IBV_WC_LOC_ACCESS_ERR] = "IBV_WC_LOC_ACCESS_ERR",
        [IBV_WC_REM_INV_REQ_ERR] = "IBV_WC_REM_INV_REQ_ERR",
        [IBV_WC_REM_ACCESS_ERR] = "IBV_WC_REM_ACCESS_ERR",
        [IBV_WC_REM_OP_ERR] = "IBV_WC_REM_OP_ERR",
        [IBV_WC_RETRY_EXC_ERR] = "IBV_WC_RETRY_EXC_ERR",
        [IBV_WC_RNR_RETRY_EXC_ERR] = "IBV_WC_RNR_RETRY_EXC_ERR",
        [IBV_WC_LOC_RDD_VIOL_ERR] = "IBV_WC_LOC_RDD_VIOL_ERR",
        [IBV_WC_REM_INV_RD_REQ_ERR] = "IBV_WC_REM_INV_RD_REQ_ERR",
        [IBV_WC_REM_ABORT_ERR] = "IBV_WC_REM_ABORT_ERR",
        [IBV_WC_INV_EECN_ERR] = "IBV_WC_INV_EECN_ERR",
        [IBV_WC_INV_EEC_STATE_ERR] = "IBV_WC_INV_EEC_STATE_ERR",
        [IBV_WC_FATAL_ERR] = "IBV_WC_FATAL_ERR",
        [IBV_WC_RESP_TIMEOUT_ERR] = "IBV_WC_RESP_TIMEOUT_ERR",
        [IBV_WC_GENERAL_ERR] = "IBV_WC_GENERAL_ERR",
        [IBV_WC_TM_ERR] = "IBV_WC_TM_ERR",
        [IBV_WC_TM_RNDV_INCOMPLETE] = "IBV_WC_TM_RNDV_INCOMPLETE",
    };
    if ((unsigned)s < sizeof names / sizeof names[0] && names[s]) return names[s];
    return "(unknown status)";
}

static inline const char* qp_state_name(enum ibv_qp_state s) {
    static const char* const names[] = {
        [IBV_QPS_RESET] = "IBV_QPS_RESET", [IBV_QPS_INIT] = "IBV_QPS_INIT",
        [IBV_QPS_RTR] = "IBV_QPS_RTR",     [IBV_QPS_RTS] = "IBV_QPS_RTS",
        [IBV_QPS_SQD] = "IBV_QPS_SQD",     [IBV_QPS_SQE] = "IBV_QPS_SQE",
        [IBV_QPS_ERR] = "IBV_QPS_ERR",
    };
    if ((unsigned)s < sizeof names / sizeof names[0] && names[s]) return names[s];
    return "(unknown state)";
}

static inline const char* event_name(int e) {
    switch (e) {
    case -1:
        return "(none)";
    case IBV_EVENT_CQ_ERR:
        return "IBV_EVENT_CQ_ERR";
    case IBV_EVENT_QP_FATAL:
        return "IBV_EVENT_QP_FATAL";
    case IBV_EVENT_QP_REQ_ERR:
        return "IBV_EVENT_QP_REQ_ERR";
    case IBV_EVENT_QP_ACCESS_ERR:
        return "IBV_EVENT_QP_ACCESS_ERR";
    case IBV_EVENT_COMM_EST:
        return "IBV_EVENT_COMM_EST";
    case IBV_EVENT_SQ_DRAINED:
        return "IBV_EVENT_SQ_DRAINED";
    case IBV_EVENT_PATH_MIG:
        return "IBV_EVENT_PATH_MIG";
    case IBV_EVENT_PATH_MIG_ERR:
        return "IBV_EVENT_PATH_MIG_ERR";
    case IBV_EVENT_DEVICE_FATAL:
        return "IBV_EVENT_DEVICE_FATAL";
    case IBV_EVENT_PORT_ACTIVE:
        return "IBV_EVENT_PORT_ACTIVE";
    case IBV_EVENT_PORT_ERR:
        return "IBV_EVENT_PORT_ERR";
    case IBV_EVENT_LID_CHANGE:
        return "IBV_EVENT_LID_CHANGE";
    case IBV_EVENT_PKEY_CHANGE:
        return "IBV_EVENT_PKEY_CHANGE";
    case IBV_EVENT_SM_CHANGE:
        return "IBV_EVENT_SM_CHANGE";
    case IBV_EVENT_SRQ_ERR:
        return "IBV_EVENT_SRQ_ERR";
    case IBV_EVENT_SRQ_LIMIT_REACHED:
        return "IBV_EVENT_SRQ_LIMIT_REACHED";
    case IBV_EVENT_QP_LAST_WQE_REACHED:
        return "IBV_EVENT_QP_LAST_WQE_REACHED";
    case IBV_EVENT_CLIENT_REREGISTER:
        return "IBV_EVENT_CLIENT_REREGISTER";
    case IBV_EVENT_GID_CHANGE:
        return "IBV_EVENT_GID_CHANGE";
    case IBV_EVENT_WQ_FATAL:
        return "IBV_EVENT_WQ_FATAL";
    default:
        return "(unknown event)";
    }
}

// ---- time ------------------------------------------------------------------------------------

static inline double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// ---- TCP side channel on loopback --------------------------------------------------------------

static inline void write_all(int fd, const void* buf, size_t len) {
    const char* p = buf;
    while (len) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) die("side channel: send failed: %s", strerror(errno));
        p += n;
        len -= (size_t)n;
    }
}

// Reads exactly len bytes; dies on EOF or error (the peer reported its failure and exited).
static inline void read_all(int fd, void* buf, size_t len) {
    char* p = buf;
    while (len) {
        ssize_t n = recv(fd, p, len, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n == 0) die("side channel: the peer closed the connection (it failed or exited)");
        if (n < 0) die("side channel: recv failed: %s", strerror(errno));
        p += n;
        len -= (size_t)n;
    }
}

// Listens on 127.0.0.1:port (0: any free port), writes the port to port_file (if given, after
// listen, so a script can wait for it), accepts one connection.
static inline int tcp_serve(int port, const char* port_file) {
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    if (ls < 0) die("socket: %s", strerror(errno));
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(ls, (struct sockaddr*)&a, sizeof a) != 0)
        die("bind 127.0.0.1:%d: %s", port, strerror(errno));
    if (listen(ls, 1) != 0) die("listen: %s", strerror(errno));
    socklen_t alen = sizeof a;
    getsockname(ls, (struct sockaddr*)&a, &alen);
    if (port_file) {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", port_file);
        FILE* f = fopen(tmp, "w");
        if (!f || fprintf(f, "%d\n", ntohs(a.sin_port)) < 0 || fclose(f) != 0 ||
            rename(tmp, port_file) != 0)
            die("cannot write the port file %s: %s", port_file, strerror(errno));
    }
    note("side channel listening on 127.0.0.1:%d", ntohs(a.sin_port));
    int fd = accept(ls, NULL, NULL);
    if (fd < 0) die("accept: %s", strerror(errno));
    close(ls);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

// Connects to 127.0.0.1:port, retrying for up to 30 s while the server starts.
static inline int tcp_connect(int port) {
    double deadline = now_s() + 30;
    for (;;) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0) die("socket: %s", strerror(errno));
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(fd, (struct sockaddr*)&a, sizeof a) == 0) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            return fd;
        }
        int err = errno;
        close(fd);
        if (now_s() > deadline)
            die("connect 127.0.0.1:%d: %s (gave up after 30 s)", port, strerror(err));
        usleep(100 * 1000);
    }
}

// What each side tells the other about its QP and its buffer (as ibv_rc_pingpong's dest).
struct peer_info {
    uint32_t qpn, psn, rkey, pad;
    uint64_t addr, len;
    uint8_t gid[16];
};

// ---- device and QP -----------------------------------------------------------------------------

struct dev {
    struct ibv_context* ctx;
    struct ibv_device_attr attr;
    struct ibv_port_attr port;
    union ibv_gid gid;
    char name[64];
};

// Opens the first (with rdmaemu run: the only) device, queries it and its port 1 and GID 0.
static inline void dev_open(struct dev* d) {
    int n = 0;
    struct ibv_device** list = ibv_get_device_list(&n);
    if (!list || n < 1) die("ibv_get_device_list: no device (errno %s)", strerror(errno));
    snprintf(d->name, sizeof d->name, "%s", ibv_get_device_name(list[0]));
    d->ctx = ibv_open_device(list[0]);
    if (!d->ctx) die("ibv_open_device(%s): %s", d->name, strerror(errno));
    ibv_free_device_list(list);
    if (ibv_query_device(d->ctx, &d->attr)) die("ibv_query_device failed");
    if (ibv_query_port(d->ctx, 1, &d->port)) die("ibv_query_port(1) failed");
    if (ibv_query_gid(d->ctx, 1, 0, &d->gid)) die("ibv_query_gid(1, 0) failed");
    char g[INET6_ADDRSTRLEN];
    inet_ntop(AF_INET6, d->gid.raw, g, sizeof g);
    note("device %s, gid[0] %s, max_qp_rd_atom %d, max_qp_init_rd_atom %d, max_sge %d", d->name, g,
         d->attr.max_qp_rd_atom, d->attr.max_qp_init_rd_atom, d->attr.max_sge);
}

static inline struct ibv_mr* reg_mr(struct ibv_pd* pd, void* addr, size_t len, int access) {
    struct ibv_mr* mr = ibv_reg_mr(pd, addr, len, access);
    if (!mr) die("ibv_reg_mr(%zu bytes, access %#x): %s", len, access, strerror(errno));
    return mr;
}

static inline void* xaligned(size_t align, size_t len) {
    void* p = NULL;
    if (posix_memalign(&p, align, len) != 0 || !p) die("out of memory (%zu bytes)", len);
    return p;
}

// The transport parameters of ibv_modify_qp that a test chooses.
struct qp_params {
    uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
    uint8_t max_rd_atomic, max_dest_rd_atomic;
    enum ibv_mtu mtu;
};

static inline struct ibv_qp* create_rc_qp(struct ibv_pd* pd, struct ibv_cq* scq, struct ibv_cq* rcq,
                                          uint32_t max_send_wr, uint32_t max_recv_wr,
                                          uint32_t max_sge, uint32_t max_inline) {
    struct ibv_qp_init_attr ia = {
        .send_cq = scq,
        .recv_cq = rcq,
        .cap = {.max_send_wr = max_send_wr,
                .max_recv_wr = max_recv_wr,
                .max_send_sge = max_sge,
                .max_recv_sge = max_sge,
                .max_inline_data = max_inline},
        .qp_type = IBV_QPT_RC,
    };
    struct ibv_qp* qp = ibv_create_qp(pd, &ia);
    if (!qp) die("ibv_create_qp(RC): %s", strerror(errno));
    return qp;
}

// RESET -> INIT -> RTR -> RTS, as ibv_rc_pingpong does, with every remote access enabled on the
// QP (the MRs' own flags are what the tests vary). Returns 0 or the errno of the failing step.
static inline int connect_qp(struct ibv_qp* qp, const struct qp_params* p, uint32_t my_psn,
                             const struct peer_info* peer) {
    struct ibv_qp_attr a = {0};
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = 1;
    a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                        IBV_ACCESS_REMOTE_ATOMIC;
    int rc =
        ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
    if (rc) return rc;

    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = p->mtu;
    a.dest_qp_num = peer->qpn;
    a.rq_psn = peer->psn;
    a.max_dest_rd_atomic = p->max_dest_rd_atomic;
    a.min_rnr_timer = p->min_rnr_timer;
    a.ah_attr.is_global = 1;
    memcpy(a.ah_attr.grh.dgid.raw, peer->gid, 16);
    a.ah_attr.grh.sgid_index = 0;
    a.ah_attr.grh.hop_limit = 1;
    a.ah_attr.port_num = 1;
    rc = ibv_modify_qp(qp, &a,
                       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                           IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    if (rc) return rc;

    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTS;
    a.timeout = p->timeout;
    a.retry_cnt = p->retry_cnt;
    a.rnr_retry = p->rnr_retry;
    a.sq_psn = my_psn;
    a.max_rd_atomic = p->max_rd_atomic;
    return ibv_modify_qp(qp, &a,
                         IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                             IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

// Two RC QPs on one device connected to each other (loopback): `a` posts, `b` answers.
struct loopback_pair {
    struct ibv_qp *a, *b;
};

static inline struct loopback_pair connect_loopback_pair(const struct dev* d, struct ibv_pd* pd,
                                                         struct ibv_cq* cq, uint32_t depth) {
    struct loopback_pair p = {create_rc_qp(pd, cq, cq, depth, depth, 1, 0),
                              create_rc_qp(pd, cq, cq, depth, depth, 1, 0)};
    struct qp_params params = {.timeout = 14,
                               .retry_cnt = 7,
                               .rnr_retry = 7,
                               .min_rnr_timer = 12,
                               .max_rd_atomic = 1,
                               .max_dest_rd_atomic = 1,
                               .mtu = IBV_MTU_1024};
    struct peer_info pa = {.qpn = p.a->qp_num, .psn = 100}, pb = {.qpn = p.b->qp_num, .psn = 200};
    memcpy(pa.gid, d->gid.raw, 16);
    memcpy(pb.gid, d->gid.raw, 16);
    if (connect_qp(p.a, &params, 100, &pb) || connect_qp(p.b, &params, 200, &pa))
        die("connecting a loopback RC pair: %s", strerror(errno));
    return p;
}

static inline enum ibv_qp_state query_state(struct ibv_qp* qp) {
    struct ibv_qp_attr a;
    struct ibv_qp_init_attr ia;
    if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia) != 0) die("ibv_query_qp failed");
    return a.qp_state;
}

// A CQ with its completion channel. Waiting arms the CQ and sleeps in poll(2) on the channel
// (2 shared cores: spinning would take CPU from the daemons), but never longer than 50 ms at a
// time, so a lost event costs latency, not a hang; such wakeups are counted.
struct cqw {
    struct ibv_cq* cq;
    struct ibv_comp_channel* ch;
    int armed;
    unsigned long events, timeouts_with_work;
};

static inline void cqw_create(struct cqw* w, struct ibv_context* ctx, int cqe) {
    memset(w, 0, sizeof *w);
    w->ch = ibv_create_comp_channel(ctx);
    if (!w->ch) die("ibv_create_comp_channel: %s", strerror(errno));
    int fl = fcntl(w->ch->fd, F_GETFL);
    if (fcntl(w->ch->fd, F_SETFL, fl | O_NONBLOCK) != 0) die("fcntl(O_NONBLOCK) on the channel");
    w->cq = ibv_create_cq(ctx, cqe, NULL, w->ch, 0);
    if (!w->cq) die("ibv_create_cq(%d): %s", cqe, strerror(errno));
}

static inline void cqw_destroy(struct cqw* w) {
    // Unacknowledged events would make ibv_destroy_cq wait; cqw_poll acknowledges each.
    if (ibv_destroy_cq(w->cq)) die("ibv_destroy_cq failed");
    if (ibv_destroy_comp_channel(w->ch)) die("ibv_destroy_comp_channel failed");
}

// Up to max completions into wc; returns how many (> 0), or 0 when none came within timeout_s.
static inline int cqw_poll(struct cqw* w, struct ibv_wc* wc, int max, double timeout_s) {
    double deadline = now_s() + timeout_s;
    int slept_without_event = 0;
    for (;;) {
        int n = ibv_poll_cq(w->cq, max, wc);
        if (n < 0) die("ibv_poll_cq returned %d", n);
        if (n > 0) {
            if (slept_without_event) ++w->timeouts_with_work;
            return n;
        }
        if (!w->armed) {
            if (ibv_req_notify_cq(w->cq, 0)) die("ibv_req_notify_cq failed");
            w->armed = 1;
            continue; // a completion may have landed before the arming: poll again
        }
        double left = deadline - now_s();
        if (left <= 0) return 0;
        struct pollfd p = {.fd = w->ch->fd, .events = POLLIN};
        int ms = left > 0.05 ? 50 : (int)(left * 1000) + 1;
        int r = poll(&p, 1, ms);
        if (r < 0 && errno != EINTR) die("poll on the completion channel: %s", strerror(errno));
        if (r > 0) {
            struct ibv_cq* ev_cq;
            void* ev_ctx;
            if (ibv_get_cq_event(w->ch, &ev_cq, &ev_ctx) == 0) {
                if (ev_cq != w->cq) die("ibv_get_cq_event returned another CQ");
                ibv_ack_cq_events(ev_cq, 1);
                w->armed = 0;
                ++w->events;
                slept_without_event = 0;
            }
        } else if (r == 0) {
            slept_without_event = 1;
        }
    }
}

// splitmix64: the PRNG and the data generator of both sides.
static inline uint64_t splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// Bytes [start, start + len) of the stream of `key` into dst: byte j is byte j % 8 (little
// endian) of splitmix64(key + j / 8 * golden).
static inline void gen(uint8_t* dst, uint64_t key, uint64_t start, uint64_t len) {
    uint64_t j = start, end = start + len;
    while (j < end && (j & 7)) {
        uint64_t w = splitmix64(key + (j >> 3) * 0x9E3779B97F4A7C15ull);
        *dst++ = (uint8_t)(w >> ((j & 7) * 8));
        ++j;
    }
    while (end - j >= 8) {
        uint64_t w = splitmix64(key + (j >> 3) * 0x9E3779B97F4A7C15ull);
        memcpy(dst, &w, 8); // x86-64: little endian, as the byte loop
        dst += 8;
        j += 8;
    }
    while (j < end) {
        uint64_t w = splitmix64(key + (j >> 3) * 0x9E3779B97F4A7C15ull);
        *dst++ = (uint8_t)(w >> ((j & 7) * 8));
        ++j;
    }
}

#endif // RDMAEMU_IT_RC_COMMON_H
