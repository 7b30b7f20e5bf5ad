// ud_integrity: datagrams over one UD QP pair, every one that arrives checked byte for byte. UD
// does not retransmit: on a faulty wire datagrams are lost (and may be duplicated), but each
// receive that completes with success must hold exactly what was sent. Built against the system
// <infiniband/verbs.h> and -libverbs, like rc_integrity.
//
//   server: ud_integrity --server --port P [--port-file F]
//   client: ud_integrity --client --port P [--count N] [--seed S] [--depth D]
// They meet on a TCP socket on 127.0.0.1:P (P = 0 on the server: any free port, written to F).
// Each datagram is a header (magic, length, key) and `length` bytes of the key's stream (gen()),
// of 0 to MTU - 16 bytes. The client sends N, each completing with IBV_WC_SUCCESS, then tells the
// server how many; the server reports how many arrived and were checked. Exits 1 at the first
// bad byte or unexpected completion.
#include "rc_common.h"

#include <getopt.h>
#include <inttypes.h>

enum { GRH = 40, HDR = 16, QKEY = 0x11111111, RECVS = 64 };
static const uint32_t kMagic = 0x55444731; // "UDG1"

struct dgram_header {
    uint32_t magic, len;
    uint64_t key;
};

struct ud_info {
    uint32_t qpn, mtu;
    uint8_t gid[16];
};

struct ud_end {
    uint64_t sent, received, checked;
};

static struct ibv_qp* create_ud_qp(struct ibv_pd* pd, struct ibv_cq* cq, uint32_t depth) {
    struct ibv_qp_init_attr ia = {
        .send_cq = cq,
        .recv_cq = cq,
        .cap = {.max_send_wr = depth, .max_recv_wr = RECVS, .max_send_sge = 1, .max_recv_sge = 1},
        .qp_type = IBV_QPT_UD,
    };
    struct ibv_qp* qp = ibv_create_qp(pd, &ia);
    if (!qp) die("ibv_create_qp(UD): %s", strerror(errno));
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY};
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
        die("UD QP to INIT");
    a.qp_state = IBV_QPS_RTR;
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE)) die("UD QP to RTR");
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = 0;
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN)) die("UD QP to RTS");
    return qp;
}

static uint32_t mtu_bytes(enum ibv_mtu mtu) {
    return 128u << mtu;
}

// One received datagram (after its 40-byte GRH) checked against the stream its header names.
static void check_datagram(const uint8_t* buf, const struct ibv_wc* wc, uint32_t mtu,
                           uint8_t* expect) {
    if (wc->status != IBV_WC_SUCCESS)
        die("a receive completed with %s (wr_id %" PRIu64 ")", wc_status_name(wc->status),
            wc->wr_id);
    struct dgram_header h;
    if (wc->byte_len < GRH + HDR)
        die("a datagram of %u bytes, shorter than GRH + header", wc->byte_len);
    memcpy(&h, buf + GRH, sizeof h);
    if (h.magic != kMagic || h.len > mtu - HDR || wc->byte_len != GRH + HDR + h.len)
        die("a datagram of %u bytes whose header says magic %#x, length %u", wc->byte_len, h.magic,
            h.len);
    gen(expect, h.key, 0, h.len);
    for (uint32_t i = 0; i < h.len; ++i)
        if (buf[GRH + HDR + i] != expect[i])
            die("datagram with key %#" PRIx64 " (%u bytes): byte %u is %#04x, expected %#04x",
                h.key, h.len, i, buf[GRH + HDR + i], expect[i]);
}

static void server(int port, const char* port_file) {
    g_role = "server";
    struct dev d;
    dev_open(&d);
    int fd = tcp_serve(port, port_file);
    uint32_t mtu = mtu_bytes(d.port.active_mtu);
    size_t slot = GRH + mtu;
    struct ibv_pd* pd = ibv_alloc_pd(d.ctx);
    if (!pd) die("ibv_alloc_pd: %s", strerror(errno));
    uint8_t* bufs = xaligned(4096, slot * RECVS);
    uint8_t* expect = xaligned(64, mtu);
    struct ibv_mr* mr = reg_mr(pd, bufs, slot * RECVS, IBV_ACCESS_LOCAL_WRITE);
    struct cqw cq;
    cqw_create(&cq, d.ctx, RECVS + 16);
    struct ibv_qp* qp = create_ud_qp(pd, cq.cq, 1);
    for (uint64_t i = 0; i < RECVS; ++i) {
        struct ibv_sge sge = {(uintptr_t)(bufs + i * slot), (uint32_t)slot, mr->lkey};
        struct ibv_recv_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1}, *bad;
        if (ibv_post_recv(qp, &wr, &bad)) die("ibv_post_recv");
    }
    struct ud_info me = {.qpn = qp->qp_num, .mtu = mtu};
    memcpy(me.gid, d.gid.raw, 16);
    write_all(fd, &me, sizeof me);

    struct ud_end end = {0};
    int ended = 0;
    double quiet_until = 0;
    for (;;) {
        struct ibv_wc wc[16];
        int n = cqw_poll(&cq, wc, 16, 0.1);
        for (int k = 0; k < n; ++k) {
            check_datagram(bufs + wc[k].wr_id * slot, &wc[k], mtu, expect);
            ++end.checked;
            struct ibv_sge sge = {(uintptr_t)(bufs + wc[k].wr_id * slot), (uint32_t)slot, mr->lkey};
            struct ibv_recv_wr wr = {.wr_id = wc[k].wr_id, .sg_list = &sge, .num_sge = 1}, *bad;
            if (ibv_post_recv(qp, &wr, &bad)) die("ibv_post_recv");
        }
        if (!ended) {
            ssize_t got = recv(fd, &end.sent, sizeof end.sent, MSG_DONTWAIT);
            if (got == 0)
                die("side channel: the client closed the connection (it failed or exited)");
            if (got == (ssize_t)sizeof end.sent) {
                ended = 1;
                quiet_until = now_s() + 0.5; // the last datagrams may still be on their way
            }
        } else if (now_s() > quiet_until) {
            break;
        }
    }
    end.received = end.checked;
    write_all(fd, &end, sizeof end);
    pass("%" PRIu64 " of %" PRIu64 " datagrams arrived, every byte as sent", end.checked, end.sent);
    ibv_destroy_qp(qp);
    cqw_destroy(&cq);
    ibv_dereg_mr(mr);
    ibv_dealloc_pd(pd);
    ibv_close_device(d.ctx);
}

static void client(int port, uint64_t count, uint64_t seed, uint32_t depth) {
    g_role = "client";
    struct dev d;
    dev_open(&d);
    int fd = tcp_connect(port);
    struct ud_info peer;
    read_all(fd, &peer, sizeof peer);
    uint32_t mtu =
        peer.mtu < mtu_bytes(d.port.active_mtu) ? peer.mtu : mtu_bytes(d.port.active_mtu);
    struct ibv_pd* pd = ibv_alloc_pd(d.ctx);
    if (!pd) die("ibv_alloc_pd: %s", strerror(errno));
    uint8_t* bufs = xaligned(4096, (size_t)mtu * depth);
    struct ibv_mr* mr = reg_mr(pd, bufs, (size_t)mtu * depth, 0);
    struct cqw cq;
    cqw_create(&cq, d.ctx, (int)depth + 16);
    struct ibv_qp* qp = create_ud_qp(pd, cq.cq, depth);
    struct ibv_ah_attr aa = {.is_global = 1, .port_num = 1};
    memcpy(aa.grh.dgid.raw, peer.gid, 16);
    aa.grh.hop_limit = 1;
    struct ibv_ah* ah = ibv_create_ah(pd, &aa);
    if (!ah) die("ibv_create_ah: %s", strerror(errno));

    uint64_t posted = 0, completed = 0, state = seed;
    while (completed < count) {
        while (posted < count && posted - completed < depth) {
            uint8_t* b = bufs + (posted % depth) * mtu;
            struct dgram_header h = {kMagic, 0, splitmix64(state += 0x9E37)};
            h.len = (uint32_t)(h.key % (mtu - HDR + 1));
            memcpy(b, &h, sizeof h);
            gen(b + HDR, h.key, 0, h.len);
            struct ibv_sge sge = {(uintptr_t)b, HDR + h.len, mr->lkey};
            struct ibv_send_wr wr = {.wr_id = posted,
                                     .sg_list = &sge,
                                     .num_sge = 1,
                                     .opcode = IBV_WR_SEND,
                                     .send_flags = IBV_SEND_SIGNALED},
                               *bad;
            wr.wr.ud.ah = ah;
            wr.wr.ud.remote_qpn = peer.qpn;
            wr.wr.ud.remote_qkey = QKEY;
            int rc = ibv_post_send(qp, &wr, &bad);
            if (rc) die("ibv_post_send(datagram %" PRIu64 "): %s", posted, strerror(rc));
            ++posted;
        }
        struct ibv_wc wc[16];
        int n = cqw_poll(&cq, wc, 16, 20);
        if (n == 0)
            die("no send completion for 20 s (%" PRIu64 " of %" PRIu64 " done)", completed, count);
        for (int k = 0; k < n; ++k, ++completed)
            if (wc[k].status != IBV_WC_SUCCESS || wc[k].wr_id != completed)
                die("send completion %" PRIu64 ": wr_id %" PRIu64 ", %s", completed, wc[k].wr_id,
                    wc_status_name(wc[k].status));
    }
    write_all(fd, &count, sizeof count);
    struct ud_end end;
    read_all(fd, &end, sizeof end);
    if (end.checked == 0) die("none of %" PRIu64 " datagrams arrived", count);
    printf("PASS: %" PRIu64 " datagrams sent, %" PRIu64 " arrived and checked byte for byte\n",
           count, end.checked);
    ibv_destroy_ah(ah);
    ibv_destroy_qp(qp);
    cqw_destroy(&cq);
    ibv_dereg_mr(mr);
    ibv_dealloc_pd(pd);
    ibv_close_device(d.ctx);
    close(fd);
}

int main(int argc, char** argv) {
    static const struct option opts[] = {
        {"server", no_argument, 0, 'S'},      {"client", no_argument, 0, 'C'},
        {"port", required_argument, 0, 'p'},  {"port-file", required_argument, 0, 'f'},
        {"count", required_argument, 0, 'n'}, {"seed", required_argument, 0, 's'},
        {"depth", required_argument, 0, 'd'}, {0, 0, 0, 0},
    };
    int is_server = 0, is_client = 0, port = -1, c;
    const char* port_file = NULL;
    uint64_t count = 2000, seed = 1;
    uint32_t depth = 16;
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
        case 'n':
            count = strtoull(optarg, NULL, 0);
            break;
        case 's':
            seed = strtoull(optarg, NULL, 0);
            break;
        case 'd':
            depth = (uint32_t)strtoul(optarg, NULL, 0);
            break;
        default:
            return 2;
        }
    }
    if (is_server == is_client || port < 0 || count < 1 || depth < 1 || optind != argc) {
        fprintf(stderr,
                "usage: ud_integrity --server --port P [--port-file F]\n"
                "       ud_integrity --client --port P [--count N] [--seed S] [--depth D]\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (is_server)
        server(port, port_file);
    else
        client(port, count, seed, depth);
    return 0;
}
