// dead_nic: an RC program whose own NIC dies under it (dead_nic.sh kills the host's daemon with
// SIGKILL). One context holds two QPs connected to each other on the one host: A has SENDs
// (RNR-retried forever: B posts no receive), RDMA WRITEs behind them (signaled and not) and
// receives outstanding. After the kill the program only busy-polls its CQs, as a data-path loop
// does, and expects the library to notice: every outstanding WR completes with
// IBV_WC_WR_FLUSH_ERR, each once. A second context has a thread blocked in ibv_get_async_event,
// which must return IBV_EVENT_DEVICE_FATAL. Then, on the dead device: DEVICE_FATAL on the first
// context's async fd too and EIO after it, EIO from setup verbs, WRs posted now complete with a
// flush error at once; destroy verbs fail with EIO too, or succeed with
// RDMAV_ALLOW_DISASSOC_DESTROY set, as in rdma-core. Once the script has started the host again,
// a new context works.
//
//   dead_nic --ready-file F --restarted-file R
// Prints "FLUSHED_AT <CLOCK_REALTIME ns>" when the last flush arrived and "FATAL_AT <ns>" when
// the blocked thread got its event; the script compares them with the time of the kill.
#include "rc_common.h"

#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <sys/stat.h>

enum { NRECV = 16, NSEND = 4, NWRITE = 6, BUF = 1 << 16 };

static uint64_t realtime_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void wait_for_path(const char* path, double secs) {
    double deadline = now_s() + secs;
    struct stat st;
    while (stat(path, &st) != 0) {
        if (now_s() > deadline) die("%s did not appear within %.0f s", path, secs);
        usleep(10 * 1000);
    }
}

static void write_ready(const char* path) {
    FILE* f = fopen(path, "w");
    if (!f || fputs("ready\n", f) < 0 || fclose(f) != 0)
        die("cannot write %s: %s", path, strerror(errno));
}

struct loop {
    struct ibv_pd* pd;
    struct ibv_cq* cq;
    struct ibv_qp *a, *b;
    struct ibv_mr* mr;
    uint8_t* buf;
};

// Two RC QPs of one context connected to each other through the host's own GID.
static void make_loop(struct loop* l, struct dev* d) {
    l->pd = ibv_alloc_pd(d->ctx);
    if (!l->pd) die("ibv_alloc_pd: %s", strerror(errno));
    l->buf = xaligned(4096, BUF);
    memset(l->buf, 0, BUF);
    l->mr = reg_mr(l->pd, l->buf, BUF,
                   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    l->cq = ibv_create_cq(d->ctx, 256, NULL, NULL, 0);
    if (!l->cq) die("ibv_create_cq: %s", strerror(errno));
    struct loopback_pair p = connect_loopback_pair(d, l->pd, l->cq, 32);
    l->a = p.a;
    l->b = p.b;
}

static void post_send(struct ibv_qp* qp, struct loop* l, uint64_t wr_id, enum ibv_wr_opcode op,
                      unsigned flags, uint32_t off, uint32_t len) {
    struct ibv_sge sge = {.addr = (uintptr_t)l->buf + off, .length = len, .lkey = l->mr->lkey};
    struct ibv_send_wr wr = {
        .wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op, .send_flags = flags};
    wr.wr.rdma.remote_addr = (uintptr_t)l->buf + BUF / 2 + off;
    wr.wr.rdma.rkey = l->mr->rkey;
    struct ibv_send_wr* bad;
    int rc = ibv_post_send(qp, &wr, &bad);
    if (rc) die("ibv_post_send(wr_id %" PRIu64 "): %s", wr_id, strerror(rc));
}

static void post_recv(struct ibv_qp* qp, struct loop* l, uint64_t wr_id, uint32_t off) {
    struct ibv_sge sge = {.addr = (uintptr_t)l->buf + off, .length = 1024, .lkey = l->mr->lkey};
    struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1};
    struct ibv_recv_wr* bad;
    int rc = ibv_post_recv(qp, &wr, &bad);
    if (rc) die("ibv_post_recv(wr_id %" PRIu64 "): %s", wr_id, strerror(rc));
}

static int poll_one(struct ibv_cq* cq, struct ibv_wc* wc, double secs) {
    double deadline = now_s() + secs;
    for (;;) {
        int n = ibv_poll_cq(cq, 1, wc);
        if (n < 0) die("ibv_poll_cq: %d", n);
        if (n) return 1;
        if (now_s() > deadline) return 0;
    }
}

static void* wait_fatal(void* arg) {
    struct ibv_context* ctx = arg;
    struct ibv_async_event ev;
    if (ibv_get_async_event(ctx, &ev)) die("blocked ibv_get_async_event: %s", strerror(errno));
    uint64_t at = realtime_ns();
    if (ev.event_type != IBV_EVENT_DEVICE_FATAL)
        die("the blocked ibv_get_async_event returned %s, expected IBV_EVENT_DEVICE_FATAL",
            event_name(ev.event_type));
    ibv_ack_async_event(&ev);
    printf("FATAL_AT %" PRIu64 "\n", at);
    pass(
        "the thread blocked in ibv_get_async_event on a second context got IBV_EVENT_DEVICE_FATAL");
    return NULL;
}

static void expect_eio(const char* what, int failed) {
    if (!failed) die("%s succeeded on a dead device", what);
    if (errno != EIO) die("%s: %s, expected EIO", what, strerror(errno));
}

// Every WR of A outstanding at the kill, flushed once, and nothing else.
static void expect_flushes(struct loop* l) {
    enum { N = NRECV + NSEND + NWRITE };
    int seen[N] = {0};
    for (int got = 0; got < N; ++got) {
        struct ibv_wc wc;
        if (!poll_one(l->cq, &wc, 10))
            die("%d of %d outstanding WRs completed within 10 s of the kill", got, N);
        if (wc.status != IBV_WC_WR_FLUSH_ERR || wc.qp_num != l->a->qp_num || wc.wr_id >= N)
            die("completion %d: wr_id %" PRIu64 ", %s, qp %#x; expected a WR of QP %#x with "
                "IBV_WC_WR_FLUSH_ERR",
                got, wc.wr_id, wc_status_name(wc.status), wc.qp_num, l->a->qp_num);
        if (seen[wc.wr_id]++) die("wr_id %" PRIu64 " completed twice", wc.wr_id);
        int is_recv = wc.wr_id < NRECV;
        if (wc.opcode != (is_recv ? IBV_WC_RECV : IBV_WC_SEND))
            die("wr_id %" PRIu64 ": opcode %d", wc.wr_id, wc.opcode);
    }
    printf("FLUSHED_AT %" PRIu64 "\n", realtime_ns());
    struct ibv_wc extra;
    if (poll_one(l->cq, &extra, 0.2))
        die("an extra completion after the flushes: wr_id %" PRIu64 ", %s", extra.wr_id,
            wc_status_name(extra.status));
    pass("all %d outstanding WRs (%d receives, %d SENDs, %d WRITEs of which %d unsignaled) "
         "completed once with IBV_WC_WR_FLUSH_ERR",
         N, NRECV, NSEND, NWRITE, NWRITE / 2);
}

static void dead_device_verbs(struct dev* d, struct loop* l) {
    struct ibv_async_event ev;
    if (ibv_get_async_event(d->ctx, &ev)) die("ibv_get_async_event: %s", strerror(errno));
    if (ev.event_type != IBV_EVENT_DEVICE_FATAL)
        die("ibv_get_async_event: %s, expected IBV_EVENT_DEVICE_FATAL", event_name(ev.event_type));
    ibv_ack_async_event(&ev);
    expect_eio("a second ibv_get_async_event", ibv_get_async_event(d->ctx, &ev) != 0);
    pass("the context's async fd: IBV_EVENT_DEVICE_FATAL, then EIO");

    expect_eio("ibv_alloc_pd", ibv_alloc_pd(d->ctx) == NULL);
    expect_eio("ibv_create_cq", ibv_create_cq(d->ctx, 16, NULL, NULL, 0) == NULL);
    expect_eio("ibv_reg_mr", ibv_reg_mr(l->pd, l->buf, 4096, IBV_ACCESS_LOCAL_WRITE) == NULL);
    struct ibv_qp_attr a;
    struct ibv_qp_init_attr ia;
    errno = ibv_query_qp(l->a, &a, IBV_QP_STATE, &ia);
    expect_eio("ibv_query_qp", errno != 0);
    a.qp_state = IBV_QPS_ERR;
    errno = ibv_modify_qp(l->a, &a, IBV_QP_STATE);
    expect_eio("ibv_modify_qp", errno != 0);
    struct ibv_port_attr pa;
    errno = ibv_query_port(d->ctx, 1, &pa);
    expect_eio("ibv_query_port", errno != 0);
    pass("setup verbs fail with EIO");

    post_send(l->b, l, 100, IBV_WR_RDMA_WRITE, 0, 0, 64);
    post_recv(l->b, l, 101, 0);
    int got = 0;
    for (; got < 2; ++got) {
        struct ibv_wc wc;
        if (!poll_one(l->cq, &wc, 0.5)) die("a WR posted on the dead device did not complete");
        if (wc.status != IBV_WC_WR_FLUSH_ERR || wc.qp_num != l->b->qp_num ||
            (wc.wr_id != 100 && wc.wr_id != 101))
            die("WR posted after the death: wr_id %" PRIu64 ", %s", wc.wr_id,
                wc_status_name(wc.status));
    }
    pass("an unsignaled WRITE and a receive posted on the dead device completed with "
         "IBV_WC_WR_FLUSH_ERR at once");

    if (getenv("RDMAV_ALLOW_DISASSOC_DESTROY")) {
        if (ibv_destroy_qp(l->a) || ibv_destroy_qp(l->b) || ibv_destroy_cq(l->cq) ||
            ibv_dereg_mr(l->mr) || ibv_dealloc_pd(l->pd))
            die("with RDMAV_ALLOW_DISASSOC_DESTROY a destroy verb failed: %s", strerror(errno));
        pass("RDMAV_ALLOW_DISASSOC_DESTROY: destroying the QPs, CQ, MR and PD succeeds");
    } else {
        errno = ibv_destroy_qp(l->a);
        expect_eio("ibv_destroy_qp (rdma-core without RDMAV_ALLOW_DISASSOC_DESTROY)", errno != 0);
        pass("ibv_destroy_qp: EIO, as rdma-core without RDMAV_ALLOW_DISASSOC_DESTROY");
    }
    if (ibv_close_device(d->ctx)) die("ibv_close_device on the dead device failed");
    pass("ibv_close_device: 0");
}

// A context on the restarted host: a SEND and a WRITE between two QPs arrive intact.
static void after_restart(void) {
    struct dev d;
    dev_open(&d);
    struct loop l;
    make_loop(&l, &d);
    for (uint32_t i = 0; i < 1024; ++i)
        l.buf[i] = (uint8_t)(i * 7 + 3);
    post_recv(l.b, &l, 1, 4096);
    post_send(l.a, &l, 2, IBV_WR_SEND, IBV_SEND_SIGNALED, 0, 1024);
    post_send(l.a, &l, 3, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, 0, 1024);
    for (int i = 0; i < 3; ++i) {
        struct ibv_wc wc;
        if (!poll_one(l.cq, &wc, 10)) die("no completion on the restarted host");
        if (wc.status != IBV_WC_SUCCESS)
            die("on the restarted host: wr_id %" PRIu64 " %s", wc.wr_id, wc_status_name(wc.status));
    }
    if (memcmp(l.buf, l.buf + 4096, 1024) || memcmp(l.buf, l.buf + BUF / 2, 1024))
        die("on the restarted host the data did not arrive intact");
    pass("a new context on the restarted host: SEND and WRITE arrived intact");
}

int main(int argc, char** argv) {
    static const struct option opts[] = {{"ready-file", required_argument, 0, 'r'},
                                         {"restarted-file", required_argument, 0, 'R'},
                                         {0, 0, 0, 0}};
    const char *ready = NULL, *restarted = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 'r')
            ready = optarg;
        else if (c == 'R')
            restarted = optarg;
        else
            return 2;
    }
    if (!ready || !restarted) {
        fprintf(stderr, "usage: dead_nic --ready-file F --restarted-file R\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    g_role = "dead_nic";
    struct dev d, watcher;
    dev_open(&d);
    dev_open(&watcher);
    struct loop l;
    make_loop(&l, &d);
    for (int i = 0; i < NRECV; ++i)
        post_recv(l.a, &l, (uint64_t)i, (uint32_t)i * 1024);
    for (int i = 0; i < NSEND; ++i)
        post_send(l.a, &l, NRECV + i, IBV_WR_SEND, IBV_SEND_SIGNALED, 0, 512);
    for (int i = 0; i < NWRITE; ++i)
        post_send(l.a, &l, NRECV + NSEND + i, IBV_WR_RDMA_WRITE, i % 2 ? 0 : IBV_SEND_SIGNALED, 0,
                  2048);
    struct ibv_wc wc;
    if (poll_one(l.cq, &wc, 0.3))
        die("wr_id %" PRIu64 " completed (%s) before the kill", wc.wr_id,
            wc_status_name(wc.status));
    pass("%d receives, %d SENDs (RNR-retried: the peer has no receive) and %d WRITEs outstanding",
         NRECV, NSEND, NWRITE);
    pthread_t t;
    if (pthread_create(&t, NULL, wait_fatal, watcher.ctx)) die("pthread_create");
    write_ready(ready);

    expect_flushes(&l);
    pthread_join(t, NULL);
    dead_device_verbs(&d, &l);

    wait_for_path(restarted, 60);
    after_restart();
    printf("PASS: dead NIC noticed, flushed, restarted host usable\n");
    return 0;
}
