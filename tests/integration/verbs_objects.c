// verbs_objects: creates and destroys every verbs object through the public libibverbs API and
// hits the error paths, expecting what real rdma-core 44 + the Linux kernel (uverbs core, rxe)
// return. Built against the system <infiniband/verbs.h> and linked with the system -libverbs; at
// run time `rdmaemu run` puts our library in its place.
//
// Conventions checked (as in rdma-core): verbs returning a pointer fail with NULL and errno;
// verbs returning int return the errno (ibv_query_gid and ibv_query_pkey return -1, ibv_rereg_mr
// returns an enum ibv_rereg_mr_err_code and sets errno). Every limit comes from the device's
// own ibv_query_device / ibv_query_port answers.
//
// Prints one line per check and exits 1 at the first mismatch, naming expected and actual.
//
// Usage: verbs_objects [--dev NAME] [--expect-gid GID] [--ready-file F] [--keep-going]
//                      [--basic | --hold | --hold-until FILE]
//   (default)     every check, error paths included
//   --basic       only the success path: create PD, MR, comp channel, CQ, SRQ, RC QP, AH; take
//                 the QP to RTS; destroy everything
//   --hold        create that set of objects, write our pid to --ready-file, then sleep forever
//   --hold-until  same, but when FILE appears, use and destroy the held objects, then run one
//                 --basic cycle and exit 0
//   --keep-going  report every mismatch instead of stopping at the first (for diagnosis)
#define _GNU_SOURCE
#include <infiniband/verbs.h>

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int g_checks;

static const char* errname(int e) {
    if (e == 0) return "0";
    const char* n = strerrorname_np(e);
    return n ? n : "?";
}

static int g_keep_going;
static int g_failures;

// Reports a mismatch; exits unless --keep-going (which is for diagnosis: later checks may then
// see the side effects of an earlier wrong answer).
static void fail(const char* what, const char* fmt, ...) {
    va_list ap;
    printf("FAIL %s: ", what);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    ++g_failures;
    if (!g_keep_going) exit(1);
}

// A failure after which nothing sensible can follow (we have no object to go on with).
#define FATAL(...) (fail(__VA_ARGS__), exit(1))

static void pass(const char* what) {
    ++g_checks;
    printf("ok   %s\n", what);
    fflush(stdout);
}

// An int-returning verb that returns 0 or an errno.
static void expect_ret(const char* what, int got, int want) {
    if (got != want)
        fail(what, "expected %s (%d), got %s (%d)", errname(want), want,
             got > 0 ? errname(got) : "a non-errno value", got);
    else
        pass(what);
}

// An int-returning verb (ibv_query_gid, ibv_query_pkey) that returns 0 or non-zero on failure.
static void expect_nonzero(const char* what, int got) {
    if (got == 0)
        fail(what, "expected a failure (non-zero return), got 0");
    else
        pass(what);
}

// Fatal on failure: later checks need the object.
static void* expect_obj(const char* what, void* obj) {
    if (!obj) FATAL(what, "expected an object, got NULL with errno %s (%d)", errname(errno), errno);
    pass(what);
    return obj;
}

// A pointer-returning verb that must fail with NULL and errno == want. (An object created by
// mistake is left to the session teardown when we exit.)
static void expect_null(const char* what, void* obj, int want) {
    int e = errno;
    if (obj)
        fail(what, "expected NULL with errno %s (%d), got an object", errname(want), want);
    else if (e != want)
        fail(what, "expected NULL with errno %s (%d), got NULL with errno %s (%d)", errname(want),
             want, errname(e), e);
    else
        pass(what);
}

static void expect_true(const char* what, int cond, const char* fmt, ...) {
    if (!cond) {
        char buf[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        fail(what, "%s", buf);
    } else {
        pass(what);
    }
}

// ibv_rereg_mr: returns 0 or an enum ibv_rereg_mr_err_code, with errno.
static void expect_rereg(const char* what, int got, int want_ret, int want_errno) {
    int e = errno;
    if (got != want_ret)
        fail(what, "expected return %d with errno %s, got return %d (errno %s)", want_ret,
             errname(want_errno), got, errname(e));
    else if (want_ret != 0 && e != want_errno)
        fail(what, "expected errno %s (%d), got %s (%d)", errname(want_errno), want_errno,
             errname(e), e);
    else
        pass(what);
}

#define CHECKF(buf, ...) (snprintf(buf, sizeof buf, __VA_ARGS__), buf)

struct env {
    struct ibv_context* ctx;
    struct ibv_device_attr dev;
    struct ibv_port_attr port;
    union ibv_gid gid0;
    const char* expect_gid;
};

static char g_buf[1 << 20] __attribute__((aligned(4096)));

static void gid_str(const union ibv_gid* gid, char* out, size_t len) {
    if (!inet_ntop(AF_INET6, gid->raw, out, (socklen_t)len)) snprintf(out, len, "?");
}

// ---- device, port, GID, P_Key ----------------------------------------------------------------

static void check_device(struct env* env) {
    char w[256];
    struct ibv_context* ctx = env->ctx;

    expect_ret("ibv_query_device", ibv_query_device(ctx, &env->dev), 0);
    struct ibv_device_attr* d = &env->dev;
    printf("     device limits: max_qp=%d max_qp_wr=%d max_sge=%d max_cq=%d max_cqe=%d max_mr=%d "
           "max_pd=%d max_srq=%d max_srq_wr=%d max_srq_sge=%d max_ah=%d max_qp_rd_atom=%d "
           "max_qp_init_rd_atom=%d atomic_cap=%d phys_port_cnt=%d\n",
           d->max_qp, d->max_qp_wr, d->max_sge, d->max_cq, d->max_cqe, d->max_mr, d->max_pd,
           d->max_srq, d->max_srq_wr, d->max_srq_sge, d->max_ah, d->max_qp_rd_atom,
           d->max_qp_init_rd_atom, d->atomic_cap, d->phys_port_cnt);
    expect_true("device has one port", d->phys_port_cnt == 1, "phys_port_cnt = %d",
                d->phys_port_cnt);
    expect_true("device limits are non-zero",
                d->max_qp > 0 && d->max_qp_wr > 0 && d->max_sge > 0 && d->max_cq > 0 &&
                    d->max_cqe > 0 && d->max_mr > 0 && d->max_pd > 0 && d->max_ah > 0,
                "a zero among max_qp/max_qp_wr/max_sge/max_cq/max_cqe/max_mr/max_pd/max_ah");
    expect_true("device supports SRQs (max_srq, max_srq_wr, max_srq_sge > 0)",
                d->max_srq > 0 && d->max_srq_wr > 0 && d->max_srq_sge > 0,
                "max_srq=%d max_srq_wr=%d max_srq_sge=%d", d->max_srq, d->max_srq_wr,
                d->max_srq_sge);
    expect_true("device reports max_qp_rd_atom > 0 (perftest needs it)", d->max_qp_rd_atom > 0,
                "max_qp_rd_atom = %d", d->max_qp_rd_atom);

    expect_ret("ibv_query_port(port 1)", ibv_query_port(ctx, 1, &env->port), 0);
    struct ibv_port_attr* p = &env->port;
    printf("     port 1: state=%d max_mtu=%d active_mtu=%d gid_tbl_len=%d pkey_tbl_len=%u "
           "link_layer=%u\n",
           p->state, p->max_mtu, p->active_mtu, p->gid_tbl_len, p->pkey_tbl_len, p->link_layer);
    expect_true("port 1 is ACTIVE", p->state == IBV_PORT_ACTIVE, "state = %d", p->state);
    expect_true("port 1 link layer is Ethernet", p->link_layer == IBV_LINK_LAYER_ETHERNET,
                "link_layer = %u", p->link_layer);
    expect_true("port 1 max_mtu is a valid enum ibv_mtu",
                p->max_mtu >= IBV_MTU_256 && p->max_mtu <= IBV_MTU_4096, "max_mtu = %d",
                p->max_mtu);
    expect_true("port 1 active_mtu <= max_mtu",
                p->active_mtu >= IBV_MTU_256 && p->active_mtu <= p->max_mtu,
                "active_mtu = %d, max_mtu = %d", p->active_mtu, p->max_mtu);
    expect_true("port 1 has a GID and a P_Key table", p->gid_tbl_len >= 1 && p->pkey_tbl_len >= 1,
                "gid_tbl_len = %d, pkey_tbl_len = %u", p->gid_tbl_len, p->pkey_tbl_len);

    struct ibv_port_attr bad;
    expect_ret("ibv_query_port(port 2) -> EINVAL", ibv_query_port(ctx, 2, &bad), EINVAL);
    expect_ret("ibv_query_port(port 0) -> EINVAL", ibv_query_port(ctx, 0, &bad), EINVAL);

    // GID table: index 0 is the host's RoCE v2 GID, the IPv4-mapped form of its address.
    expect_ret("ibv_query_gid(port 1, index 0)", ibv_query_gid(ctx, 1, 0, &env->gid0), 0);
    char s[INET6_ADDRSTRLEN];
    gid_str(&env->gid0, s, sizeof s);
    printf("     gid[0] = %s\n", s);
    static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    expect_true("gid[0] is an IPv4-mapped address", memcmp(env->gid0.raw, v4mapped, 12) == 0,
                "gid[0] = %s", s);
    if (env->expect_gid)
        expect_true(CHECKF(w, "gid[0] is this host's GID %s", env->expect_gid),
                    strcmp(s, env->expect_gid) == 0, "gid[0] = %s", s);
    for (int i = 1; i < p->gid_tbl_len; ++i) {
        union ibv_gid g;
        // An empty entry reads as 0 with a zero GID (the kernel's ENODATA, mapped by rdma-core).
        expect_ret(CHECKF(w, "ibv_query_gid(port 1, index %d) inside the table", i),
                   ibv_query_gid(ctx, 1, i, &g), 0);
    }
    union ibv_gid g;
    expect_nonzero(CHECKF(w, "ibv_query_gid(port 1, index %d = gid_tbl_len) fails", p->gid_tbl_len),
                   ibv_query_gid(ctx, 1, p->gid_tbl_len, &g));
    expect_nonzero("ibv_query_gid(port 2, index 0) fails", ibv_query_gid(ctx, 2, 0, &g));

    struct ibv_gid_entry entry;
    memset(&entry, 0, sizeof entry);
    expect_ret("ibv_query_gid_ex(port 1, index 0)", ibv_query_gid_ex(ctx, 1, 0, &entry, 0), 0);
    expect_true("ibv_query_gid_ex: same GID as ibv_query_gid",
                memcmp(entry.gid.raw, env->gid0.raw, 16) == 0, "differs");
    expect_true("ibv_query_gid_ex: gid_type is RoCE v2", entry.gid_type == IBV_GID_TYPE_ROCE_V2,
                "gid_type = %u", entry.gid_type);
    expect_true("ibv_query_gid_ex: port_num 1, gid_index 0",
                entry.port_num == 1 && entry.gid_index == 0, "port_num = %u, gid_index = %u",
                entry.port_num, entry.gid_index);
    expect_ret(
        CHECKF(w, "ibv_query_gid_ex(port 1, index %d = gid_tbl_len) -> EINVAL", p->gid_tbl_len),
        ibv_query_gid_ex(ctx, 1, p->gid_tbl_len, &entry, 0), EINVAL);
    expect_ret("ibv_query_gid_ex(port 2, index 0) -> EINVAL",
               ibv_query_gid_ex(ctx, 2, 0, &entry, 0), EINVAL);

    __be16 pkey = 0;
    expect_ret("ibv_query_pkey(port 1, index 0)", ibv_query_pkey(ctx, 1, 0, &pkey), 0);
    expect_true("pkey[0] is the default P_Key 0xffff", be16toh(pkey) == 0xffff, "pkey = 0x%04x",
                be16toh(pkey));
    expect_nonzero(
        CHECKF(w, "ibv_query_pkey(port 1, index %u = pkey_tbl_len) fails", p->pkey_tbl_len),
        ibv_query_pkey(ctx, 1, p->pkey_tbl_len, &pkey));
}

// ---- PD and MR -------------------------------------------------------------------------------

static void check_pd_mr(struct env* env) {
    struct ibv_context* ctx = env->ctx;
    struct ibv_pd* pd = expect_obj("ibv_alloc_pd", ibv_alloc_pd(ctx));
    struct ibv_pd* pd2 = expect_obj("ibv_alloc_pd (second)", ibv_alloc_pd(ctx));
    expect_true("pd->context is the context", pd->context == ctx && pd2->context == ctx, "no");

    char* buf = g_buf;
    struct ibv_mr* mr_local =
        expect_obj("ibv_reg_mr(access 0: local read only)", ibv_reg_mr(pd, buf, 4096, 0));
    expect_true("mr fields: context, pd, addr, length",
                mr_local->context == ctx && mr_local->pd == pd && mr_local->addr == buf &&
                    mr_local->length == 4096,
                "context=%p pd=%p addr=%p length=%zu", (void*)mr_local->context,
                (void*)mr_local->pd, mr_local->addr, mr_local->length);
    struct ibv_mr* mr_lw =
        expect_obj("ibv_reg_mr(LOCAL_WRITE)", ibv_reg_mr(pd, buf, 8192, IBV_ACCESS_LOCAL_WRITE));
    struct ibv_mr* mr_rw = expect_obj(
        "ibv_reg_mr(LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ)",
        ibv_reg_mr(pd, buf, 65536,
                   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ));
    struct ibv_mr* mr_rr = expect_obj("ibv_reg_mr(REMOTE_READ alone)",
                                      ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_REMOTE_READ));
    struct ibv_mr* mr_at = NULL;
    if (env->dev.atomic_cap != IBV_ATOMIC_NONE)
        mr_at = expect_obj(
            "ibv_reg_mr(LOCAL_WRITE | REMOTE_ATOMIC)",
            ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC));
    // An optional bit makes the ibv_reg_mr macro call ibv_reg_mr_iova2 (as perftest does).
    struct ibv_mr* mr_ro =
        expect_obj("ibv_reg_mr(LOCAL_WRITE | RELAXED_ORDERING) via ibv_reg_mr_iova2",
                   ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING));
    struct ibv_mr* mr_iova =
        expect_obj("ibv_reg_mr_iova(iova 0x100000, LOCAL_WRITE)",
                   ibv_reg_mr_iova(pd, buf, 8192, 0x100000, IBV_ACCESS_LOCAL_WRITE));
    expect_true("lkeys of live MRs are distinct",
                mr_local->lkey != mr_lw->lkey && mr_lw->lkey != mr_rw->lkey &&
                    mr_rw->lkey != mr_ro->lkey && mr_ro->lkey != mr_iova->lkey &&
                    mr_local->lkey != mr_iova->lkey,
                "lkeys %#x %#x %#x %#x %#x", mr_local->lkey, mr_lw->lkey, mr_rw->lkey, mr_ro->lkey,
                mr_iova->lkey);

    // IBA 10.6.3.1 / ib_check_mr_access: remote write and remote atomic need local write.
    errno = 0;
    expect_null("ibv_reg_mr(REMOTE_WRITE without LOCAL_WRITE) -> EINVAL",
                ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_REMOTE_WRITE), EINVAL);
    errno = 0;
    expect_null("ibv_reg_mr(REMOTE_ATOMIC without LOCAL_WRITE) -> EINVAL",
                ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_REMOTE_ATOMIC), EINVAL);
    errno = 0;
    expect_null("ibv_reg_mr(REMOTE_WRITE | REMOTE_READ without LOCAL_WRITE) -> EINVAL",
                ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ),
                EINVAL);

    // ibv_rereg_mr
    expect_rereg(
        "ibv_rereg_mr(CHANGE_ACCESS to LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ)",
        ibv_rereg_mr(mr_lw, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
                     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ),
        0, 0);
    expect_rereg("ibv_rereg_mr(CHANGE_PD to the second PD)",
                 ibv_rereg_mr(mr_lw, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0), 0, 0);
    expect_true("after CHANGE_PD mr->pd is the second PD", mr_lw->pd == pd2, "mr->pd = %p",
                (void*)mr_lw->pd);
    expect_rereg("ibv_rereg_mr(CHANGE_TRANSLATION to buf+8192, 16384 bytes)",
                 ibv_rereg_mr(mr_lw, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, buf + 8192, 16384, 0),
                 0, 0);
    expect_true("after CHANGE_TRANSLATION mr->addr and mr->length follow",
                mr_lw->addr == buf + 8192 && mr_lw->length == 16384, "addr=%p length=%zu",
                mr_lw->addr, mr_lw->length);
    errno = 0;
    expect_rereg(
        "ibv_rereg_mr(CHANGE_ACCESS to REMOTE_WRITE without LOCAL_WRITE) -> ERR_CMD/EINVAL",
        ibv_rereg_mr(mr_lw, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, IBV_ACCESS_REMOTE_WRITE),
        IBV_REREG_MR_ERR_CMD, EINVAL);
    errno = 0;
    expect_rereg("ibv_rereg_mr(flags 0) -> ERR_CMD/EINVAL",
                 ibv_rereg_mr(mr_lw, 0, NULL, NULL, 0, 0), IBV_REREG_MR_ERR_CMD, EINVAL);
    errno = 0;
    expect_rereg("ibv_rereg_mr(unsupported flag 0x100) -> ERR_INPUT/EINVAL",
                 ibv_rereg_mr(mr_lw, 0x100, NULL, NULL, 0, 0), IBV_REREG_MR_ERR_INPUT, EINVAL);
    errno = 0;
    expect_rereg("ibv_rereg_mr(CHANGE_TRANSLATION with NULL addr) -> ERR_INPUT/EINVAL",
                 ibv_rereg_mr(mr_lw, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, NULL, 4096, 0),
                 IBV_REREG_MR_ERR_INPUT, EINVAL);
    errno = 0;
    expect_rereg("ibv_rereg_mr(access without CHANGE_ACCESS) -> ERR_INPUT/EINVAL",
                 ibv_rereg_mr(mr_lw, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, IBV_ACCESS_LOCAL_WRITE),
                 IBV_REREG_MR_ERR_INPUT, EINVAL);

    // A PD with MRs is busy (uverbs_free_pd: ib_destroy_usecnt).
    expect_ret("ibv_dealloc_pd(PD that still has MRs) -> EBUSY", ibv_dealloc_pd(pd), EBUSY);
    expect_ret("ibv_dealloc_pd(second PD that holds the re-registered MR) -> EBUSY",
               ibv_dealloc_pd(pd2), EBUSY);

    expect_ret("ibv_dereg_mr(access 0)", ibv_dereg_mr(mr_local), 0);
    expect_ret("ibv_dereg_mr(re-registered MR)", ibv_dereg_mr(mr_lw), 0);
    expect_ret("ibv_dealloc_pd(second PD, now empty)", ibv_dealloc_pd(pd2), 0);
    expect_ret("ibv_dereg_mr(remote write)", ibv_dereg_mr(mr_rw), 0);
    expect_ret("ibv_dereg_mr(remote read)", ibv_dereg_mr(mr_rr), 0);
    if (mr_at) expect_ret("ibv_dereg_mr(remote atomic)", ibv_dereg_mr(mr_at), 0);
    expect_ret("ibv_dereg_mr(relaxed ordering)", ibv_dereg_mr(mr_ro), 0);
    expect_ret("ibv_dereg_mr(iova)", ibv_dereg_mr(mr_iova), 0);
    expect_ret("ibv_dealloc_pd(PD, now empty)", ibv_dealloc_pd(pd), 0);
}

// ---- completion channel and CQ ---------------------------------------------------------------

static void check_cq(struct env* env) {
    char w[256];
    struct ibv_context* ctx = env->ctx;
    int max_cqe = env->dev.max_cqe;

    struct ibv_comp_channel* ch =
        expect_obj("ibv_create_comp_channel", ibv_create_comp_channel(ctx));
    expect_true("comp channel has a file descriptor", ch->fd >= 0 && ch->context == ctx, "fd = %d",
                ch->fd);
    struct ibv_cq* cq_ch =
        expect_obj("ibv_create_cq(16 cqe, on the channel)", ibv_create_cq(ctx, 16, NULL, ch, 0));
    expect_true("cq->cqe >= 16 and cq->channel is the channel",
                cq_ch->cqe >= 16 && cq_ch->channel == ch && cq_ch->context == ctx,
                "cqe = %d, channel = %p", cq_ch->cqe, (void*)cq_ch->channel);
    expect_ret("ibv_req_notify_cq(solicited_only 0)", ibv_req_notify_cq(cq_ch, 0), 0);
    // rdma-core: a channel with CQs attached is busy.
    expect_ret("ibv_destroy_comp_channel(channel with a CQ) -> EBUSY", ibv_destroy_comp_channel(ch),
               EBUSY);
    expect_ret("ibv_destroy_cq(on the channel)", ibv_destroy_cq(cq_ch), 0);
    expect_ret("ibv_destroy_comp_channel", ibv_destroy_comp_channel(ch), 0);

    struct ibv_cq* cq = expect_obj("ibv_create_cq(1 cqe)", ibv_create_cq(ctx, 1, NULL, NULL, 0));
    expect_true("cq->cqe >= 1", cq->cqe >= 1, "cqe = %d", cq->cqe);
    errno = 0;
    expect_null(CHECKF(w, "ibv_create_cq(max_cqe + 1 = %d) -> EINVAL", max_cqe + 1),
                ibv_create_cq(ctx, max_cqe + 1, NULL, NULL, 0), EINVAL);
    errno = 0;
    expect_null(CHECKF(w, "ibv_create_cq(comp_vector = num_comp_vectors = %d) -> EINVAL",
                       ctx->num_comp_vectors),
                ibv_create_cq(ctx, 4, NULL, NULL, ctx->num_comp_vectors), EINVAL);
    expect_ret("ibv_resize_cq(256)", ibv_resize_cq(cq, 256), 0);
    expect_true("after resize cq->cqe >= 256", cq->cqe >= 256, "cqe = %d", cq->cqe);
    expect_ret(CHECKF(w, "ibv_resize_cq(max_cqe + 1 = %d) -> EINVAL", max_cqe + 1),
               ibv_resize_cq(cq, max_cqe + 1), EINVAL);
    expect_true("a failed resize leaves cq->cqe", cq->cqe >= 256, "cqe = %d", cq->cqe);
    struct ibv_cq* cq_max = expect_obj(CHECKF(w, "ibv_create_cq(max_cqe = %d)", max_cqe),
                                       ibv_create_cq(ctx, max_cqe, NULL, NULL, 0));
    expect_ret("ibv_destroy_cq(max_cqe)", ibv_destroy_cq(cq_max), 0);
    expect_ret("ibv_destroy_cq", ibv_destroy_cq(cq), 0);
}

// ---- QPs --------------------------------------------------------------------------------------

struct qp_set {
    struct ibv_pd* pd;
    struct ibv_cq* cq;
};

static struct ibv_qp* create_qp(struct qp_set* s, enum ibv_qp_type type, struct ibv_srq* srq,
                                uint32_t send_wr, uint32_t recv_wr, uint32_t send_sge,
                                uint32_t recv_sge) {
    struct ibv_qp_init_attr ia;
    memset(&ia, 0, sizeof ia);
    ia.send_cq = s->cq;
    ia.recv_cq = s->cq;
    ia.srq = srq;
    ia.qp_type = type;
    ia.cap.max_send_wr = send_wr;
    ia.cap.max_recv_wr = recv_wr;
    ia.cap.max_send_sge = send_sge;
    ia.cap.max_recv_sge = recv_sge;
    errno = 0;
    return ibv_create_qp(s->pd, &ia);
}

static struct ibv_ah_attr grh_to_self(struct env* env) {
    struct ibv_ah_attr ah;
    memset(&ah, 0, sizeof ah);
    ah.is_global = 1;
    ah.grh.dgid = env->gid0;
    ah.grh.sgid_index = 0;
    ah.grh.hop_limit = 1;
    ah.port_num = 1;
    return ah;
}

static enum ibv_mtu path_mtu_for(struct env* env) {
    // rc_pingpong's default is 1024, limited by the port's active MTU.
    return env->port.active_mtu < IBV_MTU_1024 ? env->port.active_mtu : IBV_MTU_1024;
}

// RESET -> INIT with ibv_rc_pingpong's mask.
static int to_init(struct ibv_qp* qp, int mask_drop, int mask_add, uint8_t port) {
    struct ibv_qp_attr a;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = port;
    a.qp_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
    a.qkey = 0x11111111;
    int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
    mask |= qp->qp_type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS;
    return ibv_modify_qp(qp, &a, (mask & ~mask_drop) | mask_add);
}

static void check_qp_state(const char* what, struct ibv_qp* qp, enum ibv_qp_state want) {
    struct ibv_qp_attr a;
    struct ibv_qp_init_attr ia;
    memset(&a, 0, sizeof a);
    int ret = ibv_query_qp(qp, &a, IBV_QP_STATE, &ia);
    if (ret)
        fail(what, "ibv_query_qp failed with %s (%d)", errname(ret), ret);
    else if (a.qp_state != want || qp->state != want)
        fail(what, "expected state %d, ibv_query_qp says %d, qp->state says %d", want, a.qp_state,
             qp->state);
    else
        pass(what);
}

static void check_rc(struct env* env, struct qp_set* s) {
    char w[256];
    struct ibv_device_attr* d = &env->dev;

    // Capabilities beyond the device's limits (rxe_qp_chk_cap, mlx5: EINVAL).
    expect_null(CHECKF(w, "ibv_create_qp(RC, max_send_wr = max_qp_wr + 1 = %d) -> EINVAL",
                       d->max_qp_wr + 1),
                create_qp(s, IBV_QPT_RC, NULL, d->max_qp_wr + 1, 16, 1, 1), EINVAL);
    expect_null(CHECKF(w, "ibv_create_qp(RC, max_recv_wr = max_qp_wr + 1 = %d) -> EINVAL",
                       d->max_qp_wr + 1),
                create_qp(s, IBV_QPT_RC, NULL, 16, d->max_qp_wr + 1, 1, 1), EINVAL);
    expect_null(
        CHECKF(w, "ibv_create_qp(RC, max_send_sge = max_sge + 1 = %d) -> EINVAL", d->max_sge + 1),
        create_qp(s, IBV_QPT_RC, NULL, 16, 16, d->max_sge + 1, 1), EINVAL);
    expect_null(
        CHECKF(w, "ibv_create_qp(RC, max_recv_sge = max_sge + 1 = %d) -> EINVAL", d->max_sge + 1),
        create_qp(s, IBV_QPT_RC, NULL, 16, 16, 1, d->max_sge + 1), EINVAL);

    struct ibv_qp* qp = expect_obj("ibv_create_qp(RC, 16/16 wr, 1/1 sge)",
                                   create_qp(s, IBV_QPT_RC, NULL, 16, 16, 1, 1));
    expect_true("RC qp fields",
                qp->qp_num != 0 && qp->qp_type == IBV_QPT_RC && qp->state == IBV_QPS_RESET &&
                    qp->pd == s->pd && qp->send_cq == s->cq && qp->recv_cq == s->cq,
                "qp_num=%u qp_type=%d state=%d", qp->qp_num, qp->qp_type, qp->state);
    struct ibv_qp_attr qa;
    struct ibv_qp_init_attr qia;
    memset(&qa, 0, sizeof qa);
    memset(&qia, 0, sizeof qia);
    expect_ret("ibv_query_qp(IBV_QP_CAP) as rc_pingpong does",
               ibv_query_qp(qp, &qa, IBV_QP_CAP, &qia), 0);
    expect_true("query_qp caps >= requested",
                qia.cap.max_send_wr >= 16 && qia.cap.max_recv_wr >= 16 &&
                    qia.cap.max_send_sge >= 1 && qia.cap.max_recv_sge >= 1 &&
                    qa.cap.max_send_wr >= 16,
                "send_wr=%u recv_wr=%u send_sge=%u recv_sge=%u", qia.cap.max_send_wr,
                qia.cap.max_recv_wr, qia.cap.max_send_sge, qia.cap.max_recv_sge);
    check_qp_state("new RC QP is in RESET", qp, IBV_QPS_RESET);

    // RESET -> ...
    struct ibv_qp_attr a;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTR;
    expect_ret("RC RESET -> RTR (illegal transition) -> EINVAL",
               ibv_modify_qp(qp, &a, IBV_QP_STATE), EINVAL);
    a.qp_state = IBV_QPS_RTS;
    expect_ret("RC RESET -> RTS (illegal transition) -> EINVAL",
               ibv_modify_qp(qp, &a, IBV_QP_STATE), EINVAL);
    expect_ret("RC RESET -> INIT without IBV_QP_PORT (required) -> EINVAL",
               to_init(qp, IBV_QP_PORT, 0, 1), EINVAL);
    expect_ret("RC RESET -> INIT without IBV_QP_ACCESS_FLAGS (required) -> EINVAL",
               to_init(qp, IBV_QP_ACCESS_FLAGS, 0, 1), EINVAL);
    expect_ret("RC RESET -> INIT with IBV_QP_SQ_PSN (not allowed) -> EINVAL",
               to_init(qp, 0, IBV_QP_SQ_PSN, 1), EINVAL);
    expect_ret("RC RESET -> INIT with IBV_QP_QKEY (not allowed for RC) -> EINVAL",
               to_init(qp, 0, IBV_QP_QKEY, 1), EINVAL);
    expect_ret("RC RESET -> INIT on port 2 -> EINVAL", to_init(qp, 0, 0, 2), EINVAL);
    check_qp_state("failed modifies leave the QP in RESET", qp, IBV_QPS_RESET);
    expect_ret("RC RESET -> INIT (STATE|PKEY_INDEX|PORT|ACCESS_FLAGS)", to_init(qp, 0, 0, 1), 0);
    check_qp_state("RC QP is in INIT", qp, IBV_QPS_INIT);

    // INIT -> ...
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = 0;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 1;
    expect_ret("RC INIT -> RTS (illegal transition) -> EINVAL",
               ibv_modify_qp(qp, &a,
                             IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                 IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC),
               EINVAL);

    const int rtr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                         IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = path_mtu_for(env);
    a.dest_qp_num = qp->qp_num;
    a.rq_psn = 0x123456;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    a.ah_attr = grh_to_self(env);
    expect_ret("RC INIT -> RTR without IBV_QP_MIN_RNR_TIMER (required) -> EINVAL",
               ibv_modify_qp(qp, &a, rtr_mask & ~IBV_QP_MIN_RNR_TIMER), EINVAL);
    expect_ret("RC INIT -> RTR without IBV_QP_AV (required) -> EINVAL",
               ibv_modify_qp(qp, &a, rtr_mask & ~IBV_QP_AV), EINVAL);
    expect_ret("RC INIT -> RTR with IBV_QP_SQ_PSN (not allowed) -> EINVAL",
               ibv_modify_qp(qp, &a, rtr_mask | IBV_QP_SQ_PSN), EINVAL);
    {
        struct ibv_qp_attr b = a;
        b.path_mtu = (enum ibv_mtu)(env->port.max_mtu + 1);
        expect_ret(CHECKF(w, "RC INIT -> RTR with path_mtu %d above port max_mtu %d -> EINVAL",
                          b.path_mtu, env->port.max_mtu),
                   ibv_modify_qp(qp, &b, rtr_mask), EINVAL);
    }
    {
        // No GRH on a RoCE port (rdma_check_ah_attr): what qperf does, and why it fails on rxe.
        struct ibv_qp_attr b = a;
        memset(&b.ah_attr, 0, sizeof b.ah_attr);
        b.ah_attr.is_global = 0;
        b.ah_attr.dlid = 1;
        b.ah_attr.port_num = 1;
        expect_ret("RC INIT -> RTR with an AV without GRH on an Ethernet port -> EINVAL",
                   ibv_modify_qp(qp, &b, rtr_mask), EINVAL);
    }
    {
        struct ibv_qp_attr b = a;
        b.ah_attr.grh.sgid_index = (uint8_t)env->port.gid_tbl_len;
        if (env->port.gid_tbl_len < 256)
            expect_ret(CHECKF(w, "RC INIT -> RTR with sgid_index %d = gid_tbl_len -> EINVAL",
                              env->port.gid_tbl_len),
                       ibv_modify_qp(qp, &b, rtr_mask), EINVAL);
    }
    check_qp_state("failed modifies leave the QP in INIT", qp, IBV_QPS_INIT);
    expect_ret("RC INIT -> RTR (rc_pingpong mask, GRH to our own GID, dest = own QPN)",
               ibv_modify_qp(qp, &a, rtr_mask), 0);
    check_qp_state("RC QP is in RTR", qp, IBV_QPS_RTR);

    // RTR -> RTS
    const int rts_mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                         IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.sq_psn = 0x654321;
    a.max_rd_atomic = 1;
    expect_ret("RC RTR -> RTS without IBV_QP_MAX_QP_RD_ATOMIC (required) -> EINVAL",
               ibv_modify_qp(qp, &a, rts_mask & ~IBV_QP_MAX_QP_RD_ATOMIC), EINVAL);
    expect_ret("RC RTR -> RTS without IBV_QP_SQ_PSN (required) -> EINVAL",
               ibv_modify_qp(qp, &a, rts_mask & ~IBV_QP_SQ_PSN), EINVAL);
    expect_ret("RC RTR -> RTS with IBV_QP_DEST_QPN (not allowed) -> EINVAL",
               ibv_modify_qp(qp, &a, rts_mask | IBV_QP_DEST_QPN), EINVAL);
    if (d->max_qp_rd_atom < 255) {
        struct ibv_qp_attr b = a;
        b.max_rd_atomic = (uint8_t)(d->max_qp_rd_atom + 1);
        expect_ret(CHECKF(w, "RC RTR -> RTS with max_rd_atomic %d > max_qp_rd_atom -> EINVAL",
                          b.max_rd_atomic),
                   ibv_modify_qp(qp, &b, rts_mask), EINVAL);
    }
    check_qp_state("failed modifies leave the QP in RTR", qp, IBV_QPS_RTR);
    expect_ret("RC RTR -> RTS (rc_pingpong mask)", ibv_modify_qp(qp, &a, rts_mask), 0);
    check_qp_state("RC QP is in RTS", qp, IBV_QPS_RTS);

    // What query_qp reports back.
    memset(&qa, 0, sizeof qa);
    memset(&qia, 0, sizeof qia);
    expect_ret("ibv_query_qp(RTS, all attributes)",
               ibv_query_qp(qp, &qa,
                            IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS |
                                IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER | IBV_QP_TIMEOUT |
                                IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                                IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_CAP,
                            &qia),
               0);
    expect_true("query_qp: state, path_mtu, dest_qp_num, PSNs",
                qa.qp_state == IBV_QPS_RTS && qa.path_mtu == path_mtu_for(env) &&
                    qa.dest_qp_num == qp->qp_num && qa.rq_psn == 0x123456 && qa.sq_psn == 0x654321,
                "qp_state=%d path_mtu=%d dest_qp_num=%u rq_psn=%#x sq_psn=%#x", qa.qp_state,
                qa.path_mtu, qa.dest_qp_num, qa.rq_psn, qa.sq_psn);
    expect_true("query_qp: timeout, retry_cnt, rnr_retry, min_rnr_timer, rd_atomic",
                qa.timeout == 14 && qa.retry_cnt == 7 && qa.rnr_retry == 7 &&
                    qa.min_rnr_timer == 12 && qa.max_rd_atomic >= 1 && qa.max_dest_rd_atomic >= 1,
                "timeout=%d retry_cnt=%d rnr_retry=%d min_rnr_timer=%d max_rd_atomic=%d "
                "max_dest_rd_atomic=%d",
                qa.timeout, qa.retry_cnt, qa.rnr_retry, qa.min_rnr_timer, qa.max_rd_atomic,
                qa.max_dest_rd_atomic);
    expect_true("query_qp: port, pkey_index, access flags",
                qa.port_num == 1 && qa.pkey_index == 0 &&
                    qa.qp_access_flags == (IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE),
                "port_num=%d pkey_index=%d qp_access_flags=%#x", qa.port_num, qa.pkey_index,
                qa.qp_access_flags);
    expect_true("query_qp: AV has the GRH to our own GID",
                qa.ah_attr.is_global == 1 && qa.ah_attr.port_num == 1 &&
                    memcmp(qa.ah_attr.grh.dgid.raw, env->gid0.raw, 16) == 0 &&
                    qa.ah_attr.grh.sgid_index == 0 && qa.ah_attr.grh.hop_limit == 1,
                "is_global=%d port_num=%d sgid_index=%d hop_limit=%d", qa.ah_attr.is_global,
                qa.ah_attr.port_num, qa.ah_attr.grh.sgid_index, qa.ah_attr.grh.hop_limit);
    expect_true("query_qp: init_attr qp_type and caps",
                qia.qp_type == IBV_QPT_RC && qia.send_cq == s->cq && qia.recv_cq == s->cq &&
                    qia.cap.max_send_wr >= 16 && qia.cap.max_recv_wr >= 16,
                "qp_type=%d send_wr=%u recv_wr=%u", qia.qp_type, qia.cap.max_send_wr,
                qia.cap.max_recv_wr);

    // RTS -> RTS with an optional attribute, then to ERROR and back to RESET.
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTS;
    a.min_rnr_timer = 14;
    expect_ret("RC RTS -> RTS with IBV_QP_MIN_RNR_TIMER (optional)",
               ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER), 0);
    a.qp_state = IBV_QPS_RTR;
    expect_ret("RC RTS -> RTR (illegal transition) -> EINVAL", ibv_modify_qp(qp, &a, IBV_QP_STATE),
               EINVAL);
    a.qp_state = IBV_QPS_ERR;
    expect_ret("RC RTS -> ERR", ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
    check_qp_state("RC QP is in ERR", qp, IBV_QPS_ERR);
    a.qp_state = IBV_QPS_RESET;
    expect_ret("RC ERR -> RESET", ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
    check_qp_state("RC QP is back in RESET", qp, IBV_QPS_RESET);

    // Objects a QP uses are busy while it lives.
    expect_ret("ibv_destroy_cq(CQ used by a QP) -> EBUSY", ibv_destroy_cq(s->cq), EBUSY);
    expect_ret("ibv_dealloc_pd(PD used by a QP) -> EBUSY", ibv_dealloc_pd(s->pd), EBUSY);
    expect_ret("ibv_destroy_qp(RC)", ibv_destroy_qp(qp), 0);
}

static void check_uc(struct env* env, struct qp_set* s) {
    struct ibv_qp* qp =
        expect_obj("ibv_create_qp(UC)", create_qp(s, IBV_QPT_UC, NULL, 16, 16, 1, 1));
    expect_ret("UC RESET -> INIT (STATE|PKEY_INDEX|PORT|ACCESS_FLAGS)", to_init(qp, 0, 0, 1), 0);

    const int rtr_mask =
        IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
    struct ibv_qp_attr a;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = path_mtu_for(env);
    a.dest_qp_num = qp->qp_num;
    a.rq_psn = 1;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    a.ah_attr = grh_to_self(env);
    expect_ret("UC INIT -> RTR with IBV_QP_MAX_DEST_RD_ATOMIC (RC only) -> EINVAL",
               ibv_modify_qp(qp, &a, rtr_mask | IBV_QP_MAX_DEST_RD_ATOMIC), EINVAL);
    expect_ret("UC INIT -> RTR with IBV_QP_MIN_RNR_TIMER (RC only) -> EINVAL",
               ibv_modify_qp(qp, &a, rtr_mask | IBV_QP_MIN_RNR_TIMER), EINVAL);
    expect_ret("UC INIT -> RTR without IBV_QP_RQ_PSN (required) -> EINVAL",
               ibv_modify_qp(qp, &a, rtr_mask & ~IBV_QP_RQ_PSN), EINVAL);
    expect_ret("UC INIT -> RTR (uc_pingpong mask)", ibv_modify_qp(qp, &a, rtr_mask), 0);

    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = 2;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 1;
    expect_ret("UC RTR -> RTS with IBV_QP_TIMEOUT|RETRY_CNT|RNR_RETRY (RC only) -> EINVAL",
               ibv_modify_qp(qp, &a,
                             IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                 IBV_QP_RNR_RETRY),
               EINVAL);
    expect_ret("UC RTR -> RTS with IBV_QP_MAX_QP_RD_ATOMIC (RC only) -> EINVAL",
               ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC),
               EINVAL);
    expect_ret("UC RTR -> RTS (STATE|SQ_PSN)", ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN),
               0);
    check_qp_state("UC QP is in RTS", qp, IBV_QPS_RTS);
    expect_ret("ibv_destroy_qp(UC in RTS)", ibv_destroy_qp(qp), 0);
}

static void check_ud(struct env* env, struct qp_set* s) {
    (void)env;
    struct ibv_qp* qp =
        expect_obj("ibv_create_qp(UD)", create_qp(s, IBV_QPT_UD, NULL, 16, 16, 1, 1));
    expect_true("UD qp fields", qp->qp_num != 0 && qp->qp_type == IBV_QPT_UD, "qp_num=%u type=%d",
                qp->qp_num, qp->qp_type);
    expect_ret("UD RESET -> INIT without IBV_QP_QKEY (required) -> EINVAL",
               to_init(qp, IBV_QP_QKEY, 0, 1), EINVAL);
    expect_ret("UD RESET -> INIT with IBV_QP_ACCESS_FLAGS (not allowed for UD) -> EINVAL",
               to_init(qp, 0, IBV_QP_ACCESS_FLAGS, 1), EINVAL);
    expect_ret("UD RESET -> INIT (ud_pingpong: STATE|PKEY_INDEX|PORT|QKEY)", to_init(qp, 0, 0, 1),
               0);

    struct ibv_qp_attr a;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTR;
    a.ah_attr = grh_to_self(env);
    a.dest_qp_num = 1;
    expect_ret("UD INIT -> RTR with IBV_QP_AV (not allowed for UD) -> EINVAL",
               ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV), EINVAL);
    expect_ret("UD INIT -> RTR with IBV_QP_DEST_QPN (not allowed for UD) -> EINVAL",
               ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_DEST_QPN), EINVAL);
    expect_ret("UD INIT -> RTR (STATE)", ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);

    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = 0x42;
    expect_ret("UD RTR -> RTS without IBV_QP_SQ_PSN (required) -> EINVAL",
               ibv_modify_qp(qp, &a, IBV_QP_STATE), EINVAL);
    expect_ret("UD RTR -> RTS (STATE|SQ_PSN)", ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN),
               0);

    struct ibv_qp_attr qa;
    struct ibv_qp_init_attr qia;
    memset(&qa, 0, sizeof qa);
    expect_ret(
        "ibv_query_qp(UD)",
        ibv_query_qp(qp, &qa, IBV_QP_STATE | IBV_QP_QKEY | IBV_QP_SQ_PSN | IBV_QP_PORT, &qia), 0);
    expect_true("query_qp(UD): RTS, qkey, sq_psn, port",
                qa.qp_state == IBV_QPS_RTS && qa.qkey == 0x11111111 && qa.sq_psn == 0x42 &&
                    qa.port_num == 1 && qia.qp_type == IBV_QPT_UD,
                "qp_state=%d qkey=%#x sq_psn=%#x port_num=%d qp_type=%d", qa.qp_state, qa.qkey,
                qa.sq_psn, qa.port_num, qia.qp_type);
    expect_ret("ibv_destroy_qp(UD in RTS)", ibv_destroy_qp(qp), 0);
}

// ---- SRQ --------------------------------------------------------------------------------------

static void check_srq(struct env* env, struct qp_set* s) {
    char w[256];
    struct ibv_device_attr* d = &env->dev;
    struct ibv_srq_init_attr si;

    memset(&si, 0, sizeof si);
    si.attr.max_wr = (uint32_t)d->max_srq_wr + 1;
    si.attr.max_sge = 1;
    errno = 0;
    expect_null(
        CHECKF(w, "ibv_create_srq(max_wr = max_srq_wr + 1 = %d) -> EINVAL", d->max_srq_wr + 1),
        ibv_create_srq(s->pd, &si), EINVAL);
    memset(&si, 0, sizeof si);
    si.attr.max_wr = 16;
    si.attr.max_sge = (uint32_t)d->max_srq_sge + 1;
    errno = 0;
    expect_null(
        CHECKF(w, "ibv_create_srq(max_sge = max_srq_sge + 1 = %d) -> EINVAL", d->max_srq_sge + 1),
        ibv_create_srq(s->pd, &si), EINVAL);

    memset(&si, 0, sizeof si);
    si.attr.max_wr = 16;
    si.attr.max_sge = 1;
    struct ibv_srq* srq = expect_obj("ibv_create_srq(16 wr, 1 sge)", ibv_create_srq(s->pd, &si));
    expect_true("create_srq returns actual sizes >= requested",
                si.attr.max_wr >= 16 && si.attr.max_sge >= 1 && srq->pd == s->pd &&
                    srq->context == env->ctx,
                "max_wr=%u max_sge=%u", si.attr.max_wr, si.attr.max_sge);

    struct ibv_srq_attr sa;
    memset(&sa, 0, sizeof sa);
    sa.srq_limit = 4;
    expect_ret("ibv_modify_srq(IBV_SRQ_LIMIT = 4)", ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT), 0);
    memset(&sa, 0, sizeof sa);
    expect_ret("ibv_query_srq", ibv_query_srq(srq, &sa), 0);
    expect_true("query_srq: srq_limit 4, max_wr >= 16, max_sge >= 1",
                sa.srq_limit == 4 && sa.max_wr >= 16 && sa.max_sge >= 1,
                "srq_limit=%u max_wr=%u max_sge=%u", sa.srq_limit, sa.max_wr, sa.max_sge);
    memset(&sa, 0, sizeof sa);
    sa.srq_limit = (uint32_t)d->max_srq_wr + 1;
    expect_ret(CHECKF(w, "ibv_modify_srq(srq_limit = max_srq_wr + 1 = %u) -> EINVAL", sa.srq_limit),
               ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT), EINVAL);

    // An RC QP on the SRQ: max_recv_wr/sge are ignored with an SRQ.
    struct ibv_qp* qp =
        expect_obj("ibv_create_qp(RC on the SRQ)", create_qp(s, IBV_QPT_RC, srq, 16, 0, 1, 0));
    expect_true("qp->srq is the SRQ", qp->srq == srq, "qp->srq = %p", (void*)qp->srq);
    expect_ret("ibv_destroy_srq(SRQ used by a QP) -> EBUSY", ibv_destroy_srq(srq), EBUSY);
    expect_ret("ibv_destroy_qp(RC on the SRQ)", ibv_destroy_qp(qp), 0);
    expect_ret("ibv_destroy_srq", ibv_destroy_srq(srq), 0);
}

// ---- AH ---------------------------------------------------------------------------------------

static void check_ah(struct env* env, struct qp_set* s) {
    char w[256];
    struct ibv_ah_attr attr = grh_to_self(env);
    struct ibv_ah* ah =
        expect_obj("ibv_create_ah(GRH to our own GID, sgid_index 0)", ibv_create_ah(s->pd, &attr));
    expect_true("ah->pd and ah->context", ah->pd == s->pd && ah->context == env->ctx, "no");

    struct ibv_ah_attr bad;
    memset(&bad, 0, sizeof bad);
    bad.is_global = 0;
    bad.dlid = 1;
    bad.port_num = 1;
    errno = 0;
    expect_null("ibv_create_ah(no GRH on an Ethernet port) -> EINVAL", ibv_create_ah(s->pd, &bad),
                EINVAL);
    bad = grh_to_self(env);
    bad.port_num = 2;
    errno = 0;
    expect_null("ibv_create_ah(port 2) -> EINVAL", ibv_create_ah(s->pd, &bad), EINVAL);
    if (env->port.gid_tbl_len < 256) {
        bad = grh_to_self(env);
        bad.grh.sgid_index = (uint8_t)env->port.gid_tbl_len;
        errno = 0;
        expect_null(CHECKF(w, "ibv_create_ah(sgid_index %d = gid_tbl_len) -> EINVAL",
                           env->port.gid_tbl_len),
                    ibv_create_ah(s->pd, &bad), EINVAL);
    }
    expect_ret("ibv_destroy_ah", ibv_destroy_ah(ah), 0);
}

static void run_checks(struct env* env) {
    check_device(env);
    check_pd_mr(env);
    check_cq(env);

    struct qp_set s;
    s.pd = expect_obj("ibv_alloc_pd (for QPs)", ibv_alloc_pd(env->ctx));
    s.cq = expect_obj("ibv_create_cq(64) (for QPs)", ibv_create_cq(env->ctx, 64, NULL, NULL, 0));
    check_rc(env, &s);
    check_uc(env, &s);
    check_ud(env, &s);
    check_srq(env, &s);
    check_ah(env, &s);
    expect_ret("ibv_destroy_cq (QPs gone)", ibv_destroy_cq(s.cq), 0);
    expect_ret("ibv_dealloc_pd (QPs gone)", ibv_dealloc_pd(s.pd), 0);
}

// ---- holding objects (kill_cleanup, control_garbage) -----------------------------------------

struct held {
    struct ibv_pd* pd;
    struct ibv_mr* mr;
    struct ibv_comp_channel* ch;
    struct ibv_cq* cq;
    struct ibv_srq* srq;
    struct ibv_qp* qp;
    struct ibv_ah* ah;
};

static void hold_create(struct env* env, struct held* h, const char* who) {
    char w[256];
    h->pd = expect_obj(CHECKF(w, "%s: ibv_alloc_pd", who), ibv_alloc_pd(env->ctx));
    h->mr = expect_obj(
        CHECKF(w, "%s: ibv_reg_mr", who),
        ibv_reg_mr(h->pd, g_buf, sizeof g_buf,
                   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ));
    h->ch = expect_obj(CHECKF(w, "%s: ibv_create_comp_channel", who),
                       ibv_create_comp_channel(env->ctx));
    h->cq = expect_obj(CHECKF(w, "%s: ibv_create_cq", who),
                       ibv_create_cq(env->ctx, 32, NULL, h->ch, 0));
    struct ibv_srq_init_attr si;
    memset(&si, 0, sizeof si);
    si.attr.max_wr = 16;
    si.attr.max_sge = 1;
    h->srq = expect_obj(CHECKF(w, "%s: ibv_create_srq", who), ibv_create_srq(h->pd, &si));
    struct qp_set s = {h->pd, h->cq};
    h->qp = expect_obj(CHECKF(w, "%s: ibv_create_qp(RC)", who),
                       create_qp(&s, IBV_QPT_RC, NULL, 16, 16, 1, 1));
    expect_ret(CHECKF(w, "%s: RC RESET -> INIT", who), to_init(h->qp, 0, 0, 1), 0);
    struct ibv_ah_attr attr = grh_to_self(env);
    h->ah = expect_obj(CHECKF(w, "%s: ibv_create_ah", who), ibv_create_ah(h->pd, &attr));
}

static void hold_use_and_destroy(struct env* env, struct held* h, const char* who) {
    char w[256];
    check_qp_state(CHECKF(w, "%s: QP is still in INIT", who), h->qp, IBV_QPS_INIT);
    struct ibv_qp_attr a;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = path_mtu_for(env);
    a.dest_qp_num = h->qp->qp_num;
    a.rq_psn = 7;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    a.ah_attr = grh_to_self(env);
    expect_ret(CHECKF(w, "%s: QP INIT -> RTR", who),
               ibv_modify_qp(h->qp, &a,
                             IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                 IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
               0);
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.sq_psn = 7;
    a.max_rd_atomic = 1;
    expect_ret(CHECKF(w, "%s: QP RTR -> RTS", who),
               ibv_modify_qp(h->qp, &a,
                             IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                 IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC),
               0);
    struct ibv_srq_attr sa;
    expect_ret(CHECKF(w, "%s: SRQ: ibv_query_srq", who), ibv_query_srq(h->srq, &sa), 0);
    expect_ret(CHECKF(w, "%s: ibv_destroy_ah", who), ibv_destroy_ah(h->ah), 0);
    expect_ret(CHECKF(w, "%s: ibv_destroy_qp", who), ibv_destroy_qp(h->qp), 0);
    expect_ret(CHECKF(w, "%s: ibv_destroy_srq", who), ibv_destroy_srq(h->srq), 0);
    expect_ret(CHECKF(w, "%s: ibv_destroy_cq", who), ibv_destroy_cq(h->cq), 0);
    expect_ret(CHECKF(w, "%s: ibv_destroy_comp_channel", who), ibv_destroy_comp_channel(h->ch), 0);
    expect_ret(CHECKF(w, "%s: ibv_dereg_mr", who), ibv_dereg_mr(h->mr), 0);
    expect_ret(CHECKF(w, "%s: ibv_dealloc_pd", who), ibv_dealloc_pd(h->pd), 0);
}

// The success path only: what a client needs to get through, with no error paths.
static void query_basics(struct env* env) {
    expect_ret("ibv_query_device", ibv_query_device(env->ctx, &env->dev), 0);
    expect_ret("ibv_query_port(port 1)", ibv_query_port(env->ctx, 1, &env->port), 0);
    expect_ret("ibv_query_gid(port 1, index 0)", ibv_query_gid(env->ctx, 1, 0, &env->gid0), 0);
}

static void basic_cycle(struct env* env) {
    struct held h;
    hold_create(env, &h, "cycle");
    hold_use_and_destroy(env, &h, "cycle");
}

static void write_ready(const char* path) {
    if (!path) return;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE* f = fopen(tmp, "w");
    if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
        perror("verbs_objects: writing the ready file");
        exit(2);
    }
}

static void usage(void) {
    fprintf(stderr, "usage: verbs_objects [--dev NAME] [--expect-gid GID] [--ready-file F] "
                    "[--keep-going] [--basic | --hold | --hold-until FILE]\n");
    exit(2);
}

int main(int argc, char** argv) {
    const char* dev_name = "emu0";
    const char* ready_file = NULL;
    const char* hold_until = NULL;
    int hold_forever = 0;
    int basic = 0;
    struct env env;
    memset(&env, 0, sizeof env);

    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--dev") && i + 1 < argc)
            dev_name = argv[++i];
        else if (!strcmp(argv[i], "--expect-gid") && i + 1 < argc)
            env.expect_gid = argv[++i];
        else if (!strcmp(argv[i], "--ready-file") && i + 1 < argc)
            ready_file = argv[++i];
        else if (!strcmp(argv[i], "--hold-until") && i + 1 < argc)
            hold_until = argv[++i];
        else if (!strcmp(argv[i], "--hold"))
            hold_forever = 1;
        else if (!strcmp(argv[i], "--basic"))
            basic = 1;
        else if (!strcmp(argv[i], "--keep-going"))
            g_keep_going = 1;
        else
            usage();
    }
    setvbuf(stdout, NULL, _IOLBF, 0);

    int num = -1;
    errno = 0;
    struct ibv_device** list = ibv_get_device_list(&num);
    if (!list)
        FATAL("ibv_get_device_list", "expected a list, got NULL with errno %s (%d)", errname(errno),
              errno);
    pass("ibv_get_device_list");
    struct ibv_device* dev = NULL;
    for (int i = 0; i < num; ++i)
        if (!strcmp(ibv_get_device_name(list[i]), dev_name)) dev = list[i];
    if (!dev) FATAL("the device list has our device", "no device named %s among %d", dev_name, num);
    pass("the device list has our device");
    expect_true("device node type is CA, transport IB (as RoCE devices report)",
                dev->node_type == IBV_NODE_CA && dev->transport_type == IBV_TRANSPORT_IB,
                "node_type=%d transport_type=%d", dev->node_type, dev->transport_type);
    env.ctx = expect_obj("ibv_open_device", ibv_open_device(dev));
    expect_true("ctx->device is the device",
                env.ctx->device == dev && env.ctx->num_comp_vectors > 0,
                "device=%p num_comp_vectors=%d", (void*)env.ctx->device, env.ctx->num_comp_vectors);
    ibv_free_device_list(list);

    if (hold_forever || hold_until) {
        query_basics(&env);
        struct held h;
        hold_create(&env, &h, "held");
        write_ready(ready_file);
        printf("HOLDING pid=%d\n", (int)getpid());
        if (hold_forever)
            for (;;)
                pause();
        struct stat st;
        for (int waited = 0; stat(hold_until, &st) != 0; waited += 50) {
            if (waited > 600000) FATAL("hold", "%s did not appear within 600 s", hold_until);
            usleep(50 * 1000);
        }
        hold_use_and_destroy(&env, &h, "held");
        basic_cycle(&env);
    } else if (basic) {
        query_basics(&env);
        basic_cycle(&env);
    } else {
        run_checks(&env);
    }
    expect_ret("ibv_close_device", ibv_close_device(env.ctx), 0);
    if (g_failures) {
        printf("FAILED: %d of %d checks failed\n", g_failures, g_checks + g_failures);
        return 1;
    }
    printf("PASS: all %d checks passed\n", g_checks);
    return 0;
}
