// A stand-in for rdma-core's libibverbs, for testing the hardware backend without RDMA hardware:
// one device "standin0" whose context, objects and data-path ops are plain memory, and a log of
// every call that reached it (standin_log, read by passthrough_check through dlsym). Loaded by
// our library in place of the real one with RDMAEMU_REAL_LIBIBVERBS=<this file>.
#include <infiniband/verbs.h>

#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char standin_log[16384];
int standin_fail_next; // an errno: the next ibv_alloc_pd fails with it

static void note(const char* fmt, ...) {
    size_t used = strlen(standin_log);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(standin_log + used, sizeof standin_log - used, fmt, ap);
    va_end(ap);
    used = strlen(standin_log);
    if (used + 1 < sizeof standin_log) strcat(standin_log, "\n");
}

static struct ibv_device device = {
    .node_type = IBV_NODE_CA, .transport_type = IBV_TRANSPORT_IB, .name = "standin0"};

struct ibv_device** ibv_get_device_list(int* num_devices) {
    note("ibv_get_device_list");
    struct ibv_device** list = calloc(2, sizeof *list);
    list[0] = &device;
    if (num_devices) *num_devices = 1;
    return list;
}

void ibv_free_device_list(struct ibv_device** list) {
    note("ibv_free_device_list");
    free(list);
}

const char* ibv_get_device_name(struct ibv_device* dev) {
    note("ibv_get_device_name");
    return dev->name;
}

__be64 ibv_get_device_guid(struct ibv_device* dev) {
    (void)dev;
    note("ibv_get_device_guid");
    return htobe64(0x5354414e44494e30ull);
}

static int standin_post_send(struct ibv_qp* qp, struct ibv_send_wr* wr, struct ibv_send_wr** bad) {
    (void)bad;
    note("post_send qp %u wr_id %llu opcode %d", qp->qp_num, (unsigned long long)wr->wr_id,
         wr->opcode);
    return 0;
}

static int standin_post_recv(struct ibv_qp* qp, struct ibv_recv_wr* wr, struct ibv_recv_wr** bad) {
    (void)bad;
    note("post_recv qp %u wr_id %llu", qp->qp_num, (unsigned long long)wr->wr_id);
    return 0;
}

static int standin_poll_cq(struct ibv_cq* cq, int n, struct ibv_wc* wc) {
    (void)cq;
    if (n < 1) return 0;
    memset(wc, 0, sizeof *wc);
    wc->wr_id = 9;
    wc->status = IBV_WC_SUCCESS;
    wc->opcode = IBV_WC_SEND;
    wc->qp_num = 77;
    note("poll_cq");
    return 1;
}

struct ibv_context* ibv_open_device(struct ibv_device* dev) {
    note("ibv_open_device %s", dev->name);
    struct ibv_context* ctx = calloc(1, sizeof *ctx);
    ctx->device = dev;
    ctx->cmd_fd = -1;
    ctx->async_fd = -1;
    ctx->ops.post_send = standin_post_send;
    ctx->ops.post_recv = standin_post_recv;
    ctx->ops.poll_cq = standin_poll_cq;
    return ctx;
}

int ibv_close_device(struct ibv_context* ctx) {
    note("ibv_close_device");
    free(ctx);
    return 0;
}

struct ibv_pd* ibv_alloc_pd(struct ibv_context* ctx) {
    note("ibv_alloc_pd");
    if (standin_fail_next) {
        errno = standin_fail_next;
        standin_fail_next = 0;
        return NULL;
    }
    struct ibv_pd* pd = calloc(1, sizeof *pd);
    pd->context = ctx;
    pd->handle = 0x5d;
    return pd;
}

int ibv_dealloc_pd(struct ibv_pd* pd) {
    note("ibv_dealloc_pd");
    free(pd);
    return 0;
}

struct ibv_mr*(ibv_reg_mr)(struct ibv_pd* pd, void* addr, size_t length, int access) {
    note("ibv_reg_mr access 0x%x", access);
    struct ibv_mr* mr = calloc(1, sizeof *mr);
    mr->context = pd->context;
    mr->pd = pd;
    mr->addr = addr;
    mr->length = length;
    mr->lkey = 0x1111;
    mr->rkey = 0x2222;
    return mr;
}

int ibv_dereg_mr(struct ibv_mr* mr) {
    note("ibv_dereg_mr");
    free(mr);
    return 0;
}

struct ibv_cq* ibv_create_cq(struct ibv_context* ctx, int cqe, void* cq_context,
                             struct ibv_comp_channel* channel, int comp_vector) {
    (void)cq_context, (void)channel, (void)comp_vector;
    note("ibv_create_cq %d", cqe);
    struct ibv_cq* cq = calloc(1, sizeof *cq);
    cq->context = ctx;
    cq->cqe = cqe;
    return cq;
}

int ibv_destroy_cq(struct ibv_cq* cq) {
    note("ibv_destroy_cq");
    free(cq);
    return 0;
}

struct ibv_qp* ibv_create_qp(struct ibv_pd* pd, struct ibv_qp_init_attr* attr) {
    note("ibv_create_qp");
    struct ibv_qp* qp = calloc(1, sizeof *qp);
    qp->context = pd->context;
    qp->pd = pd;
    qp->qp_num = 77;
    qp->qp_type = attr->qp_type;
    qp->state = IBV_QPS_RESET;
    return qp;
}

int ibv_modify_qp(struct ibv_qp* qp, struct ibv_qp_attr* attr, int mask) {
    note("ibv_modify_qp mask 0x%x", mask);
    if (mask & IBV_QP_STATE) qp->state = attr->qp_state;
    return 0;
}

int ibv_destroy_qp(struct ibv_qp* qp) {
    note("ibv_destroy_qp");
    free(qp);
    return 0;
}

// rdma-core's answer for an fd that is not a uverbs character device (it has no other device).
struct ibv_context* ibv_import_device(int cmd_fd) {
    note("ibv_import_device %d", cmd_fd);
    errno = EINVAL;
    return NULL;
}

int ibv_fork_init(void) {
    note("ibv_fork_init");
    return 0;
}

// The provider interface (IBVERBS_PRIVATE_34), as providers reach it.
void verbs_register_driver_34(const void* ops) {
    note("verbs_register_driver_34 %p", ops);
}

int ibv_cmd_alloc_pd(struct ibv_context* ctx, struct ibv_pd* pd, void* cmd, size_t cmd_size,
                     void* resp, size_t resp_size) {
    (void)ctx, (void)pd, (void)cmd, (void)cmd_size, (void)resp, (void)resp_size;
    note("ibv_cmd_alloc_pd");
    return 4242;
}
