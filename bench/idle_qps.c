/* idle_qps: what an idle RC QP costs the NIC daemon in memory. Opens the first device, one PD
 * and one CQ, reads the daemon's RSS and PSS (/proc/PID/smaps_rollup), creates N RC QPs with
 * ibv_rc_pingpong's caps (1 send WR, 500 receive WRs, 1 SGE each), reads them again, connects
 * the QPs in pairs on this host (INIT, RTR, RTS: what an established but silent connection
 * holds) and reads them a third time. Prints lines report.py parses:
 *   idle_qps base|created|connected QPS RSS_KIB PSS_KIB
 * The daemon's memory is read from here because the daemon is the process that owns a QP's
 * state; the app's own share of the rings is not counted.
 *
 * usage: idle_qps N DAEMON_PID [SEND_WR RECV_WR]     (N even)
 * Built by bench/run.sh with `cc -O2 ... -libverbs` into its temp dir; runs under rdmaemu run. */
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int read_rollup(long pid, long* rss_kib, long* pss_kib) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%ld/smaps_rollup", pid);
    FILE* f = fopen(path, "r");
    if (!f) return -1;
    *rss_kib = *pss_kib = -1;
    while (fgets(line, sizeof line, f)) {
        sscanf(line, "Rss: %ld kB", rss_kib);
        sscanf(line, "Pss: %ld kB", pss_kib);
    }
    fclose(f);
    return *rss_kib < 0 || *pss_kib < 0 ? -1 : 0;
}

static int report(const char* stage, int qps, long pid) {
    long rss, pss;
    if (read_rollup(pid, &rss, &pss)) {
        fprintf(stderr, "idle_qps: cannot read /proc/%ld/smaps_rollup\n", pid);
        return -1;
    }
    printf("idle_qps %s %d %ld %ld\n", stage, qps, rss, pss);
    fflush(stdout);
    return 0;
}

/* Moves qp to RTS, connected to the QP numbered dest on this port (RoCE: GID index 0). */
static int connect_qp(struct ibv_qp* qp, uint32_t dest, const union ibv_gid* gid, uint8_t port) {
    struct ibv_qp_attr a;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_INIT;
    a.port_num = port;
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
        return -1;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = dest;
    a.rq_psn = 0;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid = *gid;
    a.ah_attr.grh.hop_limit = 1;
    a.ah_attr.port_num = port;
    if (ibv_modify_qp(qp, &a,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
        return -1;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.sq_psn = 0;
    a.max_rd_atomic = 1;
    return ibv_modify_qp(qp, &a,
                         IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                             IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

int main(int argc, char** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s N DAEMON_PID [SEND_WR RECV_WR]\n", argv[0]);
        return 2;
    }
    int n = atoi(argv[1]);
    long pid = atol(argv[2]);
    int send_wr = argc > 4 ? atoi(argv[3]) : 1;
    int recv_wr = argc > 4 ? atoi(argv[4]) : 500;
    if (n <= 0 || n % 2 || pid <= 0) {
        fprintf(stderr, "idle_qps: N must be even and positive, DAEMON_PID a pid\n");
        return 2;
    }
    const uint8_t port = 1;
    struct ibv_device** devs = ibv_get_device_list(NULL);
    struct ibv_context* ctx = devs && devs[0] ? ibv_open_device(devs[0]) : NULL;
    struct ibv_pd* pd = ctx ? ibv_alloc_pd(ctx) : NULL;
    /* One CQ for all: the figure is per QP, not per QP plus its CQ. */
    struct ibv_cq* cq = pd ? ibv_create_cq(ctx, 2 * n * (send_wr + recv_wr), NULL, NULL, 0) : NULL;
    union ibv_gid gid;
    if (!cq || ibv_query_gid(ctx, port, 0, &gid)) {
        fprintf(stderr, "idle_qps: no device, PD, CQ or GID\n");
        return 1;
    }
    struct ibv_qp** qps = calloc((size_t)n, sizeof *qps);
    if (!qps || report("base", 0, pid)) return 1;

    struct ibv_qp_init_attr init;
    memset(&init, 0, sizeof init);
    init.send_cq = init.recv_cq = cq;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = (uint32_t)send_wr;
    init.cap.max_recv_wr = (uint32_t)recv_wr;
    init.cap.max_send_sge = init.cap.max_recv_sge = 1;
    for (int i = 0; i < n; i++) {
        qps[i] = ibv_create_qp(pd, &init);
        if (!qps[i]) {
            perror("idle_qps: ibv_create_qp");
            fprintf(stderr, "idle_qps: after %d QPs\n", i);
            return 1;
        }
    }
    if (report("created", n, pid)) return 1;

    for (int i = 0; i < n; i++) {
        if (connect_qp(qps[i], qps[i ^ 1]->qp_num, &gid, port)) {
            perror("idle_qps: ibv_modify_qp");
            fprintf(stderr, "idle_qps: QP %d of %d\n", i, n);
            return 1;
        }
    }
    if (report("connected", n, pid)) return 1;

    for (int i = 0; i < n; i++)
        ibv_destroy_qp(qps[i]);
    free(qps);
    ibv_destroy_cq(cq);
    ibv_dealloc_pd(pd);
    ibv_close_device(ctx);
    ibv_free_device_list(devs);
    return 0;
}
