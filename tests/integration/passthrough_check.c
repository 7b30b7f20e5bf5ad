// Checks the hardware backend of our libibverbs against standin_libibverbs.so (a fake rdma-core
// library with one device, standin0): which calls reach it in each RDMAEMU_MODE, that its objects
// and data-path ops come back to the app untouched, that errno survives the forwarding, that the
// provider interface (IBVERBS_PRIVATE_34) forwards once the real library is loaded and that a
// provider registered before that is handed over when it loads.
//
// usage: passthrough_check hardware|mixed|emulated STANDIN_SO   (an emulated host must be up
// for mixed and emulated; RDMAEMU_REAL_LIBIBVERBS=STANDIN_SO for hardware and mixed)
#include <infiniband/verbs.h>

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Provider-interface names: not in any installed header.
void verbs_register_driver_34(const void* ops);
int ibv_cmd_alloc_pd(struct ibv_context* ctx, struct ibv_pd* pd, void* cmd, size_t cmd_size,
                     void* resp, size_t resp_size);

static int failures, checks;
static const char* standin_path;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        ++checks;                                                                                  \
        if (!(cond)) {                                                                             \
            ++failures;                                                                            \
            printf("FAIL line %d: %s: ", __LINE__, #cond);                                         \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
        }                                                                                          \
    } while (0)

// The stand-in's call log, if it is loaded (without loading it).
static const char* standin_log(void) {
    void* h = dlopen(standin_path, RTLD_NOW | RTLD_NOLOAD);
    if (!h) return NULL;
    const char* log = dlsym(h, "standin_log");
    dlclose(h);
    return log;
}

static int log_count(const char* what) {
    const char* log = standin_log();
    int n = 0;
    for (const char* p = log; p && (p = strstr(p, what)); p += strlen(what))
        ++n;
    return n;
}

static struct ibv_device* find(struct ibv_device** list, int n, const char* name) {
    for (int i = 0; i < n; ++i)
        if (strcmp(ibv_get_device_name(list[i]), name) == 0) return list[i];
    return NULL;
}

// Everything on standin0 must reach the stand-in and come back as it made it.
static void exercise_standin(struct ibv_device* dev) {
    CHECK(ibv_get_device_guid(dev) == htobe64(0x5354414e44494e30ull), "guid");
    struct ibv_context* ctx = ibv_open_device(dev);
    CHECK(ctx && ctx->device == dev, "open_device");
    if (!ctx) return;
    CHECK(log_count("ibv_open_device standin0") == 1, "open reached the stand-in");

    struct ibv_pd* pd = ibv_alloc_pd(ctx);
    CHECK(pd && pd->handle == 0x5d, "alloc_pd is the stand-in's");
    int* fail_next = dlsym(dlopen(standin_path, RTLD_NOW | RTLD_NOLOAD), "standin_fail_next");
    *fail_next = EMFILE;
    errno = 0;
    CHECK(ibv_alloc_pd(ctx) == NULL && errno == EMFILE, "errno forwarded: %d", errno);

    static char buf[64];
    // Remote write without local write: invalid (ibv_reg_mr(3)); the stand-in takes it, our
    // library warns (checked in the trace by passthrough.sh).
    struct ibv_mr* mr = ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_REMOTE_WRITE);
    CHECK(mr && mr->lkey == 0x1111 && mr->rkey == 0x2222, "reg_mr is the stand-in's");
    CHECK(log_count("ibv_reg_mr access 0x2") == 1, "reg_mr reached it unchanged");

    struct ibv_cq* cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
    CHECK(cq && cq->cqe == 4 && cq->context == ctx, "create_cq");
    struct ibv_qp_init_attr init = {
        .send_cq = cq,
        .recv_cq = cq,
        .qp_type = IBV_QPT_RC,
        .cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};
    struct ibv_qp* qp = ibv_create_qp(pd, &init);
    CHECK(qp && qp->qp_num == 77, "create_qp");
    if (!qp || !cq || !mr) return;
    // RESET -> INIT needs PKEY_INDEX, PORT and ACCESS_FLAGS too: a warning, then forwarded.
    struct ibv_qp_attr attr = {.qp_state = IBV_QPS_INIT};
    CHECK(ibv_modify_qp(qp, &attr, IBV_QP_STATE) == 0, "modify_qp forwarded");
    CHECK(log_count("ibv_modify_qp mask 0x1") == 1, "modify_qp reached it");

    // The data path is the stand-in's own ops (inline verbs).
    struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = 8, .lkey = mr->lkey};
    struct ibv_send_wr wr = {.wr_id = 5,
                             .sg_list = &sge,
                             .num_sge = 1,
                             .opcode = IBV_WR_SEND,
                             .send_flags = IBV_SEND_SIGNALED};
    struct ibv_send_wr* bad = NULL;
    CHECK(ibv_post_send(qp, &wr, &bad) == 0, "post_send");
    CHECK(log_count("post_send qp 77 wr_id 5 opcode 2") == 1, "post_send reached its op");
    struct ibv_recv_wr rwr = {.wr_id = 6, .sg_list = &sge, .num_sge = 1};
    struct ibv_recv_wr* rbad = NULL;
    CHECK(ibv_post_recv(qp, &rwr, &rbad) == 0 && log_count("post_recv qp 77 wr_id 6") == 1,
          "post_recv");
    struct ibv_wc wc;
    CHECK(ibv_poll_cq(cq, 1, &wc) == 1 && wc.wr_id == 9 && wc.status == IBV_WC_SUCCESS,
          "poll_cq is the stand-in's");

    // The provider interface goes to the real library once it is loaded.
    CHECK(ibv_cmd_alloc_pd(ctx, pd, NULL, 0, NULL, 0) == 4242, "ibv_cmd_alloc_pd forwarded");

    CHECK(ibv_destroy_qp(qp) == 0 && ibv_destroy_cq(cq) == 0 && ibv_dereg_mr(mr) == 0 &&
              ibv_dealloc_pd(pd) == 0 && ibv_close_device(ctx) == 0,
          "destroy");
    CHECK(log_count("ibv_close_device") == 1 && log_count("ibv_dealloc_pd") == 1, "teardown");
}

// emu0 must be the emulated NIC's, with none of it reaching the stand-in.
static void exercise_emulated(struct ibv_device* dev) {
    int before = log_count("\n");
    struct ibv_context* ctx = ibv_open_device(dev);
    CHECK(ctx != NULL, "open emu0: errno %d", errno);
    if (!ctx) return;
    struct ibv_pd* pd = ibv_alloc_pd(ctx);
    CHECK(pd && pd->handle != 0x5d, "emu0's PD is the emulator's");
    struct ibv_cq* cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
    CHECK(cq != NULL, "create_cq on emu0");
    CHECK(cq && ibv_destroy_cq(cq) == 0, "destroy_cq");
    CHECK(pd && ibv_dealloc_pd(pd) == 0, "dealloc_pd");
    CHECK(ibv_close_device(ctx) == 0, "close emu0");
    CHECK(log_count("\n") == before, "nothing on emu0 reached the stand-in");
}

int main(int argc, char** argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s hardware|mixed|emulated STANDIN_SO\n", argv[0]);
        return 2;
    }
    const char* mode = argv[1];
    standin_path = argv[2];
    int hardware = strcmp(mode, "emulated") != 0, emulated = strcmp(mode, "hardware") != 0;

    // A provider a program links registers before any device list is read.
    verbs_register_driver_34((const void*)0x1234);
    CHECK(standin_log() == NULL, "the real library is loaded only when needed");

    int n = -1;
    struct ibv_device** list = ibv_get_device_list(&n);
    CHECK(list != NULL, "device list: errno %d", errno);
    if (!list) return 1;
    struct ibv_device* standin = find(list, n, "standin0");
    struct ibv_device* emu = find(list, n, "emu0");
    CHECK(n == hardware + emulated, "%d devices", n);
    CHECK(!standin == !hardware, "standin0 listed in %s mode", mode);
    CHECK(!emu == !emulated, "emu0 listed in %s mode", mode);
    if (emulated && hardware) CHECK(list[0] == emu && list[1] == standin, "emulated ones first");
    if (hardware) {
        CHECK(log_count("verbs_register_driver_34 0x1234") == 1, "early provider handed over");
        CHECK(ibv_fork_init() == 0 && log_count("ibv_fork_init") == 1, "fork_init forwarded");
    } else {
        CHECK(standin_log() == NULL, "emulated mode never loads rdma-core's library");
        CHECK(ibv_cmd_alloc_pd(NULL, NULL, NULL, 0, NULL, 0) == EOPNOTSUPP,
              "provider interface answers EOPNOTSUPP without a real library");
    }
    if (standin) exercise_standin(standin);
    if (emu) exercise_emulated(emu);
    ibv_free_device_list(list);
    if (hardware) CHECK(log_count("ibv_free_device_list") == 1, "real list freed with ours");
    printf("%s mode: %d checks, %d failed\n", mode, checks, failures);
    return failures ? 1 : 0;
}
