// rc_errors: RC error semantics between two emulated hosts. Each case uses a fresh QP pair (a QP
// in error stays there) and checks, on the requester, the exact completion status of the failing
// WR, that the QP is then in IBV_QPS_ERR and that a WR posted afterwards completes with
// IBV_WC_WR_FLUSH_ERR; on the responder (over the TCP side channel), that its memory, canary
// regions on both sides of the MR included, is byte for byte what it was. The responder's async
// event and QP state are reported (notes), not enforced.
//
//   a  RDMA WRITE to an MR without IBV_ACCESS_REMOTE_WRITE            -> IBV_WC_REM_ACCESS_ERR
//   b  RDMA WRITE of 5000 bytes ending 1 byte past the MR             -> IBV_WC_REM_ACCESS_ERR,
//      and not one byte written, inside the MR or beyond it
//   c  RDMA WRITE with the rkey of a deregistered MR                  -> IBV_WC_REM_ACCESS_ERR
//   d  RDMA READ from an MR without IBV_ACCESS_REMOTE_READ            -> IBV_WC_REM_ACCESS_ERR,
//      and the local destination untouched
//   e  FETCH_ADD (e) and CMP_SWAP (E) at a remote address % 8 != 0    -> IBV_WC_REM_INV_REQ_ERR,
//      counter and local result untouched. A misaligned atomic is an invalid request (IBA
//      9.7.5.2 class C, NAK code 0x61): Linux rxe, drivers/infiniband/sw/rxe/rxe_resp.c
//      (torvalds/linux), maps RESPST_ERR_MISALIGNED_ATOMIC to do_class_ac_error(qp,
//      AETH_NAK_INVALID_REQ, IB_WC_REM_INV_REQ_ERR); google/rdma-unit-test
//      cases/loopback_test.cc (FetchAddUnaligned, CompareSwapUnaligned) expects
//      IBV_WC_REM_INV_REQ_ERR, and its mlx5 deviation list (internal/introspection_mlx5.h) does
//      not exempt those tests, so ConnectX reports the same.
//   f  SEND with no receive posted and rnr_retry 0                    -> IBV_WC_RNR_RETRY_EXC_ERR
//   k  RDMA WRITE with an rkey one bit off the MR's                    -> IBV_WC_REM_ACCESS_ERR
//   h  RDMA WRITE whose SGE has a wrong lkey                           -> IBV_WC_LOC_PROT_ERR
//   j  SEND with no receive posted and rnr_retry 7: no completion in 0.5 s, then the client
//      moves its QP to ERR                                             -> IBV_WC_WR_FLUSH_ERR
//   i  (client only) ibv_modify_qp INIT->RTR without IBV_QP_DEST_QPN   -> EINVAL
//   g  the responder's nicsimd killed (SIGKILL, by the script) after the QPs are connected; a
//      WRITE, then a SEND, a READ and a FETCH_ADD posted behind it, with timeout 12 (16.8 ms)
//      and retry_cnt 3 -> the WRITE completes with IBV_WC_RETRY_EXC_ERR after about
//      timeout x (retry_cnt + 1) = 67 ms, the three others with IBV_WC_WR_FLUSH_ERR.
//      The client writes DIR/g.connected and waits for DIR/g.killed (--sync-dir DIR).
//
// With RDMAEMU_EXPLAIN=1 (rdmaemu run --explain) the library says on stderr why each of these
// failed. Both sides print, on stdout, the line they expect there word for word
// ("explain: TEXT", the stderr line being "rdmaemu: TEXT"); rc_errors.sh compares.
//
// Usage: rc_errors --server --port P [--port-file F]
//        rc_errors --client --port P [--cases abcdeEfkhjig] [--sync-dir DIR]
// Prints one line per check; exits 1 if any check failed (after running every case).
#include "rc_common.h"

#include <getopt.h>
#include <inttypes.h>
#include <sys/stat.h>

enum { PAGE = 4096, MR_LEN = 2 * PAGE, BUF_LEN = 3 * MR_LEN, MR_OFF = MR_LEN };

static int g_failures;

// A line the library must print on stderr with RDMAEMU_EXPLAIN=1 (checked by rc_errors.sh).
__attribute__((format(printf, 1, 2))) static void expect_explain(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("explain: ");
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
    va_end(ap);
}

// A check: prints ok or FAIL; a failure is counted and the case goes on.
__attribute__((format(printf, 2, 3))) static int check(int cond, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    rc_vprint(cond ? "ok  " : "FAIL", fmt, ap);
    va_end(ap);
    if (!cond) ++g_failures;
    return cond;
}

enum msg_type { M_CASE = 1, M_INFO, M_READY, M_CHECK, M_RESULT, M_END };

struct msg {
    uint32_t type;
    char id;
    char pad[3];
    struct peer_info qp; // M_INFO
    // M_RESULT: what the responder saw.
    uint64_t changed, first_changed, sum_before, sum_after;
    int32_t event, events, qp_state, ok;
};

static uint64_t fnv1a(const uint8_t* p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; ++i)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static void fill_pattern(uint8_t* p, size_t n, uint64_t seed) {
    for (size_t i = 0; i < n; i += 8) {
        uint64_t w = splitmix64(seed + i);
        memcpy(p + i, &w, n - i < 8 ? n - i : 8);
    }
}

static const char* case_title(char id) {
    switch (id) {
    case 'a':
        return "RDMA WRITE to an MR without IBV_ACCESS_REMOTE_WRITE";
    case 'b':
        return "RDMA WRITE of 5000 bytes ending 1 byte past the MR";
    case 'c':
        return "RDMA WRITE with the rkey of a deregistered MR";
    case 'd':
        return "RDMA READ from an MR without IBV_ACCESS_REMOTE_READ";
    case 'e':
        return "FETCH_ADD at a remote address % 8 == 4";
    case 'E':
        return "CMP_SWAP at a remote address % 8 == 4";
    case 'f':
        return "SEND with no receive posted, rnr_retry 0";
    case 'k':
        return "RDMA WRITE with an rkey one bit off the MR's";
    case 'h':
        return "RDMA WRITE whose SGE has a wrong lkey";
    case 'j':
        return "SEND with no receive posted, rnr_retry 7";
    case 'i':
        return "ibv_modify_qp INIT->RTR without IBV_QP_DEST_QPN";
    case 'g':
        return "WRITE after the responder's daemon was killed (timeout 12, retry_cnt 3)";
    default:
        return NULL;
    }
}

// The responder's MR access for each case (what the case takes away).
static int case_access(char id) {
    const int all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                    IBV_ACCESS_REMOTE_ATOMIC;
    switch (id) {
    case 'a':
        return all & ~IBV_ACCESS_REMOTE_WRITE;
    case 'd':
        return all & ~IBV_ACCESS_REMOTE_READ;
    default:
        return all;
    }
}

// What the responder should report (not enforced: notes only).
static int expected_event(char id) {
    switch (id) {
    case 'a':
    case 'b':
    case 'c':
    case 'd':
    case 'k':
        return IBV_EVENT_QP_ACCESS_ERR;
    case 'e':
    case 'E':
        return IBV_EVENT_QP_REQ_ERR;
    default:
        return -1;
    }
}

static struct qp_params case_params(const struct dev* d, char id) {
    struct qp_params p = {
        .timeout = 14,
        .retry_cnt = 7,
        .rnr_retry = 7,
        .min_rnr_timer = 12,
        .max_rd_atomic =
            (uint8_t)(d->attr.max_qp_init_rd_atom > 0 ? d->attr.max_qp_init_rd_atom : 1),
        .max_dest_rd_atomic = (uint8_t)(d->attr.max_qp_rd_atom > 0 ? d->attr.max_qp_rd_atom : 1),
        .mtu = IBV_MTU_1024};
    if (id == 'f') p.rnr_retry = 0;
    if (id == 'j') p.rnr_retry = 7;
    if (id == 'g') {
        p.timeout = 12;
        p.retry_cnt = 3;
    }
    return p;
}

// ================================ server (the responder) =========================================

static void server(int port, const char* port_file) {
    g_role = "server";
    struct dev d;
    dev_open(&d);
    int fl = fcntl(d.ctx->async_fd, F_GETFL);
    if (fcntl(d.ctx->async_fd, F_SETFL, fl | O_NONBLOCK) != 0) die("fcntl(async_fd, O_NONBLOCK)");
    int fd = tcp_serve(port, port_file);
    struct ibv_pd* pd = ibv_alloc_pd(d.ctx);
    if (!pd) die("ibv_alloc_pd: %s", strerror(errno));
    uint8_t* buf = xaligned(PAGE, BUF_LEN);
    uint8_t* copy = xaligned(PAGE, BUF_LEN);
    for (;;) {
        struct msg m;
        read_all(fd, &m, sizeof m);
        if (m.type == M_END) break;
        if (m.type != M_CASE) die("side channel: expected CASE or END, got %u", m.type);
        char id = m.id;

        // Events left over from an earlier case would be misattributed: drain them first.
        struct ibv_async_event ev;
        while (ibv_get_async_event(d.ctx, &ev) == 0) {
            note("case %c: a leftover async event %s before the case", id,
                 event_name(ev.event_type));
            ibv_ack_async_event(&ev);
        }

        fill_pattern(buf, BUF_LEN, 0xC0FFEE00ull + (uint64_t)id);
        memcpy(copy, buf, BUF_LEN);
        struct ibv_mr* mr = reg_mr(pd, buf + MR_OFF, MR_LEN, case_access(id));
        struct ibv_cq* cq = ibv_create_cq(d.ctx, 16, NULL, NULL, 0);
        if (!cq) die("ibv_create_cq: %s", strerror(errno));
        struct ibv_qp* qp = create_rc_qp(pd, cq, cq, 8, 8, 4, 0);
        struct msg info = {.type = M_INFO, .id = id};
        info.qp = (struct peer_info){.qpn = qp->qp_num,
                                     .psn = 0x100 + (uint32_t)id,
                                     .rkey = mr->rkey,
                                     .pad = mr->handle, // the NIC's name for it: mr#<handle>
                                     .addr = (uintptr_t)(buf + MR_OFF),
                                     .len = MR_LEN};
        if (id == 'k')
            expect_explain("IBV_EVENT_QP_ACCESS_ERR on qp %#x: rkey %#x names no MR; the QP's PD "
                           "has rkeys %#x (mr#%u, %d bytes at %#" PRIxPTR ")",
                           qp->qp_num, mr->rkey ^ 0x100, mr->rkey, mr->handle, MR_LEN,
                           (uintptr_t)(buf + MR_OFF));
        memcpy(info.qp.gid, d.gid.raw, 16);
        write_all(fd, &info, sizeof info);
        struct msg cm;
        read_all(fd, &cm, sizeof cm);
        if (cm.type != M_INFO) die("side channel: expected INFO, got %u", cm.type);
        struct qp_params qpp = case_params(&d, id);
        int rc = connect_qp(qp, &qpp, info.qp.psn, &cm.qp);
        if (rc) die("case %c: connecting the QP: %s", id, strerror(rc));
        if (id == 'c') {
            if (ibv_dereg_mr(mr)) die("case c: ibv_dereg_mr failed");
            mr = NULL;
        }
        write_all(fd, &(struct msg){.type = M_READY, .id = id}, sizeof(struct msg));

        read_all(fd, &cm, sizeof cm);
        if (cm.type != M_CHECK) die("side channel: expected CHECK, got %u", cm.type);
        struct msg res = {.type = M_RESULT, .id = id, .event = -1, .qp_state = -1, .ok = 1};
        res.sum_before = fnv1a(copy, BUF_LEN);
        res.sum_after = fnv1a(buf, BUF_LEN);
        for (size_t i = 0; i < BUF_LEN; ++i)
            if (buf[i] != copy[i]) {
                if (!res.changed) res.first_changed = i;
                ++res.changed;
            }
        if (id != 'g') { // with its daemon gone, this host answers nothing more
            double deadline = now_s() + 1.0;
            while (now_s() < deadline) {
                struct pollfd p = {.fd = d.ctx->async_fd, .events = POLLIN};
                int ms = (int)((deadline - now_s()) * 1000) + 1;
                if (poll(&p, 1, ms) <= 0) continue;
                if (ibv_get_async_event(d.ctx, &ev) != 0) continue;
                if (ev.element.qp == qp && res.event < 0)
                    res.event = ev.event_type;
                else if (ev.element.qp != qp)
                    note("case %c: async event %s for another object", id,
                         event_name(ev.event_type));
                ++res.events;
                ibv_ack_async_event(&ev);
                deadline = now_s() + 0.1; // a little longer, for a second event
            }
            res.qp_state = query_state(qp);
        }
        write_all(fd, &res, sizeof res);
        note("case %c: memory %s (%" PRIu64 " bytes changed), async event %s, QP state %s", id,
             res.changed ? "CHANGED" : "unchanged", res.changed, event_name(res.event),
             id == 'g' ? "(not asked: daemon gone)"
                       : qp_state_name((enum ibv_qp_state)res.qp_state));
        if (id == 'g') {
            // Our daemon is dead: no verb can be answered, so leave without cleaning up.
            note("leaving without destroying the objects of case g (the daemon is gone)");
            fflush(stdout);
            _exit(0);
        }
        if (ibv_destroy_qp(qp)) die("ibv_destroy_qp failed");
        if (ibv_destroy_cq(cq)) die("ibv_destroy_cq failed");
        if (mr && ibv_dereg_mr(mr)) die("ibv_dereg_mr failed");
    }
    ibv_dealloc_pd(pd);
    ibv_close_device(d.ctx);
    close(fd);
    note("done");
}

// ================================ client (the requester) =========================================

// Waits up to timeout_s for path to exist.
static int wait_file(const char* path, double timeout_s) {
    double deadline = now_s() + timeout_s;
    struct stat st;
    while (stat(path, &st) != 0) {
        if (now_s() > deadline) return 0;
        usleep(10 * 1000);
    }
    return 1;
}

// Writes our pid to path (non-empty: the script's wait_for_file waits for size > 0).
static void write_pid_file(const char* path) {
    FILE* f = fopen(path, "w");
    if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) != 0)
        die("cannot write %s: %s", path, strerror(errno));
}

// Expects one completion on cq with wr_id and status; reports and returns whether it matched.
static int expect_wc(struct ibv_cq* cq, struct ibv_qp* qp, char id, uint64_t wr_id,
                     enum ibv_wc_status want, const char* what, double timeout_s,
                     struct ibv_wc* out) {
    struct ibv_wc wc;
    double t0 = now_s();
    int got = 0;
    while (!(got = ibv_poll_cq(cq, 1, &wc)) && now_s() - t0 < timeout_s)
        usleep(200);
    if (got < 0) die("ibv_poll_cq returned %d", got);
    if (!got)
        return check(0, "case %c: %s: expected a completion with %s, none within %.0f s", id, what,
                     wc_status_name(want), timeout_s);
    if (out) *out = wc;
    return check(wc.status == want && wc.wr_id == wr_id && wc.qp_num == qp->qp_num,
                 "case %c: %s -> %s (expected %s, wr_id %" PRIu64 ", qp %#x; got wr_id %" PRIu64
                 ", qp %#x, vendor_err %#x)",
                 id, what, wc_status_name(wc.status), wc_status_name(want), wr_id, qp->qp_num,
                 wc.wr_id, wc.qp_num, wc.vendor_err);
}

static void run_case(const struct dev* d, struct ibv_pd* pd, int fd, char id,
                     const char* sync_dir) {
    printf("---- case %c: %s\n", id, case_title(id));
    struct msg m = {.type = M_CASE, .id = id};
    write_all(fd, &m, sizeof m);
    struct msg si;
    read_all(fd, &si, sizeof si);
    if (si.type != M_INFO) die("side channel: expected INFO, got %u", si.type);

    uint8_t* local = xaligned(PAGE, 2 * MR_LEN);
    fill_pattern(local, 2 * MR_LEN, 0x10CA1ull + (uint64_t)id);
    uint8_t* local_copy = xaligned(PAGE, 2 * MR_LEN);
    memcpy(local_copy, local, 2 * MR_LEN);
    struct ibv_mr* lmr = reg_mr(pd, local, 2 * MR_LEN, IBV_ACCESS_LOCAL_WRITE);
    struct ibv_cq* cq = ibv_create_cq(d->ctx, 32, NULL, NULL, 0);
    if (!cq) die("ibv_create_cq: %s", strerror(errno));
    struct ibv_qp* qp = create_rc_qp(pd, cq, cq, 16, 4, 4, 0);
    struct msg mine = {.type = M_INFO, .id = id};
    mine.qp = (struct peer_info){.qpn = qp->qp_num, .psn = 0x200 + (uint32_t)id};
    memcpy(mine.qp.gid, d->gid.raw, 16);
    write_all(fd, &mine, sizeof mine);
    struct qp_params qpp = case_params(d, id);
    int rc = connect_qp(qp, &qpp, mine.qp.psn, &si.qp);
    if (rc) die("case %c: connecting the QP: %s", id, strerror(rc));
    struct msg ready;
    read_all(fd, &ready, sizeof ready);
    if (ready.type != M_READY) die("side channel: expected READY, got %u", ready.type);
    const struct peer_info* r = &si.qp;
    char peer_ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, r->gid + 12, peer_ip, sizeof peer_ip); // an IPv4-mapped RoCE v2 GID
    char peer[96];                                            // as the explanations name it
    snprintf(peer, sizeof peer, "%s qp %#x", peer_ip, r->qpn);
    const char* mr_rights_but_write =
        "IBV_ACCESS_LOCAL_WRITE|IBV_ACCESS_REMOTE_READ|IBV_ACCESS_REMOTE_ATOMIC";

    // The source of WRITEs/SENDs: local[0, MR_LEN); READ/atomic destinations: local[MR_LEN, ...).
    struct ibv_sge src = {(uintptr_t)local, 4096, lmr->lkey};
    struct ibv_sge dst = {(uintptr_t)(local + MR_LEN), 4096, lmr->lkey};
    struct ibv_sge res = {(uintptr_t)(local + MR_LEN + 64), 8, lmr->lkey};
    struct ibv_send_wr wr = {
        .wr_id = 1, .sg_list = &src, .num_sge = 1, .send_flags = IBV_SEND_SIGNALED};
    enum ibv_wc_status want = IBV_WC_REM_ACCESS_ERR;
    const char* what = "";
    char what_buf[160];
    switch (id) {
    case 'a':
    case 'c':
    case 'k':
        wr.opcode = IBV_WR_RDMA_WRITE;
        wr.wr.rdma.remote_addr = r->addr;
        wr.wr.rdma.rkey = id == 'k' ? r->rkey ^ 0x100 : r->rkey;
        what = "WRITE 4096 bytes";
        if (id == 'a')
            expect_explain("IBV_WC_REM_ACCESS_ERR for wr_id 1 on qp %#x: the responder refused "
                           "the WRITE: mr#%u (rkey %#x, %d bytes at %#" PRIx64
                           ") does not allow IBV_ACCESS_REMOTE_WRITE: it was registered with %s",
                           qp->qp_num, r->pad, r->rkey, MR_LEN, r->addr, mr_rights_but_write);
        if (id == 'c') // the server deregistered its only MR
            expect_explain("IBV_WC_REM_ACCESS_ERR for wr_id 1 on qp %#x: the responder refused "
                           "the WRITE: rkey %#x names no MR; the QP's PD has no MRs, so no rkeys",
                           qp->qp_num, r->rkey);
        if (id == 'k')
            expect_explain("IBV_WC_REM_ACCESS_ERR for wr_id 1 on qp %#x: the responder refused "
                           "the WRITE: rkey %#x names no MR; the QP's PD has rkeys %#x (mr#%u, %d "
                           "bytes at %#" PRIx64 ")",
                           qp->qp_num, r->rkey ^ 0x100, r->rkey, r->pad, MR_LEN, r->addr);
        break;
    case 'b':
        src.length = 5000;
        wr.opcode = IBV_WR_RDMA_WRITE;
        wr.wr.rdma.remote_addr = r->addr + r->len - 4999; // [len - 4999, len + 1)
        wr.wr.rdma.rkey = r->rkey;
        what = "WRITE 5000 bytes at MR offset 3193 (1 byte past the end)";
        expect_explain("IBV_WC_REM_ACCESS_ERR for wr_id 1 on qp %#x: the responder refused the "
                       "WRITE: the WRITE of 5000 bytes at %#" PRIx64 " is not inside mr#%u (rkey "
                       "%#x, %d bytes at %#" PRIx64 "): it ends 1 byte past the MR's end",
                       qp->qp_num, r->addr + r->len - 4999, r->pad, r->rkey, MR_LEN, r->addr);
        break;
    case 'h':
        src.lkey = lmr->lkey ^ 0x8;
        wr.opcode = IBV_WR_RDMA_WRITE;
        wr.wr.rdma.remote_addr = r->addr;
        wr.wr.rdma.rkey = r->rkey;
        want = IBV_WC_LOC_PROT_ERR;
        what = "WRITE 4096 bytes from an SGE with a wrong lkey";
        expect_explain("IBV_WC_LOC_PROT_ERR for wr_id 1 on qp %#x: sge[0] lkey %#x names no MR; "
                       "the QP's PD has lkeys %#x (mr#%u, %d bytes at %#" PRIxPTR ")",
                       qp->qp_num, src.lkey, lmr->lkey, lmr->handle, 2 * MR_LEN, (uintptr_t)local);
        break;
    case 'd':
        wr.opcode = IBV_WR_RDMA_READ;
        wr.sg_list = &dst;
        wr.wr.rdma.remote_addr = r->addr;
        wr.wr.rdma.rkey = r->rkey;
        what = "READ 4096 bytes";
        expect_explain("IBV_WC_REM_ACCESS_ERR for wr_id 1 on qp %#x: the responder refused the "
                       "READ: mr#%u (rkey %#x, %d bytes at %#" PRIx64
                       ") does not allow IBV_ACCESS_REMOTE_READ: it was registered with "
                       "IBV_ACCESS_LOCAL_WRITE|IBV_ACCESS_REMOTE_WRITE|IBV_ACCESS_REMOTE_ATOMIC",
                       qp->qp_num, r->pad, r->rkey, MR_LEN, r->addr);
        break;
    case 'e':
    case 'E':
        wr.opcode = id == 'e' ? IBV_WR_ATOMIC_FETCH_AND_ADD : IBV_WR_ATOMIC_CMP_AND_SWP;
        wr.sg_list = &res;
        wr.wr.atomic.remote_addr = r->addr + 4;
        wr.wr.atomic.rkey = r->rkey;
        wr.wr.atomic.compare_add = 1;
        wr.wr.atomic.swap = 0x5555;
        if (id == 'E') { // compare with what is there: were it executed, it would swap
            uint8_t* pat = xaligned(PAGE, BUF_LEN);
            fill_pattern(pat, BUF_LEN, 0xC0FFEE00ull + (uint64_t)id); // the server's pattern
            memcpy(&wr.wr.atomic.compare_add, pat + MR_OFF + 4, 8);
            free(pat);
        }
        want = IBV_WC_REM_INV_REQ_ERR;
        what = id == 'e' ? "FETCH_ADD at remote addr % 8 == 4" : "CMP_SWAP at remote addr % 8 == 4";
        expect_explain("IBV_WC_REM_INV_REQ_ERR for wr_id 1 on qp %#x: the responder refused the "
                       "atomic: the atomic's address %#" PRIx64 " is not a multiple of 8",
                       qp->qp_num, r->addr + 4);
        break;
    case 'f':
    case 'j':
        src.length = 64;
        wr.opcode = IBV_WR_SEND;
        want = id == 'f' ? IBV_WC_RNR_RETRY_EXC_ERR : IBV_WC_WR_FLUSH_ERR;
        what = id == 'f' ? "SEND 64 bytes, no receive posted"
                         : "SEND 64 bytes, no receive posted, flushed by the move to ERR";
        if (id == 'f')
            expect_explain("IBV_WC_RNR_RETRY_EXC_ERR for wr_id 1 on qp %#x: the peer (%s) has no "
                           "receive posted: 1 RNR NAK, and rnr_retry 0 allows no more retries",
                           qp->qp_num, peer);
        if (id == 'j') {
            expect_explain("qp %#x: the peer (%s) has no receive posted for the SEND wr_id 1 (1 "
                           "RNR NAK so far); rnr_retry 7 retries forever",
                           qp->qp_num, peer);
            expect_explain("IBV_WC_WR_FLUSH_ERR for wr_id 1 on qp %#x: flushed, the QP is in ERR: "
                           "ibv_modify_qp moved the QP to ERR; its WRs complete flushed",
                           qp->qp_num);
        }
        break;
    case 'g':
        wr.opcode = IBV_WR_RDMA_WRITE;
        wr.wr.rdma.remote_addr = r->addr;
        wr.wr.rdma.rkey = r->rkey;
        want = IBV_WC_RETRY_EXC_ERR;
        what = "WRITE 4096 bytes to the dead host";
        expect_explain("IBV_WC_RETRY_EXC_ERR for wr_id 1 on qp %#x: no response from the peer (%s) "
                       "for psn %#x: sent %d times, 16.8 ms apart (timeout 12, retry_cnt 3); its "
                       "NIC or QP is gone, is not in RTR, or the path drops every packet",
                       qp->qp_num, peer, mine.qp.psn, qpp.retry_cnt + 1);
        break;
    }

    if (id == 'g') {
        char path[4096];
        snprintf(path, sizeof path, "%s/g.connected", sync_dir);
        write_pid_file(path);
        snprintf(path, sizeof path, "%s/g.killed", sync_dir);
        if (!wait_file(path, 60)) die("case g: %s did not appear within 60 s", path);
        note("case g: the script killed the responder's daemon");
    }

    double t0 = now_s();
    struct ibv_send_wr* bad = NULL;
    rc = ibv_post_send(qp, &wr, &bad);
    if (rc) die("case %c: ibv_post_send(%s): %s", id, what, strerror(rc));
    int extra = 0;
    if (id == 'g') { // three more behind it, outstanding when the WRITE fails
        struct ibv_sge s2 = {(uintptr_t)local, 64, lmr->lkey};
        struct ibv_send_wr more[3] = {
            {.wr_id = 2,
             .sg_list = &s2,
             .num_sge = 1,
             .opcode = IBV_WR_SEND,
             .send_flags = IBV_SEND_SIGNALED},
            {.wr_id = 3,
             .sg_list = &dst,
             .num_sge = 1,
             .opcode = IBV_WR_RDMA_READ,
             .send_flags = IBV_SEND_SIGNALED},
            {.wr_id = 4,
             .sg_list = &res,
             .num_sge = 1,
             .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
             .send_flags = IBV_SEND_SIGNALED},
        };
        more[1].wr.rdma.remote_addr = r->addr;
        more[1].wr.rdma.rkey = r->rkey;
        more[2].wr.atomic.remote_addr = r->addr + 8;
        more[2].wr.atomic.rkey = r->rkey;
        more[2].wr.atomic.compare_add = 1;
        for (int i = 0; i < 3; ++i) {
            rc = ibv_post_send(qp, &more[i], &bad);
            if (rc) die("case g: ibv_post_send(WR %d): %s", i + 2, strerror(rc));
        }
        extra = 3;
    }
    if (id == 'j') {
        // RNR NAKs without end: no completion comes; the app gives up by moving to ERR.
        struct ibv_wc early;
        double until = now_s() + 0.5;
        int n = 0;
        while (!(n = ibv_poll_cq(cq, 1, &early)) && now_s() < until)
            usleep(1000);
        check(n == 0, "case j: no completion within 0.5 s while the peer has no receive posted");
        struct ibv_qp_attr to_err = {.qp_state = IBV_QPS_ERR};
        if (ibv_modify_qp(qp, &to_err, IBV_QP_STATE)) die("case j: ibv_modify_qp(ERR) failed");
    }
    snprintf(what_buf, sizeof what_buf, "%s", what);
    struct ibv_wc wc;
    int ok = expect_wc(cq, qp, id, 1, want, what_buf, 10, &wc);
    double elapsed = now_s() - t0;
    if (id == 'g' && ok) {
        double t = 4.096e-6 * (double)(1u << qpp.timeout), expect = t * (qpp.retry_cnt + 1);
        check(elapsed >= 0.75 * expect && elapsed <= 4 * expect + 0.2,
              "case g: IBV_WC_RETRY_EXC_ERR after %.1f ms (timeout x (retry_cnt + 1) = %.1f ms; "
              "accepted %.1f .. %.1f ms)",
              elapsed * 1e3, expect * 1e3, 0.75 * expect * 1e3, (4 * expect + 0.2) * 1e3);
    } else if (ok) {
        note("case %c: the error completion came after %.1f ms", id, elapsed * 1e3);
    }
    static const char* const extra_names[] = {"SEND", "READ", "FETCH_ADD"};
    for (int i = 0; i < extra; ++i) {
        snprintf(what_buf, sizeof what_buf, "%s posted behind it (wr_id %d)", extra_names[i],
                 i + 2);
        expect_wc(cq, qp, id, (uint64_t)(i + 2), IBV_WC_WR_FLUSH_ERR, what_buf, 5, NULL);
    }

    enum ibv_qp_state st = query_state(qp);
    check(st == IBV_QPS_ERR,
          "case %c: requester QP state after the error: %s (expected IBV_QPS_ERR)", id,
          qp_state_name(st));

    // A WR posted to a QP in ERR completes, flushed.
    struct ibv_sge s3 = {(uintptr_t)local, 32, lmr->lkey};
    struct ibv_send_wr after = {.wr_id = 99,
                                .sg_list = &s3,
                                .num_sge = 1,
                                .opcode = IBV_WR_SEND,
                                .send_flags = IBV_SEND_SIGNALED};
    rc = ibv_post_send(qp, &after, &bad);
    if (check(rc == 0, "case %c: ibv_post_send on the QP in ERR returns %d (expected 0)", id, rc))
        expect_wc(cq, qp, id, 99, IBV_WC_WR_FLUSH_ERR, "SEND posted after the error", 5, NULL);
    usleep(50 * 1000);
    struct ibv_wc stray;
    int n = ibv_poll_cq(cq, 1, &stray);
    check(n == 0, "case %c: no further completion (got %s)", id,
          n ? wc_status_name(stray.status) : "none");

    // Our own memory: the READ/atomic destination stays as it was (the source is read-only).
    size_t lchanged = 0, lfirst = 0;
    for (size_t i = 0; i < 2 * MR_LEN; ++i)
        if (local[i] != local_copy[i]) {
            if (!lchanged) lfirst = i;
            ++lchanged;
        }
    if (lchanged)
        check(0,
              "case %c: requester's local buffer changed: %zu bytes, the first at offset %zu (%s)",
              id, lchanged, lfirst,
              lfirst < MR_LEN ? "the WRITE/SEND source" : "the READ/atomic destination");
    else
        check(1, "case %c: requester's local buffer unchanged", id);

    // The responder's memory, the MR and the canary on both sides of it.
    write_all(fd, &(struct msg){.type = M_CHECK, .id = id}, sizeof(struct msg));
    struct msg res_m;
    read_all(fd, &res_m, sizeof res_m);
    if (res_m.type != M_RESULT) die("side channel: expected RESULT, got %u", res_m.type);
    check(res_m.changed == 0 && res_m.sum_before == res_m.sum_after,
          "case %c: responder memory unchanged: %" PRIu64
          " of %d bytes changed, checksum %#018" PRIx64 " before, %#018" PRIx64
          " after (the MR is bytes %d-%d, canary around it)",
          id, res_m.changed, BUF_LEN, res_m.sum_before, res_m.sum_after, MR_OFF,
          MR_OFF + MR_LEN - 1);
    if (res_m.changed)
        note("case %c: first changed responder byte at offset %" PRIu64 " (%s the MR)", id,
             res_m.first_changed,
             res_m.first_changed < MR_OFF            ? "before"
             : res_m.first_changed < MR_OFF + MR_LEN ? "inside"
                                                     : "after");
    if (id != 'g') {
        int want_ev = expected_event(id);
        // The responder stays in RTS where it refused nothing (RNR NAKs, a local error).
        int want_state = id == 'f' || id == 'j' || id == 'h' ? IBV_QPS_RTS : IBV_QPS_ERR;
        note("case %c: responder saw async event %s (%d in all; expected %s), its QP is in %s "
             "(expected %s) -- %s",
             id, event_name(res_m.event), res_m.events, event_name(want_ev),
             qp_state_name((enum ibv_qp_state)res_m.qp_state),
             qp_state_name((enum ibv_qp_state)want_state),
             res_m.event == want_ev && res_m.qp_state == want_state ? "as expected" : "DIFFERS");
    }

    if (ibv_destroy_qp(qp)) die("ibv_destroy_qp failed");
    if (ibv_destroy_cq(cq)) die("ibv_destroy_cq failed");
    if (ibv_dereg_mr(lmr)) die("ibv_dereg_mr failed");
    free(local);
    free(local_copy);
}

// Case i: a refused verb, on the client alone.
static void refused_modify(const struct dev* d, struct ibv_pd* pd) {
    printf("---- case i: %s\n", case_title('i'));
    struct ibv_cq* cq = ibv_create_cq(d->ctx, 4, NULL, NULL, 0);
    if (!cq) die("ibv_create_cq: %s", strerror(errno));
    struct ibv_qp* qp = create_rc_qp(pd, cq, cq, 4, 4, 1, 0);
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1};
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
        die("case i: RESET->INIT failed");
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.ah_attr.is_global = 1;
    a.ah_attr.port_num = 1;
    memcpy(a.ah_attr.grh.dgid.raw, d->gid.raw, 16);
    expect_explain("ibv_modify_qp refused (EINVAL): qp %#x: IBV_QP_DEST_QPN missing for INIT->RTR "
                   "on RC",
                   qp->qp_num);
    int rc = ibv_modify_qp(qp, &a,
                           IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_RQ_PSN |
                               IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    check(rc == EINVAL,
          "case i: ibv_modify_qp INIT->RTR without IBV_QP_DEST_QPN -> %s (expected "
          "EINVAL)",
          rc == EINVAL ? "EINVAL" : strerror(rc));
    if (ibv_destroy_qp(qp) || ibv_destroy_cq(cq)) die("case i: cleaning up failed");
}

static void client(int port, const char* cases, const char* sync_dir) {
    g_role = "client";
    struct dev d;
    dev_open(&d);
    int fd = tcp_connect(port);
    struct ibv_pd* pd = ibv_alloc_pd(d.ctx);
    if (!pd) die("ibv_alloc_pd: %s", strerror(errno));
    for (const char* c = cases; *c; ++c)
        if (*c == 'i')
            refused_modify(&d, pd);
        else
            run_case(&d, pd, fd, *c, sync_dir);
    if (!strchr(cases, 'g')) write_all(fd, &(struct msg){.type = M_END}, sizeof(struct msg));
    ibv_dealloc_pd(pd);
    ibv_close_device(d.ctx);
    close(fd);
    if (g_failures) {
        printf("FAILED: %d check(s) failed\n", g_failures);
        exit(1);
    }
    printf("PASS: every case gave the expected completions\n");
}

int main(int argc, char** argv) {
    static const struct option opts[] = {
        {"server", no_argument, 0, 'S'},
        {"client", no_argument, 0, 'C'},
        {"port", required_argument, 0, 'p'},
        {"port-file", required_argument, 0, 'f'},
        {"cases", required_argument, 0, 'c'},
        {"sync-dir", required_argument, 0, 'y'},
        {0, 0, 0, 0},
    };
    int is_server = 0, is_client = 0, port = -1, c;
    const char *port_file = NULL, *cases = NULL, *sync_dir = NULL;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'S':
            is_server = 1;
            break;
        case 'C':
            is_client = 1;
            break;
        case 'p':
            port = atoi(optarg);
            break;
        case 'f':
            port_file = optarg;
            break;
        case 'c':
            cases = optarg;
            break;
        case 'y':
            sync_dir = optarg;
            break;
        default:
            port = -2;
        }
    }
    if (!cases) cases = sync_dir ? "abcdeEfkhjig" : "abcdeEfkhji";
    int bad = is_server == is_client || port < 0 || optind != argc;
    for (const char* p = cases; *p; ++p)
        bad |= !case_title(*p) || (*p == 'g' && (!sync_dir || p[1]));
    if (bad) {
        fprintf(stderr,
                "usage: rc_errors --server --port P [--port-file F]\n"
                "       rc_errors --client --port P [--cases abcdeEfkhjig] [--sync-dir DIR]\n"
                "  (case g needs --sync-dir and must come last)\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (is_server)
        server(port, port_file);
    else
        client(port, cases, sync_dir);
    return 0;
}
