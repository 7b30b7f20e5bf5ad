// import_context: a second context made from a dup() of the first one's command fd
// (ibv_import_device), and the first context's PD, MR and DM imported into it, as programs that
// share one device context between components do (and rdma-core's test_shared_pd).
//
// Checks, on the one device a process sees (one host is enough):
//   - another process (exec'ed with the fd) imports the context, PD and MR, WRITEs into this
//     process's MR and gets the async events of its own QPs, while ours stay ours
//   - the imported context is a new context on the same device; bad fds fail as rdma-core says
//   - ibv_import_pd / ibv_import_mr / ibv_import_dm give the same handle, keys, length and rights
//     (an imported MR has no address), unknown handles are ENOENT
//   - both contexts see the same device memory
//   - an RC QP on the imported context (imported PD) connected to one on the first context:
//     SEND both ways and an RDMA WRITE into the first context's MR with the imported rkey,
//     byte for byte
//   - closing the first context leaves its objects alive for the imported one (one NIC session,
//     as one kernel uverbs file): another WRITE into the first context's MR still lands
//   - unimporting frees nothing on the NIC; closing the imported context closes its fd
// Built against the system <infiniband/verbs.h> and -libverbs; `rdmaemu run` puts ours in place.
// Prints one line per check and exits 1 at the first failure.
#include "rc_common.h"

#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>

enum { kBuf = 8192, kMsg = 3000 };

static void expect_fail(const char* what, const void* obj, int want) {
    if (obj) die("%s: succeeded, expected errno %s", what, strerror(want));
    if (errno != want) die("%s: errno %s, expected %s", what, strerror(errno), strerror(want));
    pass("%s -> %s", what, strerror(want));
}

static void fill(uint8_t* p, size_t n, uint8_t seed) {
    for (size_t i = 0; i < n; ++i)
        p[i] = (uint8_t)(seed + i * 7);
}

static void expect_bytes(const char* what, const uint8_t* got, const uint8_t* want, size_t n) {
    for (size_t i = 0; i < n; ++i)
        if (got[i] != want[i]) die("%s: byte %zu is %#x, expected %#x", what, i, got[i], want[i]);
    pass("%s: %zu bytes match", what, n);
}

struct side {
    struct ibv_pd* pd;
    struct cqw cq;
    struct ibv_qp* qp;
    struct ibv_mr* mr; // its own buffer, for SEND/RECV and as the WRITE source
    uint8_t* buf;
};

static void side_create(struct side* s, struct ibv_context* ctx, struct ibv_pd* pd) {
    s->pd = pd;
    cqw_create(&s->cq, ctx, 16);
    s->qp = create_rc_qp(pd, s->cq.cq, s->cq.cq, 8, 8, 1, 0);
    s->buf = xaligned(4096, kBuf);
    memset(s->buf, 0, kBuf);
    s->mr = reg_mr(pd, s->buf, kBuf, IBV_ACCESS_LOCAL_WRITE);
}

static void side_destroy(struct side* s) {
    if (ibv_destroy_qp(s->qp)) die("ibv_destroy_qp failed");
    if (ibv_dereg_mr(s->mr)) die("ibv_dereg_mr failed");
    cqw_destroy(&s->cq);
    free(s->buf);
}

static void wait_one(struct side* s, const char* what, enum ibv_wc_opcode opcode) {
    struct ibv_wc wc;
    if (cqw_poll(&s->cq, &wc, 1, 10.0) != 1) die("%s: no completion within 10 s", what);
    if (wc.status != IBV_WC_SUCCESS)
        die("%s: completion status %s", what, wc_status_name(wc.status));
    if (wc.opcode != opcode) die("%s: completion opcode %d, expected %d", what, wc.opcode, opcode);
}

static void post_recv(struct side* s) {
    struct ibv_sge sge = {(uintptr_t)s->buf, kBuf, s->mr->lkey};
    struct ibv_recv_wr wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1}, *bad;
    if (ibv_post_recv(s->qp, &wr, &bad)) die("ibv_post_recv failed");
}

static void post_send(struct side* s, enum ibv_wr_opcode op, uint64_t raddr, uint32_t rkey) {
    struct ibv_sge sge = {(uintptr_t)s->buf, kMsg, s->mr->lkey};
    struct ibv_send_wr wr = {.wr_id = 2,
                             .sg_list = &sge,
                             .num_sge = 1,
                             .opcode = op,
                             .send_flags = IBV_SEND_SIGNALED},
                       *bad;
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = rkey;
    if (ibv_post_send(s->qp, &wr, &bad)) die("ibv_post_send failed");
}

static void send_between(struct side* from, struct side* to, const char* what, uint8_t seed) {
    uint8_t want[kMsg];
    fill(want, kMsg, seed);
    memcpy(from->buf, want, kMsg);
    post_recv(to);
    post_send(from, IBV_WR_SEND, 0, 0);
    wait_one(from, what, IBV_WC_SEND);
    wait_one(to, what, IBV_WC_RECV);
    expect_bytes(what, to->buf, want, kMsg);
}

static void connect_pair(struct side* a, struct side* b, const union ibv_gid* gid,
                         const char* what) {
    struct qp_params p = {.timeout = 14,
                          .retry_cnt = 7,
                          .rnr_retry = 7,
                          .min_rnr_timer = 1,
                          .max_rd_atomic = 1,
                          .max_dest_rd_atomic = 1,
                          .mtu = IBV_MTU_1024};
    struct peer_info pa = {.qpn = a->qp->qp_num, .psn = 100},
                     pb = {.qpn = b->qp->qp_num, .psn = 200};
    memcpy(pa.gid, gid->raw, 16);
    memcpy(pb.gid, gid->raw, 16);
    if (connect_qp(a->qp, &p, pa.psn, &pb) || connect_qp(b->qp, &p, pb.psn, &pa))
        die("%s: connecting the two QPs failed", what);
    pass("%s: connected", what);
}

// The next async event of ctx, within 5 s.
static struct ibv_async_event wait_async_event(struct ibv_context* ctx, const char* what) {
    struct pollfd p = {.fd = ctx->async_fd, .events = POLLIN};
    if (poll(&p, 1, 5000) != 1) die("%s: no async event within 5 s", what);
    struct ibv_async_event ev;
    if (ibv_get_async_event(ctx, &ev)) die("%s: ibv_get_async_event failed", what);
    return ev;
}

// A WRITE with a wrong rkey from a to b: a's WR completes with REM_ACCESS_ERR and b's QP gets
// IBV_EVENT_QP_ACCESS_ERR on its context's async-event stream.
static void bad_rkey_write(struct side* a, uint64_t raddr, uint32_t rkey) {
    post_send(a, IBV_WR_RDMA_WRITE, raddr, rkey ^ 0x5a5a5a5a);
    struct ibv_wc wc;
    if (cqw_poll(&a->cq, &wc, 1, 10.0) != 1 || wc.status != IBV_WC_REM_ACCESS_ERR)
        die("WRITE with a wrong rkey did not complete with REM_ACCESS_ERR");
}

static void expect_access_error_event(struct ibv_context* ctx, struct ibv_qp* qp,
                                      const char* what) {
    struct ibv_async_event ev = wait_async_event(ctx, what);
    if (ev.event_type != IBV_EVENT_QP_ACCESS_ERR || ev.element.qp != qp)
        die("%s: event %d for qp %p, expected QP_ACCESS_ERR for %p", what, ev.event_type,
            (void*)ev.element.qp, (void*)qp);
    ibv_ack_async_event(&ev);
    pass("%s: IBV_EVENT_QP_ACCESS_ERR for its own QP", what);
}

// What the other process is told about the first one's objects (on its command line).
struct shared_objects {
    int fd;
    uint32_t pd_handle, mr_handle, lkey, rkey;
    uint64_t target; // the first process's MR: the other one writes at target + kOtherOffset
};
enum { kOtherOffset = 5000 };

// Another process (this program again, exec'ed, as a program hands its command fd to a helper)
// imports the context, the PD and the MR, and writes into the first process's memory through
// two QPs of its own on the imported context.
static void import_in_another_process(const struct shared_objects* o) {
    pid_t pid = fork();
    if (pid < 0) die("fork failed");
    if (pid == 0) {
        char arg[160];
        snprintf(arg, sizeof arg, "%d,%u,%u,%u,%u,%llu", o->fd, o->pd_handle, o->mr_handle, o->lkey,
                 o->rkey, (unsigned long long)o->target);
        execl("/proc/self/exe", "import_context", "--other-process", arg, (char*)NULL);
        _exit(127);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        die("the other process's import failed (status %#x)", status);
}

static int other_process_main(const char* arg) {
    g_role = "import (other process)";
    struct shared_objects o;
    unsigned long long target;
    if (sscanf(arg, "%d,%u,%u,%u,%u,%llu", &o.fd, &o.pd_handle, &o.mr_handle, &o.lkey, &o.rkey,
               &target) != 6)
        die("bad --other-process argument %s", arg);
    struct ibv_context* ctx = ibv_import_device(o.fd);
    if (!ctx) die("ibv_import_device(the first process's cmd_fd) failed: %s", strerror(errno));
    pass("ibv_import_device in another process");
    struct ibv_pd* pd = ibv_import_pd(ctx, o.pd_handle);
    struct ibv_mr* mr = pd ? ibv_import_mr(pd, o.mr_handle) : NULL;
    if (!mr) die("ibv_import_pd/mr in another process failed: %s", strerror(errno));
    if (mr->lkey != o.lkey || mr->rkey != o.rkey)
        die("imported MR keys %#x/%#x, the first process has %#x/%#x", mr->lkey, mr->rkey, o.lkey,
            o.rkey);
    pass("ibv_import_pd, ibv_import_mr in another process: the same keys");
    union ibv_gid gid;
    if (ibv_query_gid(ctx, 1, 0, &gid)) die("ibv_query_gid failed");
    struct side c, e;
    side_create(&c, ctx, pd);
    side_create(&e, ctx, pd);
    connect_pair(&c, &e, &gid, "two RC QPs in the other process");
    fill(c.buf, kMsg, 0x66);
    post_send(&c, IBV_WR_RDMA_WRITE, target + kOtherOffset, mr->rkey);
    wait_one(&c, "RDMA WRITE from the other process", IBV_WC_RDMA_WRITE);
    pass("RDMA WRITE from the other process completed");
    // Its QPs' events come to it, and the first process's pending event stays there.
    bad_rkey_write(&c, target + kOtherOffset, mr->rkey);
    expect_access_error_event(ctx, e.qp, "the other process's async events");
    side_destroy(&c);
    side_destroy(&e);
    ibv_unimport_mr(mr);
    ibv_unimport_pd(pd);
    if (ibv_close_device(ctx)) die("ibv_close_device in the other process failed");
    return 0;
}

static int fd_is_open(int fd) {
    return fcntl(fd, F_GETFD) != -1 || errno != EBADF;
}

int main(int argc, char** argv) {
    if (argc == 3 && strcmp(argv[1], "--other-process") == 0) return other_process_main(argv[2]);
    g_role = "import";
    struct dev d;
    dev_open(&d);
    struct ibv_context* ctx = d.ctx;

    // The first context's objects.
    struct ibv_pd* pd = ibv_alloc_pd(ctx);
    if (!pd) die("ibv_alloc_pd failed");
    uint8_t* target = xaligned(4096, kBuf);
    memset(target, 0, kBuf);
    int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    struct ibv_mr* mr = reg_mr(pd, target, kBuf, access);
    struct ibv_device_attr_ex ax;
    if (ibv_query_device_ex(ctx, NULL, &ax)) die("ibv_query_device_ex failed");
    if (ax.max_dm_size < 64)
        die("the device offers no device memory (max_dm_size %lu)", (unsigned long)ax.max_dm_size);
    struct ibv_alloc_dm_attr dma = {.length = 64};
    struct ibv_dm* dm = ibv_alloc_dm(ctx, &dma);
    if (!dm) die("ibv_alloc_dm(64) failed: %s", strerror(errno));

    // Importing the device.
    int pipefd[2];
    if (pipe(pipefd)) die("pipe failed");
    errno = 0;
    expect_fail("ibv_import_device(a pipe)", ibv_import_device(pipefd[0]), EINVAL);
    close(pipefd[0]);
    close(pipefd[1]);
    int other[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, other)) die("socketpair failed");
    expect_fail("ibv_import_device(a socket that is no context's)", ibv_import_device(other[0]),
                EINVAL);
    close(other[0]);
    close(other[1]);

    int fd = dup(ctx->cmd_fd); // without FD_CLOEXEC: a child we exec inherits it
    if (fd < 0) die("dup(cmd_fd) failed");
    struct shared_objects shared = {fd,       pd->handle, mr->handle,
                                    mr->lkey, mr->rkey,   (uintptr_t)target};
    // An async event of ours, left pending while the other process runs.
    struct side p1, p2;
    side_create(&p1, ctx, pd);
    side_create(&p2, ctx, pd);
    connect_pair(&p1, &p2, &d.gid, "two RC QPs for an async event");
    bad_rkey_write(&p1, (uintptr_t)target, mr->rkey);
    import_in_another_process(&shared);
    expect_access_error_event(ctx, p2.qp, "this process's async events, after the other's");
    side_destroy(&p1);
    side_destroy(&p2);
    uint8_t from_other[kMsg];
    fill(from_other, kMsg, 0x66);
    expect_bytes("the other process's WRITE landed in this process's MR", target + kOtherOffset,
                 from_other, kMsg);
    struct ibv_context* ictx = ibv_import_device(fd);
    if (!ictx) die("ibv_import_device(dup of cmd_fd) failed: %s", strerror(errno));
    if (ictx == ctx || ictx->device != ctx->device || ictx->cmd_fd != fd)
        die("imported context: ctx %p (first %p), device %p (first %p), cmd_fd %d (dup %d)",
            (void*)ictx, (void*)ctx, (void*)ictx->device, (void*)ctx->device, ictx->cmd_fd, fd);
    pass("ibv_import_device: a new context on %s with the dup'ed fd as its cmd_fd",
         ibv_get_device_name(ictx->device));
    struct ibv_device_attr ia;
    if (ibv_query_device(ictx, &ia) || ia.node_guid != d.attr.node_guid)
        die("ibv_query_device on the imported context failed or names another device");
    pass("ibv_query_device on the imported context: the same node GUID");

    // Importing objects.
    struct ibv_pd* ipd = ibv_import_pd(ictx, pd->handle);
    if (!ipd) die("ibv_import_pd failed: %s", strerror(errno));
    if (ipd == pd || ipd->handle != pd->handle || ipd->context != ictx)
        die("imported PD: handle %u (first %u), context %p", ipd->handle, pd->handle,
            (void*)ipd->context);
    pass("ibv_import_pd: handle %u on the imported context", ipd->handle);
    expect_fail("ibv_import_pd(unknown handle)", ibv_import_pd(ictx, pd->handle + 1000), ENOENT);

    struct ibv_mr* imr = ibv_import_mr(ipd, mr->handle);
    if (!imr) die("ibv_import_mr failed: %s", strerror(errno));
    if (imr->handle != mr->handle || imr->lkey != mr->lkey || imr->rkey != mr->rkey ||
        imr->length != mr->length || imr->addr != NULL || imr->pd != ipd || imr->context != ictx)
        die("imported MR: handle %u lkey %#x rkey %#x length %zu addr %p (first: %u %#x %#x %zu)",
            imr->handle, imr->lkey, imr->rkey, imr->length, imr->addr, mr->handle, mr->lkey,
            mr->rkey, mr->length);
    pass("ibv_import_mr: the same handle, lkey %#x, rkey %#x and length, no address", imr->lkey,
         imr->rkey);
    expect_fail("ibv_import_mr(unknown handle)", ibv_import_mr(ipd, mr->handle + 1000), ENOENT);

    struct ibv_dm* idm = ibv_import_dm(ictx, dm->handle);
    if (!idm) die("ibv_import_dm failed: %s", strerror(errno));
    uint8_t in[64], out[64];
    fill(in, sizeof in, 0x31);
    if (ibv_memcpy_to_dm(dm, 0, in, sizeof in) || ibv_memcpy_from_dm(out, idm, 0, sizeof out))
        die("copying to/from device memory failed");
    expect_bytes("written through the first DM, read through the imported one", out, in, 64);
    fill(in, sizeof in, 0x77);
    if (ibv_memcpy_to_dm(idm, 0, in, sizeof in) || ibv_memcpy_from_dm(out, dm, 0, sizeof out))
        die("copying to/from device memory failed");
    expect_bytes("written through the imported DM, read through the first one", out, in, 64);
    expect_fail("ibv_import_dm(unknown handle)", ibv_import_dm(ictx, dm->handle + 1000), ENOENT);
    ibv_unimport_dm(idm);
    if (ibv_memcpy_from_dm(out, dm, 0, sizeof out)) die("the DM is gone after ibv_unimport_dm");
    expect_bytes("after ibv_unimport_dm the first DM still holds its bytes", out, in, 64);

    // Traffic between a QP on each context; the imported side uses the imported PD.
    struct side a, b;
    side_create(&a, ctx, pd);
    side_create(&b, ictx, ipd);
    connect_pair(&a, &b, &d.gid, "an RC QP on each context");
    send_between(&a, &b, "SEND first -> imported context", 0x10);
    send_between(&b, &a, "SEND imported -> first context", 0x20);
    uint8_t want[kMsg];
    fill(want, kMsg, 0x40);
    memcpy(b.buf, want, kMsg);
    post_send(&b, IBV_WR_RDMA_WRITE, (uintptr_t)target + 100, imr->rkey);
    wait_one(&b, "RDMA WRITE with the imported rkey", IBV_WC_RDMA_WRITE);
    expect_bytes("RDMA WRITE with the imported rkey into the first context's MR", target + 100,
                 want, kMsg);

    // The first context goes; its session lives on in the imported one.
    side_destroy(&a);
    if (ibv_free_dm(dm)) die("ibv_free_dm failed");
    if (ibv_close_device(ctx)) die("ibv_close_device(first context) failed");
    pass("ibv_close_device(first context) with its PD and MR still registered");
    struct side c;
    side_create(&c, ictx, ipd);
    // A loopback QP pair on the imported context alone: c writes into the first context's MR.
    struct side e;
    side_create(&e, ictx, ipd);
    connect_pair(&c, &e, &d.gid, "two RC QPs on the imported context");
    fill(want, kMsg, 0x55);
    memcpy(c.buf, want, kMsg);
    post_send(&c, IBV_WR_RDMA_WRITE, (uintptr_t)target + 2000, imr->rkey);
    wait_one(&c, "RDMA WRITE after the first context closed", IBV_WC_RDMA_WRITE);
    expect_bytes("the first context's MR still takes WRITEs after it closed", target + 2000, want,
                 kMsg);

    // Unimporting frees only the structs: the PD and MR can be imported again, and freed
    // through those imports.
    uint32_t mr_handle = imr->handle, pd_handle = ipd->handle;
    side_destroy(&b);
    side_destroy(&c);
    side_destroy(&e);
    ibv_unimport_mr(imr);
    ibv_unimport_pd(ipd);
    pass("ibv_unimport_mr, ibv_unimport_pd");
    struct ibv_pd* pd2 = ibv_import_pd(ictx, pd_handle);
    struct ibv_mr* mr2 = pd2 ? ibv_import_mr(pd2, mr_handle) : NULL;
    if (!pd2 || !mr2) die("importing again after unimport failed: %s", strerror(errno));
    pass("after unimporting, the PD and MR are still there to import again");
    if (ibv_dereg_mr(mr2) || ibv_dealloc_pd(pd2)) die("dereg/dealloc through imports failed");
    pass("ibv_dereg_mr, ibv_dealloc_pd through imported objects");
    errno = 0;
    expect_fail("ibv_import_pd(handle of the PD just deallocated)", ibv_import_pd(ictx, pd_handle),
                ENOENT);

    if (ibv_close_device(ictx)) die("ibv_close_device(imported context) failed");
    if (fd_is_open(fd)) die("the imported context's cmd_fd %d is still open after close", fd);
    pass("ibv_close_device(imported context) closed its cmd_fd");
    free(target);
    printf("PASS: import_context\n");
    return 0;
}
