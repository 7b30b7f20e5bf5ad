// mr_memory: RDMA into MRs on every kind of memory an app registers, byte for byte, with the
// engine the NIC uses for each: whole pages of private anonymous memory shared with the NIC
// (heap, .bss, anonymous mmap), everything else through the process's memory (stack, .data,
// a mapped file, partial pages). And the semantics the sharing must keep: two MRs on one page,
// rereg to another buffer, dereg then reuse, fork() with and without ibv_fork_init, memory
// unmapped while registered.
//
//   mr_memory STATE_FILE   one process, two RC QPs in loopback on the one device it sees.
//   Before exiting it writes "NAME ADDR EXPECTED_ENGINE" lines for the MRs it still holds to
//   STATE_FILE and waits for a line on stdin (the test compares them with rdmaemu status).
#include "rc_common.h"

#include <sys/mman.h>
#include <sys/wait.h>

#define PAGE 4096

static struct dev d;
static struct ibv_pd* pd;
static struct cqw cq;
static struct ibv_qp *qa, *qb; // qa posts, qb answers
static char* scratch;          // source and sink of every transfer
static struct ibv_mr* scratch_mr;
static const int kAccess =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;

static void connect_loopback(void) {
    struct loopback_pair p = connect_loopback_pair(&d, pd, cq.cq, 16);
    qa = p.a;
    qb = p.b;
}

// One RDMA op of `len` bytes between scratch and `remote` (in `mr`); its status. A failed op
// takes the QPs to ERR: they are made again.
static enum ibv_wc_status rdma(enum ibv_wr_opcode op, struct ibv_mr* mr, void* remote, size_t len) {
    struct ibv_sge sge = {
        .addr = (uintptr_t)scratch, .length = (uint32_t)len, .lkey = scratch_mr->lkey};
    struct ibv_send_wr wr = {.sg_list = &sge,
                             .num_sge = 1,
                             .opcode = op,
                             .send_flags = IBV_SEND_SIGNALED},
                       *bad;
    wr.wr.rdma.remote_addr = (uintptr_t)remote;
    wr.wr.rdma.rkey = mr->rkey;
    if (ibv_post_send(qa, &wr, &bad)) die("ibv_post_send: %s", strerror(errno));
    struct ibv_wc wc;
    if (cqw_poll(&cq, &wc, 1, 20.0) != 1) die("no completion within 20 s");
    if (wc.status != IBV_WC_SUCCESS) {
        ibv_destroy_qp(qa);
        ibv_destroy_qp(qb);
        struct ibv_wc drain[16];
        while (ibv_poll_cq(cq.cq, 16, drain) > 0) {
        }
        connect_loopback();
    }
    return wc.status;
}

static void fill(char* p, size_t n, uint64_t seed) {
    for (size_t i = 0; i < n; ++i)
        p[i] = (char)splitmix64(seed + i);
}

static int same(const char* p, size_t n, uint64_t seed) {
    for (size_t i = 0; i < n; ++i)
        if (p[i] != (char)splitmix64(seed + i)) return 0;
    return 1;
}

// WRITE a pattern into [buf, buf + len) of `mr`, check the app sees it, change it locally, READ
// it back and check the NIC sees the app's bytes.
static void round_trip(const char* what, struct ibv_mr* mr, char* buf, size_t len, uint64_t seed) {
    fill(scratch, len, seed);
    enum ibv_wc_status s = rdma(IBV_WR_RDMA_WRITE, mr, buf, len);
    if (s != IBV_WC_SUCCESS) die("%s: WRITE %s", what, wc_status_name(s));
    if (!same(buf, len, seed)) die("%s: the WRITE's bytes are not what the app sees", what);
    fill(buf, len, seed * 7 + 1);
    memset(scratch, 0, len);
    s = rdma(IBV_WR_RDMA_READ, mr, buf, len);
    if (s != IBV_WC_SUCCESS) die("%s: READ %s", what, wc_status_name(s));
    if (!same(scratch, len, seed * 7 + 1)) die("%s: the READ did not return the app's bytes", what);
    pass("%s: %zu bytes written and read back, byte for byte", what, len);
}

static FILE* state;
static void expect(const char* name, struct ibv_mr* mr, const char* engine) {
    fprintf(state, "%s %lu %s\n", name, (unsigned long)(uintptr_t)mr->addr, engine);
}

static char bss_buf[4 * PAGE] __attribute__((aligned(PAGE)));
static char data_buf[4 * PAGE] __attribute__((aligned(PAGE))) = {1};

// Whether [p, p + len) is a private mapping again (no memfd of ours is mapped there).
static int private_again(const void* p) {
    FILE* f = fopen("/proc/self/maps", "r");
    char line[512];
    int shared = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long s, e;
        if (sscanf(line, "%lx-%lx", &s, &e) == 2 && s <= (uintptr_t)p && (uintptr_t)p < e)
            shared = strstr(line, "memfd:rdmaemu-mr") != NULL;
    }
    if (f) fclose(f);
    return !shared;
}

static void forked(int fork_init) {
    char* buf = xaligned(PAGE, 2 * PAGE);
    fill(buf, 2 * PAGE, 11);
    struct ibv_mr* mr = reg_mr(pd, buf, 2 * PAGE, kAccess);
    pid_t child = fork();
    if (child < 0) die("fork");
    if (child == 0) { // its copy: private, with the bytes of the fork
        if (!same(buf, 2 * PAGE, 11)) _exit(2);
        memset(buf, 'c', 2 * PAGE);
        _exit(0);
    }
    int st = 0;
    waitpid(child, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        die("fork%s: the child's copy was not the parent's bytes",
            fork_init ? " after ibv_fork_init" : "");
    if (!same(buf, 2 * PAGE, 11))
        die("fork%s: the child's writes reached the parent",
            fork_init ? " after ibv_fork_init" : "");
    round_trip(fork_init ? "after fork() with ibv_fork_init, the parent's MR"
                         : "after fork(), the parent's MR",
               mr, buf, 2 * PAGE, 12);
    ibv_dereg_mr(mr);
    free(buf);
}

int main(int argc, char** argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc != 2) die("usage: mr_memory STATE_FILE");
    g_role = "mr_memory";
    state = fopen(argv[1], "w");
    if (!state) die("cannot write %s", argv[1]);
    dev_open(&d);
    pd = ibv_alloc_pd(d.ctx);
    cqw_create(&cq, d.ctx, 64);
    connect_loopback();
    scratch = xaligned(PAGE, 64 * 1024);
    scratch_mr = reg_mr(pd, scratch, 64 * 1024, IBV_ACCESS_LOCAL_WRITE);

    char* heap = xaligned(PAGE, 64 * 1024);
    struct ibv_mr* heap_mr = reg_mr(pd, heap, 64 * 1024, kAccess);
    round_trip("page-aligned heap", heap_mr, heap, 64 * 1024, 1);
    expect("heap", heap_mr, "mapped");

    char* odd = malloc(10000);
    struct ibv_mr* odd_mr = reg_mr(pd, odd, 10000, kAccess);
    round_trip("unaligned heap (partial first and last pages)", odd_mr, odd, 10000, 2);
    expect("unaligned", odd_mr, "mapped");

    char stack[3 * PAGE];
    struct ibv_mr* stack_mr = reg_mr(pd, stack, sizeof stack, kAccess);
    round_trip("stack", stack_mr, stack, sizeof stack, 3);
    expect("stack", stack_mr, "process");

    struct ibv_mr* bss_mr = reg_mr(pd, bss_buf, sizeof bss_buf, kAccess);
    round_trip("static .bss", bss_mr, bss_buf, sizeof bss_buf, 4);
    expect("bss", bss_mr, "mapped");
    struct ibv_mr* data_mr = reg_mr(pd, data_buf, sizeof data_buf, kAccess);
    round_trip("static .data (file-backed)", data_mr, data_buf, sizeof data_buf, 5);
    expect("data", data_mr, "process");

    char path[] = "/tmp/mr_memory.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || ftruncate(fd, 2 * PAGE)) die("temp file");
    unlink(path);
    char* file = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (file == MAP_FAILED) die("mmap file");
    struct ibv_mr* file_mr = reg_mr(pd, file, 2 * PAGE, kAccess);
    round_trip("mmap'd file", file_mr, file, 2 * PAGE, 6);
    char back[64];
    if (pread(fd, back, sizeof back, 0) != sizeof back || memcmp(back, file, sizeof back))
        die("mmap'd file: the bytes are not in the file");
    expect("file", file_mr, "process");

    void* huge = mmap(NULL, 2 << 20, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
    if (huge != MAP_FAILED) {
        struct ibv_mr* huge_mr = reg_mr(pd, huge, 2 << 20, kAccess);
        round_trip("huge page (MAP_HUGETLB)", huge_mr, (char*)huge + 4096, 64 * 1024, 7);
        expect("huge", huge_mr, "process");
    } else {
        note("no 2 MiB huge page to map (nr_hugepages is 0): the huge-page case is left out");
    }

    // Two MRs on the same pages: the second joins the first's shared pages; each keeps working
    // when the other goes.
    char* two = xaligned(PAGE, 4 * PAGE);
    struct ibv_mr* outer = reg_mr(pd, two, 4 * PAGE, kAccess);
    struct ibv_mr* inner = reg_mr(pd, two + PAGE, 2 * PAGE, kAccess);
    round_trip("two MRs on the same pages: the inner one", inner, two + PAGE, 2 * PAGE, 8);
    struct ibv_mr* inside_heap = reg_mr(pd, heap + PAGE, 2 * PAGE, kAccess);
    round_trip("an MR inside the heap MR's pages", inside_heap, heap + PAGE, 2 * PAGE, 17);
    expect("inside_heap", inside_heap, "mapped");
    if (ibv_dereg_mr(outer)) die("dereg outer");
    round_trip("two MRs on the same pages: the inner one, the outer deregistered", inner,
               two + PAGE, 2 * PAGE, 9);
    fill(two, 4 * PAGE, 10);
    if (ibv_dereg_mr(inner)) die("dereg inner");
    if (!same(two, 4 * PAGE, 10) || !private_again(two + PAGE))
        die("after the last dereg the pages must be private again with the app's bytes");
    pass("dereg of the last MR on shared pages: private memory again, the app's bytes kept");
    free(two);
    char* reuse = malloc(4 * PAGE);
    memset(reuse, 0x5A, 4 * PAGE);
    free(reuse);
    pass("dereg then free() and reuse of the memory");

    // rereg to another buffer: the new one is reached, the old one is private again.
    char* first = xaligned(PAGE, 2 * PAGE);
    char* second = xaligned(PAGE, 2 * PAGE);
    struct ibv_mr* moving = reg_mr(pd, first, 2 * PAGE, kAccess);
    if (ibv_rereg_mr(moving, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, second, 2 * PAGE, 0))
        die("ibv_rereg_mr: %s", strerror(errno));
    round_trip("rereg to a new buffer", moving, second, 2 * PAGE, 13);
    if (!private_again(first)) die("rereg: the old buffer is still shared");
    expect("rereg", moving, "mapped");

    forked(0);
    if (ibv_fork_init()) die("ibv_fork_init");
    forked(1);

    // Memory unmapped while registered: the access completes (from the pages the NIC still holds,
    // as a pinned MR on hardware) or with an error status; the NIC never crashes.
    char* gone = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct ibv_mr* gone_mr = reg_mr(pd, gone, 2 * PAGE, kAccess);
    munmap(gone, 2 * PAGE);
    fill(scratch, 2 * PAGE, 14);
    enum ibv_wc_status s = rdma(IBV_WR_RDMA_WRITE, gone_mr, gone, 2 * PAGE);
    note("WRITE into unmapped registered memory: %s", wc_status_name(s));
    round_trip("after it, another MR", heap_mr, heap, 4096, 15);
    char* partial_gone =
        mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct ibv_mr* pg_mr = reg_mr(pd, partial_gone + 100, 200, kAccess);
    munmap(partial_gone, 2 * PAGE);
    s = rdma(IBV_WR_RDMA_READ, pg_mr, partial_gone + 100, 200);
    if (s == IBV_WC_SUCCESS)
        die("READ of unmapped memory the NIC reaches through the process succeeded");
    pass("READ of unmapped memory reached through the process: %s", wc_status_name(s));
    round_trip("after it, another MR", heap_mr, heap, 4096, 16);

    fclose(state);
    printf("ready\n");
    char line[8];
    if (!fgets(line, sizeof line, stdin)) die("stdin closed");
    return 0;
}
