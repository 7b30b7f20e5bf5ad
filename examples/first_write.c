// first_write.c: one RDMA WRITE. The client writes a message straight into the server's memory;
// the server's CPU takes no part until it looks at its buffer afterwards and checks the bytes.
//
//   rdmaemu up --hosts 2
//   rdmaemu run --host 1 -- build/bin/examples/first_write -p 18515 &
//   rdmaemu run --host 2 -- build/bin/examples/first_write -p 18515 127.0.0.1
//
// The steps are those of every verbs program:
//   1. open the device                      ibv_get_device_list, ibv_open_device
//   2. a protection domain (PD)             ibv_alloc_pd: the objects below belong to it
//   3. register memory (MR)                 ibv_reg_mr: pins the buffer, returns lkey and rkey
//   4. a completion queue (CQ)              ibv_create_cq: where finished work is reported
//   5. a queue pair (QP)                    ibv_create_qp: a send queue and a receive queue
//   6. swap QP number, PSN, GID, address and rkey with the peer (here over TCP)
//   7. take the QP RESET -> INIT -> RTR -> RTS   ibv_modify_qp, three times
//   8. post work requests, poll completions ibv_post_send, ibv_poll_cq
#include "exchange.h"

#include <infiniband/verbs.h>

static const char message[] = "Hello, RDMA! This was written by the peer's NIC.";

// Step 7: the three transitions of an RC QP (IBA 11.2.5: each needs these attributes).
static void connect_qp(struct ibv_qp* qp, const struct conn_info* peer, uint32_t my_psn) {
    int err; // the verbs that can fail return an errno value
    // RESET -> INIT: which port, and what the *peer* may do to memory through this QP.
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT,
                            .port_num = 1,
                            .pkey_index = 0,
                            .qp_access_flags = IBV_ACCESS_REMOTE_WRITE};
    if ((err = ibv_modify_qp(qp, &a,
                             IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)))
        die("ibv_modify_qp(INIT): %s", strerror(err));

    // INIT -> RTR (ready to receive): who the peer is. On RoCE the address is the peer's GID in
    // a global route header (is_global = 1); there are no LIDs.
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = peer->qpn;
    a.rq_psn = peer->psn;
    a.max_dest_rd_atomic = 1; // READs/atomics the peer may have outstanding at us
    a.min_rnr_timer = 12;
    a.ah_attr.is_global = 1;
    memcpy(a.ah_attr.grh.dgid.raw, peer->gid, 16);
    a.ah_attr.grh.sgid_index = 0;
    a.ah_attr.grh.hop_limit = 1;
    a.ah_attr.port_num = 1;
    if ((err = ibv_modify_qp(qp, &a,
                             IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                 IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)))
        die("ibv_modify_qp(RTR): %s", strerror(err));

    // RTR -> RTS (ready to send): the requester's side: our first PSN, how long to wait for an
    // ACK (4.096 us * 2^timeout) and how often to retry before giving up.
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = my_psn;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 1;
    if ((err = ibv_modify_qp(qp, &a,
                             IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                 IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC)))
        die("ibv_modify_qp(RTS): %s", strerror(err));
}

int main(int argc, char** argv) {
    struct args args = parse_args(argc, argv);
    const char* me = args.me;

    // 1. The device. Under `rdmaemu run` the process sees one: emu0.
    struct ibv_device** list = ibv_get_device_list(NULL);
    if (!list || !list[0]) die("no RDMA device (is the host up? run under `rdmaemu run`)");
    struct ibv_context* ctx = ibv_open_device(list[0]);
    if (!ctx) die("ibv_open_device: %s", strerror(errno));

    // 2. A protection domain: an MR and a QP work together only if they share one.
    struct ibv_pd* pd = ibv_alloc_pd(ctx);
    if (!pd) die("ibv_alloc_pd: %s", strerror(errno));

    // 3. The buffer, registered. The server lets the peer write into it (REMOTE_WRITE needs
    // LOCAL_WRITE too); the client only reads its own copy of the message from it.
    char* buf = calloc(1, 4096);
    if (!buf) die("out of memory");
    int access = args.is_client ? 0 : IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
    struct ibv_mr* mr = ibv_reg_mr(pd, buf, 4096, access);
    if (!mr) die("ibv_reg_mr: %s", strerror(errno));

    // 4. and 5. One CQ for both queues of one RC (reliable connected) QP.
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

    // 6. Tell the peer who we are and where our buffer is; learn the same about it.
    struct conn_info mine = {.qpn = qp->qp_num,
                             .psn = args.is_client ? 2000 : 1000,
                             .addr = (uintptr_t)buf,
                             .rkey = mr->rkey,
                             .len = 4096},
                     peer;
    union ibv_gid gid;
    if (ibv_query_gid(ctx, 1, 0, &gid)) die("ibv_query_gid: %s", strerror(errno));
    memcpy(mine.gid, gid.raw, 16);
    int fd = side_channel_open(&args);
    side_channel_swap(fd, &mine, &peer, sizeof mine);
    printf("%s: my QP 0x%06x, MR lkey 0x%08x rkey 0x%08x; peer QP 0x%06x\n", me, qp->qp_num,
           mr->lkey, mr->rkey, peer.qpn);

    // 7. Connect.
    connect_qp(qp, &peer, mine.psn);
    side_channel_sync(fd); // both QPs are in RTS before anything is sent

    if (args.is_client) {
        // 8. The client: one RDMA WRITE of the message from our MR (lkey) into the server's MR
        // (its address and rkey). IBV_SEND_SIGNALED asks for a completion when the server's
        // NIC has acknowledged it, i.e. the bytes are in the server's memory.
        memcpy(buf, message, sizeof message);
        struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = sizeof message, .lkey = mr->lkey};
        struct ibv_send_wr wr = {.wr_id = 1,
                                 .sg_list = &sge,
                                 .num_sge = 1,
                                 .opcode = IBV_WR_RDMA_WRITE,
                                 .send_flags = IBV_SEND_SIGNALED,
                                 .wr.rdma = {.remote_addr = peer.addr, .rkey = peer.rkey}};
        struct ibv_send_wr* bad;
        int err = ibv_post_send(qp, &wr, &bad); // returns an errno value
        if (err) die("ibv_post_send: %s", strerror(err));

        // Busy-poll the CQ (what RDMA programs do when latency matters), for 10 s at most.
        struct ibv_wc wc;
        int n;
        time_t give_up = time(NULL) + 10;
        while ((n = ibv_poll_cq(cq, 1, &wc)) == 0 && time(NULL) < give_up) {
        }
        if (n <= 0) die("no completion for the WRITE within the time allowed");
        if (wc.status != IBV_WC_SUCCESS)
            die("the WRITE failed: %s (%d)", ibv_wc_status_str(wc.status), wc.status);
        printf("client: RDMA WRITE of %zu bytes to 0x%llx rkey 0x%08x completed\n", sizeof message,
               (unsigned long long)peer.addr, peer.rkey);
        side_channel_sync(fd); // tell the server it may look
    } else {
        // The server posts nothing and polls nothing: its NIC places the bytes. It waits until
        // the client says it is done, then checks its buffer byte for byte.
        side_channel_sync(fd);
        if (memcmp(buf, message, sizeof message) != 0)
            die("server: my buffer does not hold the message; it holds \"%.64s\"", buf);
        printf("server: my buffer now holds \"%s\" (%zu bytes, byte for byte)\n", buf,
               sizeof message);
    }

    // Tear down in the reverse order of creation.
    ibv_destroy_qp(qp);
    ibv_destroy_cq(cq);
    ibv_dereg_mr(mr);
    ibv_dealloc_pd(pd);
    ibv_close_device(ctx);
    ibv_free_device_list(list);
    free(buf);
    close(fd);
    printf("%s: PASS\n", me);
    return 0;
}
