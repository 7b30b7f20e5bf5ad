// limits: the fair limits of one emulated host (limits.sh).
//
//   limits --shares QP,CQ,MR,CONTEXT [--hold-file F --release-file R]
//     expects a host started with `--max-per-process qp=QP,cq=CQ,mr=MR,context=CONTEXT`: this
//     process gets exactly its share of each (one more: EAGAIN), and one more again after it
//     freed one. With --hold-file it then writes F and keeps everything until R exists, so that
//     the script can run a second process meanwhile.
//   limits --efault
//     MRs over memory that is not there fail with EFAULT, as the kernel's ib_umem_get does: 20
//     GiB of unmapped address space, PROT_NONE pages, read-only pages with a writing access, a
//     rereg onto unmapped memory; the same pages without write access, and ODP over unmapped
//     memory, register.
#include "rc_common.h"

#include <getopt.h>
#include <sys/mman.h>
#include <sys/stat.h>

static struct ibv_context* open_ctx(void) {
    int n = 0;
    struct ibv_device** list = ibv_get_device_list(&n);
    if (!list || n < 1) die("ibv_get_device_list: no device");
    struct ibv_context* ctx = ibv_open_device(list[0]);
    int err = errno;
    ibv_free_device_list(list);
    errno = err;
    return ctx;
}

static void expect_eagain(const char* what, int failed, unsigned share) {
    if (!failed) die("%s beyond a share of %u succeeded", what, share);
    if (errno != EAGAIN)
        die("%s beyond a share of %u: %s, expected EAGAIN", what, share, strerror(errno));
}

static void shares(unsigned qps, unsigned cqs, unsigned mrs, unsigned contexts,
                   const char* hold_file, const char* release_file) {
    struct ibv_context* ctx[64];
    if (contexts > 64 || cqs < 1) die("shares out of this test's range");
    for (unsigned i = 0; i < contexts; ++i)
        if (!(ctx[i] = open_ctx())) die("ibv_open_device #%u: %s", i + 1, strerror(errno));
    expect_eagain("ibv_open_device", open_ctx() == NULL, contexts);
    pass("%u device contexts, then EAGAIN", contexts);

    struct ibv_cq* cq[1024];
    if (cqs > 1024) die("more CQs than this test holds");
    for (unsigned i = 0; i < cqs; ++i)
        if (!(cq[i] = ibv_create_cq(ctx[0], 1, NULL, NULL, 0)))
            die("ibv_create_cq #%u: %s", i + 1, strerror(errno));
    expect_eagain("ibv_create_cq", ibv_create_cq(ctx[0], 1, NULL, NULL, 0) == NULL, cqs);
    if (ibv_destroy_cq(cq[cqs - 1])) die("ibv_destroy_cq failed");
    if (!(cq[cqs - 1] = ibv_create_cq(ctx[0], 1, NULL, NULL, 0)))
        die("ibv_create_cq after freeing one: %s", strerror(errno));
    pass("%u CQs, then EAGAIN; one freed, one more made", cqs);

    struct ibv_pd* pd = ibv_alloc_pd(ctx[0]);
    if (!pd) die("ibv_alloc_pd: %s", strerror(errno));
    for (unsigned i = 0; i < qps; ++i)
        create_rc_qp(pd, cq[0], cq[0], 1, 1, 1, 0); // freed with the process
    struct ibv_qp_init_attr ia = {
        .send_cq = cq[0], .recv_cq = cq[0], .cap = {1, 1, 1, 1, 0}, .qp_type = IBV_QPT_RC};
    expect_eagain("ibv_create_qp", ibv_create_qp(pd, &ia) == NULL, qps);
    pass("%u QPs, then EAGAIN", qps);

    static char buf[4096];
    struct ibv_mr* mr[4096];
    if (mrs > 4096) die("more MRs than this test holds");
    for (unsigned i = 0; i < mrs; ++i)
        mr[i] = reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
    expect_eagain("ibv_reg_mr", ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE) == NULL,
                  mrs);
    if (ibv_dereg_mr(mr[0])) die("ibv_dereg_mr failed");
    mr[0] = reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
    pass("%u MRs, then EAGAIN; one deregistered, one more registered", mrs);

    if (!hold_file) return;
    FILE* f = fopen(hold_file, "w");
    if (!f || fputs("holding\n", f) < 0 || fclose(f)) die("cannot write %s", hold_file);
    struct stat st;
    double deadline = now_s() + 60;
    while (stat(release_file, &st) != 0) {
        if (now_s() > deadline) die("%s did not appear within 60 s", release_file);
        usleep(20 * 1000);
    }
}

static void expect_efault(const char* what, struct ibv_mr* mr) {
    if (mr) die("%s registered", what);
    if (errno != EFAULT) die("%s: %s, expected EFAULT", what, strerror(errno));
    pass("%s: EFAULT", what);
}

static void efault(void) {
    struct ibv_context* ctx = open_ctx();
    if (!ctx) die("ibv_open_device: %s", strerror(errno));
    struct ibv_pd* pd = ibv_alloc_pd(ctx);
    if (!pd) die("ibv_alloc_pd: %s", strerror(errno));
    const size_t big = 20ull << 30;
    char* hole = mmap(NULL, big, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (hole == MAP_FAILED) die("reserving 20 GiB of address space: %s", strerror(errno));
    if (munmap(hole, big)) die("munmap: %s", strerror(errno));
    expect_efault("ibv_reg_mr of 20 GiB of unmapped memory",
                  ibv_reg_mr(pd, hole, big, IBV_ACCESS_LOCAL_WRITE));
    struct ibv_mr* odp = ibv_reg_mr(pd, hole, big, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
    if (!odp)
        die("an ODP MR over unmapped memory: %s (the kernel pins nothing for ODP)",
            strerror(errno));
    ibv_dereg_mr(odp);
    pass("an ODP MR over the same unmapped memory registers");

    char* p = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) die("mmap: %s", strerror(errno));
    if (mprotect(p + 4096, 4096, PROT_NONE)) die("mprotect: %s", strerror(errno));
    expect_efault("ibv_reg_mr over a PROT_NONE page", ibv_reg_mr(pd, p, 3 * 4096, 0));
    if (mprotect(p + 4096, 4096, PROT_READ)) die("mprotect: %s", strerror(errno));
    expect_efault("ibv_reg_mr(IBV_ACCESS_LOCAL_WRITE) over a read-only page",
                  ibv_reg_mr(pd, p, 3 * 4096, IBV_ACCESS_LOCAL_WRITE));
    struct ibv_mr* ro = ibv_reg_mr(pd, p, 3 * 4096, IBV_ACCESS_REMOTE_READ);
    if (!ro) die("ibv_reg_mr(IBV_ACCESS_REMOTE_READ) over a read-only page: %s", strerror(errno));
    pass("ibv_reg_mr(IBV_ACCESS_REMOTE_READ) over the read-only page registers");

    struct ibv_mr* mr = reg_mr(pd, p, 4096, IBV_ACCESS_LOCAL_WRITE);
    errno = 0;
    int rc = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, hole, 1 << 20, 0);
    if (rc != IBV_REREG_MR_ERR_CMD || errno != EFAULT)
        die("ibv_rereg_mr onto unmapped memory: %d (%s), expected IBV_REREG_MR_ERR_CMD, EFAULT", rc,
            strerror(errno));
    pass("ibv_rereg_mr onto unmapped memory: IBV_REREG_MR_ERR_CMD, EFAULT");
    ibv_dereg_mr(mr);
    ibv_dereg_mr(ro);
    ibv_dealloc_pd(pd);
    ibv_close_device(ctx);
}

int main(int argc, char** argv) {
    static const struct option opts[] = {{"shares", required_argument, 0, 's'},
                                         {"hold-file", required_argument, 0, 'h'},
                                         {"release-file", required_argument, 0, 'r'},
                                         {"efault", no_argument, 0, 'e'},
                                         {0, 0, 0, 0}};
    unsigned q = 0, c = 0, m = 0, x = 0;
    int have_shares = 0, do_efault = 0, o;
    const char *hold = NULL, *release = NULL;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (o == 's')
            have_shares = sscanf(optarg, "%u,%u,%u,%u", &q, &c, &m, &x) == 4;
        else if (o == 'h')
            hold = optarg;
        else if (o == 'r')
            release = optarg;
        else if (o == 'e')
            do_efault = 1;
        else
            return 2;
    }
    if (have_shares == do_efault || !hold != !release) {
        fprintf(stderr, "usage: limits --shares QP,CQ,MR,CONTEXT [--hold-file F --release-file R]"
                        " | --efault\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    g_role = "limits";
    if (do_efault)
        efault();
    else
        shares(q, c, m, x, hold, release);
    printf("PASS\n");
    return 0;
}
