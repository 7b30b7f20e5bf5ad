// read.c: one RDMA READ. The client pulls 4096 bytes out of the server's memory into its own;
// the server's CPU does nothing (it does not even learn that it was read). The server's NIC
// answers the READ request with READ RESPONSE packets that carry the data.
//
//   rdmaemu run --host 1 -- build/bin/examples/read -p 18515 &
//   rdmaemu run --host 2 -- build/bin/examples/read -p 18515 127.0.0.1
//
// The setup is that of first_write.c, which explains each step; here only what differs is
// commented.
#include "exchange.h"

#include <infiniband/verbs.h>

enum { LEN = 4096 };

// The bytes the server offers: a pattern no other buffer holds by chance.
static unsigned char pattern(size_t i) {
    return (unsigned char)(i * 7 + 3);
}

static void connect_qp(struct ibv_qp* qp, const struct conn_info* peer, uint32_t my_psn) {
    int err; // the verbs that can fail return an errno value
    // The peer may READ our memory through this QP (the MR must allow it too).
    struct ibv_qp_attr a = {
        .qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = IBV_ACCESS_REMOTE_READ};
    if ((err = ibv_modify_qp(qp, &a,
                             IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)))
        die("ibv_modify_qp(INIT): %s", strerror(err));
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = peer->qpn;
    a.rq_psn = peer->psn;
    a.max_dest_rd_atomic = 1; // READs the peer may have outstanding at our NIC
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
    a.max_rd_atomic = 1; // READs we may have outstanding (0 would refuse any READ)
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
    // The server's MR allows REMOTE_READ; the client's allows LOCAL_WRITE, because its NIC
    // writes the READ's data into it.
    unsigned char* buf = calloc(1, LEN);
    if (!buf) die("out of memory");
    if (!args.is_client)
        for (size_t i = 0; i < LEN; i++)
            buf[i] = pattern(i);
    int access = args.is_client ? IBV_ACCESS_LOCAL_WRITE : IBV_ACCESS_REMOTE_READ;
    struct ibv_mr* mr = ibv_reg_mr(pd, buf, LEN, access);
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
                             .addr = (uintptr_t)buf,
                             .rkey = mr->rkey,
                             .len = LEN},
                     peer;
    union ibv_gid gid;
    if (ibv_query_gid(ctx, 1, 0, &gid)) die("ibv_query_gid: %s", strerror(errno));
    memcpy(mine.gid, gid.raw, 16);
    int fd = side_channel_open(&args);
    side_channel_swap(fd, &mine, &peer, sizeof mine);
    connect_qp(qp, &peer, mine.psn);
    side_channel_sync(fd);

    if (args.is_client) {
        // The READ: local buffer (lkey) <- remote address (rkey). The completion means the data
        // is in our buffer.
        struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = LEN, .lkey = mr->lkey};
        struct ibv_send_wr wr = {.wr_id = 1,
                                 .sg_list = &sge,
                                 .num_sge = 1,
                                 .opcode = IBV_WR_RDMA_READ,
                                 .send_flags = IBV_SEND_SIGNALED,
                                 .wr.rdma = {.remote_addr = peer.addr, .rkey = peer.rkey}},
                           *bad;
        int err = ibv_post_send(qp, &wr, &bad); // returns an errno value
        if (err) die("ibv_post_send: %s", strerror(err));
        wait_completion(cq, "READ");
        for (size_t i = 0; i < LEN; i++)
            if (buf[i] != pattern(i))
                die("byte %zu read as 0x%02x, the server holds 0x%02x", i, buf[i], pattern(i));
        printf("client: RDMA READ of %d bytes from 0x%llx rkey 0x%08x: every byte as the server "
               "holds it\n",
               LEN, (unsigned long long)peer.addr, peer.rkey);
    } else {
        printf("server: offering %d bytes at 0x%llx rkey 0x%08x; nothing to do but wait\n", LEN,
               (unsigned long long)(uintptr_t)buf, mr->rkey);
    }
    side_channel_sync(fd); // the server keeps its MR until the client has read it

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
