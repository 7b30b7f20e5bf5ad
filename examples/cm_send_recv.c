// cm_send_recv.c: send_recv.c again, connected through rdma_cm instead of a TCP side channel
// and three ibv_modify_qp calls. rdma_cm resolves an IP address to a device and a path, creates
// the QP, and runs the InfiniBand connection manager's handshake (REQ, REP, RTU on QP1) that
// swaps the QP numbers and PSNs and moves both QPs to RTS. The client sends a message, the
// server answers "got it".
//
//   rdmaemu run --host 1 -- build/bin/examples/cm_send_recv -s 127.0.S.1 -p 7471 &
//   rdmaemu run --host 2 -- build/bin/examples/cm_send_recv -p 7471 127.0.S.1
//
// (127.0.S.1 is host 1's address, as `rdmaemu status` shows it.) This uses the synchronous
// API of <rdma/rdma_verbs.h>, as rdma-core's rdma_server and rdma_client do: rdma_create_ep
// makes the CM ID, its PD, CQs and QP in one call, and each call blocks until it is done.
#include "exchange.h" // only for die()

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

static const char message[] = "Hello through rdma_cm: no side channel needed.";
static const char reply[] = "got it";

int main(int argc, char** argv) {
    const char *listen_on = NULL, *server = NULL, *port = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-s") == 0 && i + 1 < argc)
            listen_on = argv[++i];
        else if (strcmp(argv[i], "-p") == 0 && i + 1 < argc)
            port = argv[++i];
        else
            server = argv[i];
    }
    if (!port || !!listen_on == !!server)
        die("usage: %s -s MY_ADDRESS -p PORT (server) | %s -p PORT SERVER_ADDRESS (client)",
            argv[0], argv[0]);
    const char* me = server ? "client" : "server";

    // Where to listen or connect: rdma_getaddrinfo turns "address, port" into RDMA addresses.
    // RAI_PASSIVE: this end listens. RDMA_PS_TCP: a connected (RC) service, as TCP is.
    struct rdma_addrinfo hints = {.ai_flags = server ? 0 : RAI_PASSIVE,
                                  .ai_port_space = RDMA_PS_TCP},
                         *res;
    if (rdma_getaddrinfo(server ? server : listen_on, port, &hints, &res))
        die("rdma_getaddrinfo(%s, %s): %s", server ? server : listen_on, port, strerror(errno));

    // The QP rdma_cm creates for us: one SEND and one receive at a time; sq_sig_all: every
    // SEND gets a completion.
    struct ibv_qp_init_attr attr = {
        .cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1},
        .qp_type = IBV_QPT_RC,
        .sq_sig_all = 1,
    };
    struct rdma_cm_id *listen_id = NULL, *id;
    if (!server) {
        // The server: an ID bound to its address, listening. A connection request comes back
        // as a new ID, with its own QP made from `attr`.
        if (rdma_create_ep(&listen_id, res, NULL, &attr))
            die("rdma_create_ep(listen on %s:%s): %s", listen_on, port, strerror(errno));
        if (rdma_listen(listen_id, 1)) die("rdma_listen: %s", strerror(errno));
        printf("server: listening on %s port %s\n", listen_on, port);
        fflush(stdout);
        if (rdma_get_request(listen_id, &id)) die("rdma_get_request: %s", strerror(errno));
    } else {
        // The client: resolving the address and the route, creating the QP: all in here.
        if (rdma_create_ep(&id, res, NULL, &attr))
            die("rdma_create_ep(to %s:%s): %s", server, port, strerror(errno));
    }
    rdma_freeaddrinfo(res);

    // Buffers registered on the ID's PD (rdma_reg_msgs: LOCAL_WRITE, for SEND/RECV).
    char recv_buf[64] = {0}, send_buf[64];
    struct ibv_mr* recv_mr = rdma_reg_msgs(id, recv_buf, sizeof recv_buf);
    struct ibv_mr* send_mr = rdma_reg_msgs(id, send_buf, sizeof send_buf);
    if (!recv_mr || !send_mr) die("rdma_reg_msgs: %s", strerror(errno));

    // Post the receive before connecting: the peer may send as soon as it is connected.
    if (rdma_post_recv(id, NULL, recv_buf, sizeof recv_buf, recv_mr))
        die("rdma_post_recv: %s", strerror(errno));

    // The handshake: the client's REQ, the server's REP, the client's RTU. When these return,
    // both QPs are in RTS.
    if (server ? rdma_connect(id, NULL) : rdma_accept(id, NULL))
        die("%s: %s", server ? "rdma_connect" : "rdma_accept", strerror(errno));
    printf("%s: connected: my QP 0x%06x\n", me, id->qp->qp_num);

    struct ibv_wc wc;
    if (server) {
        memcpy(send_buf, message, sizeof message);
        if (rdma_post_send(id, NULL, send_buf, sizeof message, send_mr, 0))
            die("rdma_post_send: %s", strerror(errno));
        if (rdma_get_send_comp(id, &wc) <= 0 || wc.status != IBV_WC_SUCCESS)
            die("the SEND failed: %s", ibv_wc_status_str(wc.status));
        if (rdma_get_recv_comp(id, &wc) <= 0 || wc.status != IBV_WC_SUCCESS)
            die("the receive failed: %s", ibv_wc_status_str(wc.status));
        if (wc.byte_len != sizeof reply || memcmp(recv_buf, reply, sizeof reply) != 0)
            die("the reply is %u bytes \"%.64s\", expected \"%s\"", wc.byte_len, recv_buf, reply);
        printf("client: received the reply: \"%s\" (byte for byte)\n", recv_buf);
    } else {
        if (rdma_get_recv_comp(id, &wc) <= 0 || wc.status != IBV_WC_SUCCESS)
            die("the receive failed: %s", ibv_wc_status_str(wc.status));
        if (wc.byte_len != sizeof message || memcmp(recv_buf, message, sizeof message) != 0)
            die("received %u bytes \"%.64s\", expected \"%s\"", wc.byte_len, recv_buf, message);
        printf("server: received %u bytes: \"%s\" (byte for byte)\n", wc.byte_len, recv_buf);
        memcpy(send_buf, reply, sizeof reply);
        if (rdma_post_send(id, NULL, send_buf, sizeof reply, send_mr, 0))
            die("rdma_post_send: %s", strerror(errno));
        if (rdma_get_send_comp(id, &wc) <= 0 || wc.status != IBV_WC_SUCCESS)
            die("the SEND failed: %s", ibv_wc_status_str(wc.status));
    }

    // DREQ/DREP: both QPs go to ERR; then free in reverse order.
    rdma_disconnect(id);
    rdma_dereg_mr(send_mr);
    rdma_dereg_mr(recv_mr);
    rdma_destroy_ep(id);
    if (listen_id) rdma_destroy_ep(listen_id);
    printf("%s: PASS\n", me);
    return 0;
}
