// send_recv.c: two-sided messaging. The server posts a receive (a buffer waiting for the next
// message); the client SENDs; the message lands in that buffer and *both* sides get a
// completion: the sender's says "delivered and acknowledged", the receiver's says "a message of
// N bytes arrived". Unlike a WRITE, the receiver chooses where the data goes, and is told.
//
//   rdmaemu run --host 1 -- build/bin/examples/send_recv -p 18515 &
//   rdmaemu run --host 2 -- build/bin/examples/send_recv -p 18515 127.0.0.1
//
// The setup (device, PD, MR, CQ, QP, the three transitions) is the same as in first_write.c,
// which explains each step; here only what differs is commented.
#include "exchange.h"

#include <infiniband/verbs.h>

static const char message[] = "Hello over SEND/RECV: the receiver picked this buffer.";

// RESET -> INIT. Receives can be posted from INIT on (not in RESET), so this step comes first.
static void qp_to_init(struct ibv_qp* qp) {
    int err;
    // Two-sided operations need no remote access rights: the peer never names our memory.
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = 0};
    if ((err = ibv_modify_qp(qp, &a,
                             IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)))
        die("ibv_modify_qp(INIT): %s", strerror(err));
}

// INIT -> RTR -> RTS, once the peer's QP number, PSN and GID are known.
static void connect_qp(struct ibv_qp* qp, const struct conn_info* peer, uint32_t my_psn) {
    int err; // the verbs that can fail return an errno value
    struct ibv_qp_attr a = {0};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = peer->qpn;
    a.rq_psn = peer->psn;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12; // how long a sender waits after "receiver not ready" (RNR NAK)
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
    a.rnr_retry = 7; // a SEND that finds no receive posted is retried (7: forever)
    a.max_rd_atomic = 1;
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

int main(int argc, char** argv) {
    struct args args = parse_args(argc, argv);

    struct ibv_device** list = ibv_get_device_list(NULL);
    if (!list || !list[0]) die("no RDMA device (is the host up? run under `rdmaemu run`)");
    struct ibv_context* ctx = ibv_open_device(list[0]);
    if (!ctx) die("ibv_open_device: %s", strerror(errno));
    struct ibv_pd* pd = ibv_alloc_pd(ctx);
    if (!pd) die("ibv_alloc_pd: %s", strerror(errno));
    // The receiver's NIC writes into its receive buffer: that is a *local* write.
    char* buf = calloc(1, 4096);
    if (!buf) die("out of memory");
    struct ibv_mr* mr = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
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

    // The server posts its receive *before* it tells the client it exists: a SEND that arrives
    // with no receive posted is refused with an RNR NAK and has to be sent again later.
    qp_to_init(qp);
    if (!args.is_client) {
        struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = 4096, .lkey = mr->lkey};
        struct ibv_recv_wr wr = {.wr_id = 7, .sg_list = &sge, .num_sge = 1}, *bad;
        int err = ibv_post_recv(qp, &wr, &bad); // returns an errno value
        if (err) die("ibv_post_recv: %s", strerror(err));
    }

    // Only the QP's identity goes over the side channel: no address, no rkey.
    struct conn_info mine = {.qpn = qp->qp_num, .psn = args.is_client ? 2000 : 1000}, peer;
    union ibv_gid gid;
    if (ibv_query_gid(ctx, 1, 0, &gid)) die("ibv_query_gid: %s", strerror(errno));
    memcpy(mine.gid, gid.raw, 16);
    int fd = side_channel_open(&args);
    side_channel_swap(fd, &mine, &peer, sizeof mine);
    connect_qp(qp, &peer, mine.psn);
    side_channel_sync(fd);

    if (args.is_client) {
        // A SEND names only local memory (lkey): where the message comes from.
        memcpy(buf, message, sizeof message);
        struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = sizeof message, .lkey = mr->lkey};
        struct ibv_send_wr wr = {.wr_id = 1,
                                 .sg_list = &sge,
                                 .num_sge = 1,
                                 .opcode = IBV_WR_SEND,
                                 .send_flags = IBV_SEND_SIGNALED},
                           *bad;
        int err = ibv_post_send(qp, &wr, &bad); // returns an errno value
        if (err) die("ibv_post_send: %s", strerror(err));
        struct ibv_wc wc = wait_completion(cq, "SEND");
        printf("client: SEND of %zu bytes completed (wr_id %llu, opcode IBV_WC_SEND=%d)\n",
               sizeof message, (unsigned long long)wc.wr_id, wc.opcode);
    } else {
        // The receiver is told: a completion for its receive, with the length that arrived.
        struct ibv_wc wc = wait_completion(cq, "RECV");
        if (wc.opcode != IBV_WC_RECV) die("expected IBV_WC_RECV, got opcode %d", wc.opcode);
        if (wc.byte_len != sizeof message)
            die("received %u bytes, expected %zu", wc.byte_len, sizeof message);
        if (memcmp(buf, message, sizeof message) != 0)
            die("the received bytes differ from the message: \"%.64s\"", buf);
        printf("server: RECV completion (wr_id %llu): %u bytes: \"%s\" (byte for byte)\n",
               (unsigned long long)wc.wr_id, wc.byte_len, buf);
    }
    side_channel_sync(fd); // neither side tears down while the other still works

    ibv_destroy_qp(qp);
    ibv_destroy_cq(cq);
    ibv_dereg_mr(mr);
    ibv_dealloc_pd(pd);
    ibv_close_device(ctx);
    ibv_free_device_list(list);
    free(buf);
    close(fd);
    printf("%s: PASS\n", args.me);
    return 0;
}
