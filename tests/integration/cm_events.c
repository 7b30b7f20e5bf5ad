// A small rdma_cm program for the error cases of rdmacm_errors.sh, built against the system's
// <rdma/rdma_cma.h> and librdmacm like any rdma-core application (`rdmaemu run` swaps ours in).
// It prints every event it gets, one line each, so the test can check the exact events.
//
//   cm_events server ADDR PORT reject DATA   reject the first request with DATA as private
//                                            data, then exit
//   cm_events server ADDR PORT hold          take a request, never answer (the test kills it)
//   cm_events server ADDR PORT accept        accept a request, then wait (the test kills it)
//   cm_events client ADDR PORT DATA          connect with DATA; print the events until the
//                                            connection ends or fails; once established,
//                                            disconnect, unless DATA is "stay"
//
// The client waits for its events with poll() on a non-blocking channel (so it also checks that
// the channel is a pollable fd and that rdma_get_cm_event says EAGAIN when nothing is there).
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void die(const char* what) {
    printf("error: %s: %s\n", what, strerror(errno));
    exit(2);
}

static struct sockaddr_in address(const char* addr, const char* port) {
    struct sockaddr_in sin;
    memset(&sin, 0, sizeof sin);
    sin.sin_family = AF_INET;
    sin.sin_port = htons((uint16_t)atoi(port));
    if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1) {
        printf("error: not an IPv4 address: %s\n", addr);
        exit(2);
    }
    return sin;
}

// The private data of an event as a string, when it starts with printable text.
static const char* text_of(const struct rdma_cm_event* e) {
    static char text[256];
    const char* data = e->param.conn.private_data;
    size_t len = e->param.conn.private_data_len;
    if (e->id->qp_type == IBV_QPT_UD) {
        data = e->param.ud.private_data;
        len = e->param.ud.private_data_len;
    }
    if (!data || !len || !data[0]) return "";
    snprintf(text, sizeof text, "%.*s", (int)len, data);
    return text;
}

static void print_event(const struct rdma_cm_event* e) {
    printf("event %s status %d", rdma_event_str(e->event), e->status);
    if (*text_of(e)) printf(" private '%s'", text_of(e));
    printf("\n");
    fflush(stdout);
}

static _Noreturn void server(struct rdma_event_channel* ch, struct sockaddr_in* sin,
                             const char* mode, const char* data) {
    struct rdma_cm_id* listener;
    if (rdma_create_id(ch, &listener, NULL, RDMA_PS_TCP)) die("rdma_create_id");
    if (rdma_bind_addr(listener, (struct sockaddr*)sin)) die("rdma_bind_addr");
    if (rdma_listen(listener, 1)) die("rdma_listen");
    printf("listening\n");
    fflush(stdout);
    for (;;) {
        struct rdma_cm_event* e;
        if (rdma_get_cm_event(ch, &e)) die("rdma_get_cm_event");
        print_event(e);
        if (e->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
            struct rdma_cm_id* id = e->id;
            if (!strcmp(mode, "hold")) {
                printf("holding\n");
                pause();
            }
            if (!strcmp(mode, "accept")) {
                struct ibv_qp_init_attr attr;
                memset(&attr, 0, sizeof attr);
                attr.cap.max_send_wr = attr.cap.max_recv_wr = 4;
                attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
                attr.qp_type = IBV_QPT_RC;
                if (rdma_create_qp(id, NULL, &attr)) die("rdma_create_qp");
                struct rdma_conn_param param;
                memset(&param, 0, sizeof param);
                param.responder_resources = param.initiator_depth = 1;
                param.rnr_retry_count = 7;
                if (rdma_accept(id, &param)) die("rdma_accept");
                printf("accepted\n");
                rdma_ack_cm_event(e);
                continue;
            }
            if (rdma_reject(id, data, (uint8_t)(strlen(data) + 1))) die("rdma_reject");
            printf("rejected\n");
            exit(0);
        }
        rdma_ack_cm_event(e);
    }
}

// Waits for the next event on the non-blocking channel.
static struct rdma_cm_event* next_event(struct rdma_event_channel* ch) {
    for (;;) {
        struct pollfd p = {.fd = ch->fd, .events = POLLIN};
        if (poll(&p, 1, 60000) != 1) {
            printf("error: no event within 60 s\n");
            exit(2);
        }
        struct rdma_cm_event* e;
        if (rdma_get_cm_event(ch, &e) == 0) return e;
        if (errno != EAGAIN) die("rdma_get_cm_event");
    }
}

static int client(struct rdma_event_channel* ch, struct sockaddr_in* sin, const char* data) {
    struct rdma_cm_id* id;
    if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP)) die("rdma_create_id");
    if (fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK)) die("fcntl");
    struct rdma_cm_event* e;
    if (rdma_get_cm_event(ch, &e) == 0 || errno != EAGAIN) {
        printf("error: rdma_get_cm_event on an empty non-blocking channel did not say EAGAIN\n");
        return 2;
    }
    printf("no event yet: EAGAIN\n");
    if (rdma_resolve_addr(id, NULL, (struct sockaddr*)sin, 2000)) die("rdma_resolve_addr");
    for (;;) {
        e = next_event(ch);
        print_event(e);
        enum rdma_cm_event_type type = e->event;
        rdma_ack_cm_event(e);
        switch (type) {
        case RDMA_CM_EVENT_ADDR_RESOLVED:
            if (rdma_resolve_route(id, 2000)) die("rdma_resolve_route");
            break;
        case RDMA_CM_EVENT_ROUTE_RESOLVED: {
            struct ibv_qp_init_attr attr;
            memset(&attr, 0, sizeof attr);
            attr.cap.max_send_wr = attr.cap.max_recv_wr = 4;
            attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
            attr.qp_type = IBV_QPT_RC;
            if (rdma_create_qp(id, NULL, &attr)) die("rdma_create_qp");
            struct rdma_conn_param param;
            memset(&param, 0, sizeof param);
            param.private_data = data;
            param.private_data_len = (uint8_t)(strlen(data) + 1);
            param.responder_resources = param.initiator_depth = 1;
            param.retry_count = param.rnr_retry_count = 7;
            if (rdma_connect(id, &param)) die("rdma_connect");
            break;
        }
        case RDMA_CM_EVENT_ESTABLISHED:
            if (strcmp(data, "stay") && rdma_disconnect(id)) die("rdma_disconnect");
            break;
        case RDMA_CM_EVENT_REJECTED: {
            struct ibv_qp_attr a;
            struct ibv_qp_init_attr ia;
            if (ibv_query_qp(id->qp, &a, IBV_QP_STATE, &ia)) die("ibv_query_qp");
            printf("qp state %s\n", a.qp_state == IBV_QPS_ERR ? "ERR" : "not ERR");
            return 0;
        }
        case RDMA_CM_EVENT_DISCONNECTED:
        case RDMA_CM_EVENT_ADDR_ERROR:
        case RDMA_CM_EVENT_ROUTE_ERROR:
        case RDMA_CM_EVENT_UNREACHABLE:
        case RDMA_CM_EVENT_CONNECT_ERROR:
            return 0;
        default:
            break;
        }
    }
}

int main(int argc, char** argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 5) {
        fprintf(stderr,
                "usage: %s server ADDR PORT reject DATA|hold\n"
                "       %s client ADDR PORT DATA\n",
                argv[0], argv[0]);
        return 2;
    }
    struct sockaddr_in sin = address(argv[2], argv[3]);
    struct rdma_event_channel* ch = rdma_create_event_channel();
    if (!ch) die("rdma_create_event_channel");
    if (!strcmp(argv[1], "server")) server(ch, &sin, argv[4], argc > 5 ? argv[5] : "");
    return client(ch, &sin, argv[4]);
}
