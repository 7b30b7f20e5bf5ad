// stale_owner: memory registered by a process that has exited is reached by nobody else, not
// even when another process gets its pid and maps the same address (a forked child keeps the
// session, and with it the MRs, alive).
//
//   stale_owner owner PID_FILE   under `rdmaemu run`: maps TARGET and registers two MRs on it:
//                                the whole page (the library shares it with the NIC) and 64
//                                bytes inside it (a partial page: the NIC reaches it through the
//                                owner's /proc/self/mem). Connects loopback RC pairs, forks a
//                                child that keeps the session, checks READs of both while it
//                                lives, then exits (writing its pid first, and the child's to
//                                PID_FILE.child).
//                                The child waits for a line on stdin, then READs and WRITEs the
//                                dead owner's MRs. Through the owner's memory both fail. Through
//                                the shared page they reach the page the NIC still holds, as
//                                hardware reaches an MR's pinned pages: the owner's old bytes.
//   stale_owner victim READY     maps kTarget with a secret, writes READY, waits for a line on
//                                stdin, exits 0 when the secret is intact.
#include "rc_common.h"

#include <sys/mman.h>
#include <sys/wait.h>

#define TARGET ((void*)0x7e5a00000000ull)
#define PAGE 4096
#define LEN 64
#define PART 1024 // the partial MR: TARGET + PART, LEN bytes

static void map_target(char fill) {
    void* p = mmap(TARGET, PAGE, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p != TARGET) die("mmap at %p: %s", TARGET, strerror(errno));
    memset(p, fill, PAGE);
}

static void write_number_file(const char* path, long v) {
    FILE* f = fopen(path, "w");
    if (!f || fprintf(f, "%ld\n", v) < 0 || fclose(f) != 0) die("writing %s", path);
}

static void wait_line(void) {
    char line[16];
    if (!fgets(line, sizeof line, stdin)) die("stdin closed before the go line");
}

// One RDMA READ or WRITE of LEN bytes between buf and `target` (from its first byte); its
// completion status.
static enum ibv_wc_status rdma(struct ibv_qp* qp, struct cqw* cq, enum ibv_wr_opcode op,
                               struct ibv_mr* buf, struct ibv_mr* target) {
    struct ibv_sge sge = {.addr = (uintptr_t)buf->addr, .length = LEN, .lkey = buf->lkey};
    struct ibv_send_wr wr = {.wr_id = op,
                             .sg_list = &sge,
                             .num_sge = 1,
                             .opcode = op,
                             .send_flags = IBV_SEND_SIGNALED},
                       *bad;
    wr.wr.rdma.remote_addr = (uintptr_t)target->addr;
    wr.wr.rdma.rkey = target->rkey;
    if (ibv_post_send(qp, &wr, &bad)) die("ibv_post_send: %s", strerror(errno));
    struct ibv_wc wc;
    if (cqw_poll(cq, &wc, 1, 20.0) != 1)
        die("no completion for the %s within 20 s", op == IBV_WR_RDMA_READ ? "READ" : "WRITE");
    return wc.status;
}

static int all(const char* p, char c, size_t n) {
    for (size_t i = 0; i < n; ++i)
        if (p[i] != c) return 0;
    return 1;
}

static int owner(const char* pid_file) {
    g_role = "owner";
    map_target('O');
    struct dev d;
    dev_open(&d);
    struct ibv_pd* pd = ibv_alloc_pd(d.ctx);
    if (!pd) die("ibv_alloc_pd failed");
    int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
    struct ibv_mr* shared = reg_mr(pd, TARGET, PAGE, access);
    struct ibv_mr* partial = reg_mr(pd, (char*)TARGET + PART, LEN, access);
    struct cqw cq;
    cqw_create(&cq, d.ctx, 16);
    // A failed access takes its QP to ERR: one pair each.
    struct loopback_pair via_shared = connect_loopback_pair(&d, pd, cq.cq, 4);
    struct loopback_pair reads = connect_loopback_pair(&d, pd, cq.cq, 4);
    struct loopback_pair writes = connect_loopback_pair(&d, pd, cq.cq, 4);
    int sync[2];
    if (pipe(sync)) die("pipe");
    pid_t child = fork();
    if (child < 0) die("fork: %s", strerror(errno));
    if (child == 0) {
        g_role = "child";
        close(sync[0]);
        char* buf = xaligned(PAGE, PAGE);
        memset(buf, '-', PAGE);
        struct ibv_mr* mine = reg_mr(pd, buf, PAGE, IBV_ACCESS_LOCAL_WRITE);
        enum ibv_wc_status s = rdma(via_shared.a, &cq, IBV_WR_RDMA_READ, mine, shared);
        if (s != IBV_WC_SUCCESS || !all(buf, 'O', LEN))
            die("READ of the owner's page MR while it lives: %s, data %.8s", wc_status_name(s),
                buf);
        memset(buf, '-', PAGE);
        s = rdma(reads.a, &cq, IBV_WR_RDMA_READ, mine, partial);
        if (s != IBV_WC_SUCCESS || !all(buf, 'O', LEN))
            die("READ of the owner's partial MR while it lives: %s, data %.8s", wc_status_name(s),
                buf);
        pass("READ of the owner's MR while the owner lives: the owner's bytes, both MRs");
        if (write(sync[1], "1", 1) != 1) die("pipe write");
        wait_line();

        memset(buf, '-', PAGE);
        s = rdma(reads.a, &cq, IBV_WR_RDMA_READ, mine, partial);
        if (s == IBV_WC_SUCCESS)
            die("READ of the dead owner's partial MR succeeded; data %.8s", buf);
        if (!all(buf, '-', PAGE))
            die("READ of the dead owner's partial MR failed but wrote %.8s", buf);
        pass("READ of the dead owner's partial MR (its memory): %s, nothing came back",
             wc_status_name(s));
        memset(buf, 'A', PAGE);
        s = rdma(writes.a, &cq, IBV_WR_RDMA_WRITE, mine, partial);
        if (s == IBV_WC_SUCCESS) die("WRITE into the dead owner's partial MR succeeded");
        pass("WRITE into the dead owner's partial MR: %s", wc_status_name(s));

        memset(buf, '-', PAGE);
        s = rdma(via_shared.a, &cq, IBV_WR_RDMA_READ, mine, shared);
        if (s != IBV_WC_SUCCESS || !all(buf, 'O', LEN))
            die("READ of the dead owner's page MR: %s, data %.8s (want the owner's bytes, from "
                "the page the NIC holds)",
                wc_status_name(s), buf);
        pass(
            "READ of the dead owner's page MR: the owner's old bytes, from the page the NIC holds");
        memset(buf, 'A', PAGE);
        s = rdma(via_shared.a, &cq, IBV_WR_RDMA_WRITE, mine, shared);
        if (s != IBV_WC_SUCCESS) die("WRITE into the dead owner's page MR: %s", wc_status_name(s));
        pass("WRITE into the dead owner's page MR: into the page the NIC holds");
        printf("done\n");
        fflush(stdout);
        _exit(0);
    }
    close(sync[1]);
    char c;
    if (read(sync[0], &c, 1) != 1) die("the child failed before its first READ");
    char child_file[512];
    snprintf(child_file, sizeof child_file, "%s.child", pid_file);
    write_number_file(child_file, child);
    write_number_file(pid_file, getpid());
    note("owner pid %d exits; the child keeps the session", getpid());
    _exit(0); // as a crash would: no cleanup, the child holds the session
}

static int victim(const char* ready) {
    g_role = "victim";
    map_target('S');
    write_number_file(ready, getpid());
    wait_line();
    if (!all(TARGET, 'S', PAGE)) die("the secret page at %p was changed", TARGET);
    pass("pid %d: the secret page at %p is intact", getpid(), TARGET);
    return 0;
}

int main(int argc, char** argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 3 && !strcmp(argv[1], "owner")) return owner(argv[2]);
    if (argc == 3 && !strcmp(argv[1], "victim")) return victim(argv[2]);
    fprintf(stderr, "usage: stale_owner owner PID_FILE | victim READY_FILE\n");
    return 2;
}
