// trace_wrs: what the verbs trace (RDMAEMU_TRACE) shows of work requests, completions, flags and
// async events, on one host: a loopback RC pair posts an RDMA WRITE with immediate from two SGEs,
// an inline SEND with immediate, a READ, a FETCH_ADD and a CMP_SWAP, and then a WRITE with a
// wrong rkey, whose async event it reads. For each it prints "trace: TEXT", the trace line it
// expects after the time stamp and thread id, with its own addresses, keys and QP numbers;
// verbs_trace.sh finds each one, word for word, in the trace.
//
// Usage: trace_wrs
#include "rc_common.h"

#include <inttypes.h>

enum { LEN = 8192 };

__attribute__((format(printf, 1, 2))) static void expect(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("trace: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
}

static void post_send(struct ibv_qp* qp, struct ibv_send_wr* wr) {
    struct ibv_send_wr* bad = NULL;
    if (ibv_post_send(qp, wr, &bad)) die("ibv_post_send(wr_id %" PRIu64 ") failed", wr->wr_id);
}

// As connect_loopback_pair, with room for two SGEs and inline data.
static struct loopback_pair connect_pair(const struct dev* d, struct ibv_pd* pd,
                                         struct ibv_cq* cq) {
    struct loopback_pair p = {create_rc_qp(pd, cq, cq, 8, 8, 2, 64),
                              create_rc_qp(pd, cq, cq, 8, 8, 2, 64)};
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
        die("connecting the pair: %s", strerror(errno));
    return p;
}

static struct ibv_wc poll_one(struct ibv_cq* cq) {
    struct ibv_wc wc;
    double deadline = now_s() + 10;
    while (ibv_poll_cq(cq, 1, &wc) == 0)
        if (now_s() > deadline) die("no completion within 10 s");
    return wc;
}

int main(void) {
    g_role = "trace_wrs";
    setvbuf(stdout, NULL, _IOLBF, 0);
    struct dev d;
    dev_open(&d);
    struct ibv_pd* pd = ibv_alloc_pd(d.ctx);
    if (!pd) die("ibv_alloc_pd: %s", strerror(errno));
    const int all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                    IBV_ACCESS_REMOTE_ATOMIC;
    uint8_t* buf = xaligned(4096, LEN);
    memset(buf, 0, LEN);
    struct ibv_mr* mr = reg_mr(pd, buf, LEN, all);
    expect("verb ibv_reg_mr(pd(%u), %p, %d, IBV_ACCESS_LOCAL_WRITE|IBV_ACCESS_REMOTE_WRITE|"
           "IBV_ACCESS_REMOTE_READ|IBV_ACCESS_REMOTE_ATOMIC) = mr(len=%d lkey=%#x rkey=%#x)",
           pd->handle, (void*)buf, LEN, LEN, mr->lkey, mr->rkey);
    struct ibv_cq* cq = ibv_create_cq(d.ctx, 64, NULL, NULL, 0);
    if (!cq) die("ibv_create_cq: %s", strerror(errno));
    struct loopback_pair p = connect_pair(&d, pd, cq);
    expect("verb ibv_modify_qp(qp(qpn=%#x type=IBV_QPT_RC), { state=IBV_QPS_INIT pkey_index=0 "
           "port=1 access=IBV_ACCESS_LOCAL_WRITE|IBV_ACCESS_REMOTE_WRITE|IBV_ACCESS_REMOTE_READ|"
           "IBV_ACCESS_REMOTE_ATOMIC } mask=IBV_QP_STATE|IBV_QP_ACCESS_FLAGS|IBV_QP_PKEY_INDEX|"
           "IBV_QP_PORT) = 0",
           p.a->qp_num);
    const uintptr_t base = (uintptr_t)buf;

    // Two receives on b, for the WRITE with immediate and the SEND.
    for (uint64_t id = 10; id < 12; ++id) {
        struct ibv_sge sge = {base + 4096 + 512 * (id - 10), 512, mr->lkey};
        struct ibv_recv_wr wr = {.wr_id = id, .sg_list = &sge, .num_sge = 1}, *bad = NULL;
        if (ibv_post_recv(p.b, &wr, &bad)) die("ibv_post_recv failed");
        expect("wr recv qp=%#x wr_id=%" PRIu64 " sge=1 len=512 sg_list[0]={addr=%#" PRIxPTR
               " length=512 lkey=%#x}",
               p.b->qp_num, id, sge.addr, mr->lkey);
    }

    struct ibv_sge two[2] = {{base, 100, mr->lkey}, {base + 200, 28, mr->lkey}};
    struct ibv_send_wr w = {.wr_id = 1,
                            .sg_list = two,
                            .num_sge = 2,
                            .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
                            .send_flags = IBV_SEND_SIGNALED,
                            .imm_data = htonl(0x01020304)};
    w.wr.rdma.remote_addr = base + 2048;
    w.wr.rdma.rkey = mr->rkey;
    post_send(p.a, &w);
    expect("wr send qp=%#x wr_id=1 opcode=IBV_WR_RDMA_WRITE_WITH_IMM flags=IBV_SEND_SIGNALED sge=2 "
           "len=128 sg_list[0]={addr=%#" PRIxPTR " length=100 lkey=%#x} sg_list[1]={addr=%#" PRIxPTR
           " length=28 lkey=%#x} remote_addr=%#" PRIxPTR " rkey=%#x imm_data=0x01020304",
           p.a->qp_num, base, mr->lkey, base + 200, mr->lkey, base + 2048, mr->rkey);

    struct ibv_sge one = {base + 300, 16, mr->lkey};
    struct ibv_send_wr s = {.wr_id = 2,
                            .sg_list = &one,
                            .num_sge = 1,
                            .opcode = IBV_WR_SEND_WITH_IMM,
                            .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE,
                            .imm_data = htonl(0xa1b2c3d4)};
    post_send(p.a, &s);
    expect("wr send qp=%#x wr_id=2 opcode=IBV_WR_SEND_WITH_IMM flags=IBV_SEND_SIGNALED|"
           "IBV_SEND_INLINE sge=1 len=16 sg_list[0]={addr=%#" PRIxPTR
           " length=16 lkey=%#x} imm_data=0xa1b2c3d4",
           p.a->qp_num, base + 300, mr->lkey);

    struct ibv_sge rd = {base + 6144, 64, mr->lkey};
    struct ibv_send_wr r = {.wr_id = 3,
                            .sg_list = &rd,
                            .num_sge = 1,
                            .opcode = IBV_WR_RDMA_READ,
                            .send_flags = IBV_SEND_SIGNALED};
    r.wr.rdma.remote_addr = base;
    r.wr.rdma.rkey = mr->rkey;
    post_send(p.a, &r);
    expect("wr send qp=%#x wr_id=3 opcode=IBV_WR_RDMA_READ flags=IBV_SEND_SIGNALED sge=1 len=64 "
           "sg_list[0]={addr=%#" PRIxPTR " length=64 lkey=%#x} remote_addr=%#" PRIxPTR " rkey=%#x",
           p.a->qp_num, rd.addr, mr->lkey, base, mr->rkey);

    struct ibv_sge old = {base + 7168, 8, mr->lkey};
    struct ibv_send_wr fa = {.wr_id = 4,
                             .sg_list = &old,
                             .num_sge = 1,
                             .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
                             .send_flags = IBV_SEND_SIGNALED};
    fa.wr.atomic.remote_addr = base + 4000;
    fa.wr.atomic.rkey = mr->rkey;
    fa.wr.atomic.compare_add = 5;
    post_send(p.a, &fa);
    expect("wr send qp=%#x wr_id=4 opcode=IBV_WR_ATOMIC_FETCH_AND_ADD flags=IBV_SEND_SIGNALED "
           "sge=1 len=8 sg_list[0]={addr=%#" PRIxPTR " length=8 lkey=%#x} remote_addr=%#" PRIxPTR
           " rkey=%#x compare_add=0x5 swap=0x0",
           p.a->qp_num, old.addr, mr->lkey, base + 4000, mr->rkey);
    struct ibv_send_wr cs = fa;
    cs.wr_id = 5;
    cs.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
    cs.wr.atomic.swap = 0x77;
    post_send(p.a, &cs);
    expect("wr send qp=%#x wr_id=5 opcode=IBV_WR_ATOMIC_CMP_AND_SWP flags=IBV_SEND_SIGNALED "
           "sge=1 len=8 sg_list[0]={addr=%#" PRIxPTR " length=8 lkey=%#x} remote_addr=%#" PRIxPTR
           " rkey=%#x compare_add=0x5 swap=0x77",
           p.a->qp_num, old.addr, mr->lkey, base + 4000, mr->rkey);

    // Seven completions; the WRITE with immediate consumed receive 10, the SEND receive 11.
    for (int i = 0; i < 7; ++i) {
        struct ibv_wc wc = poll_one(cq);
        if (wc.status != IBV_WC_SUCCESS)
            die("wr_id %" PRIu64 ": %s", wc.wr_id, wc_status_name(wc.status));
        if (wc.wr_id == 10)
            expect("wc IBV_WC_SUCCESS opcode=IBV_WC_RECV_RDMA_WITH_IMM qp=%#x wr_id=10 len=128 "
                   "wc_flags=IBV_WC_WITH_IMM src_qp=%#x imm_data=0x01020304",
                   p.b->qp_num, p.a->qp_num);
        if (wc.wr_id == 11)
            expect("wc IBV_WC_SUCCESS opcode=IBV_WC_RECV qp=%#x wr_id=11 len=16 "
                   "wc_flags=IBV_WC_WITH_IMM src_qp=%#x imm_data=0xa1b2c3d4",
                   p.b->qp_num, p.a->qp_num);
        if (wc.wr_id == 4)
            expect("wc IBV_WC_SUCCESS opcode=IBV_WC_FETCH_ADD qp=%#x wr_id=4 len=8", p.a->qp_num);
    }

    // A WRITE with a wrong rkey: b refuses it and raises an async event.
    struct ibv_send_wr bad = {.wr_id = 6,
                              .sg_list = &one,
                              .num_sge = 1,
                              .opcode = IBV_WR_RDMA_WRITE,
                              .send_flags = IBV_SEND_SIGNALED};
    bad.wr.rdma.remote_addr = base;
    bad.wr.rdma.rkey = mr->rkey ^ 0x100;
    post_send(p.a, &bad);
    struct ibv_wc wc = poll_one(cq);
    expect("wc IBV_WC_REM_ACCESS_ERR opcode=- qp=%#x wr_id=6 len=0", p.a->qp_num);
    if (wc.status != IBV_WC_REM_ACCESS_ERR) die("wr_id 6: %s", wc_status_name(wc.status));
    struct ibv_async_event ev;
    if (ibv_get_async_event(d.ctx, &ev)) die("ibv_get_async_event: %s", strerror(errno));
    expect("verb ibv_get_async_event(ctx(%s), %p) = 0 {IBV_EVENT_QP_ACCESS_ERR qp=%#x}", d.name,
           (void*)&ev, p.b->qp_num);
    ibv_ack_async_event(&ev);
    printf("PASS: every work request posted and completed\n");
    return 0;
}
