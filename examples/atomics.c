// atomics.c: fetch-and-add and compare-and-swap on a 64-bit counter in the server's memory. The
// server's NIC does each one as a single indivisible read-modify-write and answers with the
// value the counter had *before*: many clients can share a counter, a lock or a ticket without
// the server's CPU. The counter must be 8-byte aligned.
//
//   rdmaemu run --host 1 -- build/bin/examples/atomics -p 18515 &
//   rdmaemu run --host 2 -- build/bin/examples/atomics -p 18515 127.0.0.1
//
// The setup is that of first_write.c, which explains each step; here only what differs is
// commented.
#include "exchange.h"

#include <infiniband/verbs.h>

static void connect_qp(struct ibv_qp* qp, const struct conn_info* peer, uint32_t my_psn) {
    int err; // the verbs that can fail return an errno value
    // The peer may run atomics on our memory through this QP (the MR must allow it too).
    struct ibv_qp_attr a = {
        .qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = IBV_ACCESS_REMOTE_ATOMIC};
    if ((err = ibv_modify_qp(qp, &a,
                             IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)))
        die("ibv_modify_qp(INIT): %s", strerror(err));
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = peer->qpn;
    a.rq_psn = peer->psn;
    a.max_dest_rd_atomic = 1; // READs and atomics the peer may have outstanding at our NIC
    a.min_rnr_timer = 12;
    a.ah_attr.is_global = 1;
    memcpy(a.ah_attr.grh.dgid.raw, peer->gid, 16);
    a.ah_attr.grh.hop_limit = 1;
    a.ah_attr.port_num = 1;
    if ((err = ibv_modify_qp(qp, &a,
                             IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                 IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)))
        die("ibv_modify_qp(RTR): %s", strerror(err));
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = my_psn;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 1; // READs and atomics we may have outstanding
    if ((err = ibv_modify_qp(qp, &a,
                             IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                 IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC)))
        die("ibv_modify_qp(RTS): %s", strerror(err));
}

// Waits up to 10 s for one completion and checks it succeeded.
static struct ibv_wc wait_completion(struct ibv_cq* cq, const char* what) {
    struct ibv_wc wc;
    int n;
    time_t give_up = time(NULL) + 10;
    while ((n = ibv_poll_cq(cq, 1, &wc)) == 0 && time(NULL) < give_up) {
    }
    if (n <= 0) die("no completion for the %s within 10 s", what);
    if (wc.status != IBV_WC_SUCCESS)
        die("the %s failed: %s (%d)", what, ibv_wc_status_str(wc.status), wc.status);
    return wc;
}

// One atomic on the server's counter; returns the value the counter had before it.
static uint64_t atomic_op(struct ibv_qp* qp, struct ibv_cq* cq, struct ibv_mr* mr, uint64_t* result,
                          const struct conn_info* peer, enum ibv_wr_opcode op, uint64_t compare_add,
                          uint64_t swap) {
    // The old value comes back into 8 bytes of our own MR (hence LOCAL_WRITE).
    struct ibv_sge sge = {.addr = (uintptr_t)result, .length = 8, .lkey = mr->lkey};
    struct ibv_send_wr wr = {.wr_id = 1,
                             .sg_list = &sge,
                             .num_sge = 1,
                             .opcode = op,
                             .send_flags = IBV_SEND_SIGNALED,
                             .wr.atomic = {.remote_addr = peer->addr,
                                           .rkey = peer->rkey,
                                           .compare_add = compare_add, // the addend, or compare
                                           .swap = swap}},             // CMP_AND_SWP only
        *bad;
    int err = ibv_post_send(qp, &wr, &bad); // returns an errno value
    if (err) die("ibv_post_send: %s", strerror(err));
    wait_completion(cq, op == IBV_WR_ATOMIC_FETCH_AND_ADD ? "FETCH_AND_ADD" : "CMP_AND_SWP");
    return *result;
}

int main(int argc, char** argv) {
    struct args args = parse_args(argc, argv);

    struct ibv_device** list = ibv_get_device_list(NULL);
    if (!list || !list[0]) die("no RDMA device (is the host up? run under `rdmaemu run`)");
    struct ibv_context* ctx = ibv_open_device(list[0]);
    if (!ctx) die("ibv_open_device: %s", strerror(errno));
    struct ibv_pd* pd = ibv_alloc_pd(ctx);
    if (!pd) die("ibv_alloc_pd: %s", strerror(errno));
    // The server's counter starts at 100. REMOTE_ATOMIC needs LOCAL_WRITE as well.
    uint64_t* word = aligned_alloc(8, 8);
    if (!word) die("out of memory");
    *word = args.is_client ? 0 : 100;
    int access = IBV_ACCESS_LOCAL_WRITE | (args.is_client ? 0 : IBV_ACCESS_REMOTE_ATOMIC);
    struct ibv_mr* mr = ibv_reg_mr(pd, word, 8, access);
    if (!mr) die("ibv_reg_mr: %s", strerror(errno));
    struct ibv_cq* cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
    if (!cq) die("ibv_create_cq: %s", strerror(errno));
    struct ibv_qp_init_attr init = {
        .send_cq = cq,
        .recv_cq = cq,
        .qp_type = IBV_QPT_RC,
        .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
    };
    struct ibv_qp* qp = ibv_create_qp(pd, &init);
    if (!qp) die("ibv_create_qp: %s", strerror(errno));

    struct conn_info mine = {.qpn = qp->qp_num,
                             .psn = args.is_client ? 2000 : 1000,
                             .addr = (uintptr_t)word,
                             .rkey = mr->rkey,
                             .len = 8},
                     peer;
    union ibv_gid gid;
    if (ibv_query_gid(ctx, 1, 0, &gid)) die("ibv_query_gid: %s", strerror(errno));
    memcpy(mine.gid, gid.raw, 16);
    int fd = side_channel_open(&args);
    side_channel_swap(fd, &mine, &peer, sizeof mine);
    connect_qp(qp, &peer, mine.psn);
    side_channel_sync(fd);

    if (args.is_client) {
        // counter 100: add 5 -> returns 100, counter 105.
        uint64_t old = atomic_op(qp, cq, mr, word, &peer, IBV_WR_ATOMIC_FETCH_AND_ADD, 5, 0);
        if (old != 100) die("FETCH_AND_ADD returned %llu, expected 100", (unsigned long long)old);
        printf("client: FETCH_AND_ADD(+5)          -> old value 100 (counter now 105)\n");
        // counter 105: if it is 105, make it 42 -> returns 105: it matched, so it swapped.
        old = atomic_op(qp, cq, mr, word, &peer, IBV_WR_ATOMIC_CMP_AND_SWP, 105, 42);
        if (old != 105)
            die("CMP_AND_SWP(105->42) returned %llu, expected 105", (unsigned long long)old);
        printf("client: CMP_AND_SWP(if 105 then 42) -> old value 105: swapped (counter now 42)\n");
        // counter 42: if it is 105, make it 7 -> returns 42: no match, nothing changes.
        old = atomic_op(qp, cq, mr, word, &peer, IBV_WR_ATOMIC_CMP_AND_SWP, 105, 7);
        if (old != 42)
            die("CMP_AND_SWP(105->7) returned %llu, expected 42", (unsigned long long)old);
        printf("client: CMP_AND_SWP(if 105 then 7)  -> old value 42: no match, not swapped\n");
        side_channel_sync(fd);
    } else {
        side_channel_sync(fd); // the client is done
        if (*word != 42)
            die("my counter is %llu, expected 42 (100 + 5, then swapped for 42)",
                (unsigned long long)*word);
        printf("server: my counter went 100 -> 42 without my CPU touching it\n");
    }

    ibv_destroy_qp(qp);
    ibv_destroy_cq(cq);
    ibv_dereg_mr(mr);
    ibv_dealloc_pd(pd);
    ibv_close_device(ctx);
    ibv_free_device_list(list);
    free(word);
    close(fd);
    printf("%s: PASS\n", args.me);
    return 0;
}
