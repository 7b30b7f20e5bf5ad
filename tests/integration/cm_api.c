// The rdma_cm API on one host, call by call, with the answers rdma-core gives: devices, event
// names, event channels moved between (rdma_migrate_id), rdma_destroy_id waiting for an
// unacknowledged event, options, the errnos of misuse, rdma_getaddrinfo, multicast join and
// leave, and that rsockets are there (SOCK_STREAM). Built against the system's librdmacm; `rdmaemu
// run` swaps ours in.
//
//   cm_api HOST_ADDRESS
// Prints "ok ..." per check; on the first failure "FAIL ..." and exit 1.
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                            \
            printf(__VA_ARGS__);                                                                   \
            printf(" (errno %s)\n", strerror(errno));                                              \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static struct sockaddr_in sin_of(const char* addr, uint16_t port) {
    struct sockaddr_in s;
    memset(&s, 0, sizeof s);
    s.sin_family = AF_INET;
    s.sin_port = htons(port);
    inet_pton(AF_INET, addr, &s.sin_addr);
    return s;
}

static void nonblocking(struct rdma_event_channel* ch) {
    fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
}

// The next event within 5 s on a non-blocking channel, or NULL.
static struct rdma_cm_event* wait_event(struct rdma_event_channel* ch) {
    for (int i = 0; i < 500; ++i) {
        struct rdma_cm_event* e;
        if (rdma_get_cm_event(ch, &e) == 0) return e;
        if (errno != EAGAIN) return NULL;
        usleep(10000);
    }
    return NULL;
}

static struct rdma_cm_id* to_destroy;
static volatile int destroyed;

static void* destroy_thread(void* arg) {
    (void)arg;
    rdma_destroy_id(to_destroy);
    destroyed = 1;
    return NULL;
}

int main(int argc, char** argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc != 2) {
        fprintf(stderr, "usage: %s HOST_ADDRESS\n", argv[0]);
        return 2;
    }
    const char* self = argv[1];

    int n = 0;
    struct ibv_context** devs = rdma_get_devices(&n);
    CHECK(devs && n >= 1 && devs[n] == NULL, "rdma_get_devices gave %d devices", n);
    printf("ok rdma_get_devices: %d, first %s\n", n, ibv_get_device_name(devs[0]->device));
    rdma_free_devices(devs);
    CHECK(!strcmp(rdma_event_str(RDMA_CM_EVENT_TIMEWAIT_EXIT), "RDMA_CM_EVENT_TIMEWAIT_EXIT") &&
              !strcmp(rdma_event_str((enum rdma_cm_event_type)99), "UNKNOWN EVENT"),
          "rdma_event_str");
    printf("ok rdma_event_str\n");

    // Misuse, with the errnos of rdma-core and the kernel.
    struct rdma_event_channel* a = rdma_create_event_channel();
    struct rdma_event_channel* b = rdma_create_event_channel();
    CHECK(a && b && a->fd >= 0 && b->fd >= 0 && a->fd != b->fd, "rdma_create_event_channel");
    nonblocking(a);
    nonblocking(b);
    struct rdma_cm_id* id;
    CHECK(rdma_create_id(a, &id, NULL, RDMA_PS_TCP) == 0, "rdma_create_id");
    struct sockaddr_in other = sin_of("127.0.0.250", 0);
    CHECK(rdma_bind_addr(id, (struct sockaddr*)&other) == -1 && errno == EADDRNOTAVAIL,
          "bind to an address this host does not have");
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    CHECK(rdma_bind_addr(id, (struct sockaddr*)&un) == -1 && errno == EINVAL,
          "bind to an AF_UNIX address");
    CHECK(rdma_resolve_route(id, 1000) == -1 && errno == EINVAL, "route before the address");
    CHECK(rdma_disconnect(id) == -1 && errno == EINVAL, "disconnect what never connected");
    uint8_t tos = 32;
    CHECK(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, 1) == 0, "TOS");
    uint32_t tos_wide = 32; // the kernel reads optlen bytes before it checks the size
    CHECK(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos_wide, sizeof tos_wide) ==
                  -1 &&
              errno == EINVAL,
          "TOS of the wrong size");
    int on = 1;
    CHECK(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &on, sizeof on) == 0,
          "REUSEADDR");
    CHECK(rdma_set_option(id, RDMA_OPTION_ID, 42, &on, sizeof on) == -1 && errno == ENOSYS,
          "an unknown option");
    struct sockaddr_in mine = sin_of(self, 0);
    CHECK(rdma_bind_addr(id, (struct sockaddr*)&mine) == 0, "bind to the host's own address");
    CHECK(id->verbs && id->pd && id->port_num == 1, "a bound ID has the device and a PD");
    CHECK(ntohs(rdma_get_src_port(id)) >= 32768, "port 0 picks an ephemeral port (%u)",
          ntohs(rdma_get_src_port(id)));
    CHECK(rdma_bind_addr(id, (struct sockaddr*)&mine) == -1 && errno == EINVAL, "bind twice");
    printf("ok errnos: EADDRNOTAVAIL, EINVAL, ENOSYS; bound to %s:%u\n", self,
           ntohs(rdma_get_src_port(id)));

    // An event goes where its ID is when the app reads it (rdma_migrate_id).
    struct sockaddr_in dst = sin_of(self, 7);
    CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr*)&dst, 2000) == 0, "rdma_resolve_addr");
    usleep(100000);
    CHECK(rdma_migrate_id(id, b) == 0 && id->channel == b, "rdma_migrate_id");
    struct rdma_cm_event* e;
    CHECK(rdma_get_cm_event(a, &e) == -1 && errno == EAGAIN, "the old channel has no event");
    e = wait_event(b);
    CHECK(e && e->event == RDMA_CM_EVENT_ADDR_RESOLVED && e->id == id,
          "ADDR_RESOLVED on the new channel");
    printf("ok rdma_migrate_id: ADDR_RESOLVED moved to the new channel\n");

    // rdma_destroy_id waits for the app to acknowledge the events it holds.
    to_destroy = id;
    pthread_t t;
    pthread_create(&t, NULL, destroy_thread, NULL);
    usleep(300000);
    CHECK(!destroyed, "rdma_destroy_id returned with an event unacknowledged");
    rdma_ack_cm_event(e);
    pthread_join(t, NULL);
    CHECK(destroyed, "rdma_destroy_id after the ack");
    printf("ok rdma_destroy_id waits for rdma_ack_cm_event\n");

    // A UD ID joins and leaves a group.
    struct rdma_cm_id* ud;
    CHECK(rdma_create_id(a, &ud, NULL, RDMA_PS_UDP) == 0 && ud->qp_type == IBV_QPT_UD,
          "a UDP ID is UD");
    CHECK(rdma_bind_addr(ud, (struct sockaddr*)&mine) == 0, "bind the UD ID");
    struct sockaddr_in group = sin_of("224.0.0.9", 0);
    CHECK(rdma_join_multicast(ud, (struct sockaddr*)&group, (void*)0x1234) == 0,
          "rdma_join_multicast");
    e = wait_event(a);
    CHECK(e && e->event == RDMA_CM_EVENT_MULTICAST_JOIN && e->param.ud.qp_num == 0xFFFFFF &&
              e->param.ud.qkey == RDMA_UDP_QKEY && e->param.ud.private_data == (void*)0x1234 &&
              e->param.ud.ah_attr.grh.dgid.raw[10] == 0xff &&
              e->param.ud.ah_attr.grh.dgid.raw[12] == 224 &&
              e->param.ud.ah_attr.grh.dgid.raw[15] == 9,
          "MULTICAST_JOIN with the group's MGID ::ffff:224.0.0.9 and the UDP Q_Key");
    rdma_ack_cm_event(e);
    CHECK(rdma_leave_multicast(ud, (struct sockaddr*)&group) == 0, "rdma_leave_multicast");
    CHECK(rdma_leave_multicast(ud, (struct sockaddr*)&group) == -1 && errno == EADDRNOTAVAIL,
          "leave a group not joined");
    CHECK(rdma_destroy_id(ud) == 0, "destroy the UD ID");
    printf("ok multicast join and leave\n");

    // rdma_getaddrinfo: passive answers carry the source address, active ones the destination.
    struct rdma_addrinfo hints, *res;
    memset(&hints, 0, sizeof hints);
    hints.ai_flags = RAI_PASSIVE;
    hints.ai_port_space = RDMA_PS_TCP;
    CHECK(rdma_getaddrinfo(self, "7471", &hints, &res) == 0 && (res->ai_flags & RAI_PASSIVE) &&
              res->ai_src_addr && res->ai_qp_type == IBV_QPT_RC &&
              ntohs(((struct sockaddr_in*)res->ai_src_addr)->sin_port) == 7471,
          "rdma_getaddrinfo, passive");
    rdma_freeaddrinfo(res);
    memset(&hints, 0, sizeof hints);
    hints.ai_port_space = RDMA_PS_UDP;
    CHECK(rdma_getaddrinfo(self, "7471", &hints, &res) == 0 && res->ai_dst_addr &&
              !res->ai_src_addr && res->ai_qp_type == IBV_QPT_UD,
          "rdma_getaddrinfo, active UDP");
    rdma_freeaddrinfo(res);
    int gai = rdma_getaddrinfo("no-such-host.invalid", "1", NULL, &res);
    CHECK(gai != 0, "rdma_getaddrinfo of a name nobody has");
    printf("ok rdma_getaddrinfo (unknown name: %s)\n", gai_strerror(gai));

    // rsockets (rsockets.sh tests them): both kinds are made; a raw one is not offered.
    int rs = rsocket(AF_INET, SOCK_STREAM, 0);
    CHECK(rs >= 0 && rclose(rs) == 0, "rsocket SOCK_STREAM");
    rs = rsocket(AF_INET, SOCK_DGRAM, 0);
    CHECK(rs >= 0 && rclose(rs) == 0, "rsocket SOCK_DGRAM");
    CHECK(rsocket(AF_INET, SOCK_RAW, 0) == -1 && errno == ENOTSUP, "rsocket SOCK_RAW");
    printf("ok rsocket: SOCK_STREAM and SOCK_DGRAM made, SOCK_RAW ENOTSUP\n");

    rdma_destroy_event_channel(a);
    rdma_destroy_event_channel(b);
    printf("all ok\n");
    return 0;
}
