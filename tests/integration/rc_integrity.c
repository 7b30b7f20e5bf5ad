// rc_integrity: moves a large amount of seeded pseudo-random data over one RC QP pair with SEND,
// RDMA WRITE and RDMA READ, runs fetch-add and compare-swap on a few counters, and verifies every
// byte and every atomic result where it lands. Built against the system <infiniband/verbs.h> and
// -libverbs; `rdmaemu run` puts the emulator's library in its place.
//
// Two processes, each on its own emulated host (each process sees one device):
//   server: rc_integrity --server --port P [--port-file F]
//   client: rc_integrity --client --port P [--mib N] [--seed S] [--atomics N] [--depth D] ...
// They meet on a TCP socket on 127.0.0.1:P (P = 0 on the server: any free port, written to F).
//
// The client drives rounds. Each round has a type (SEND, WRITE, READ, ATOMIC, MIXED) and a plan:
// the list of operations (sizes, remote offsets, data keys, atomic operands and expected
// results), which both sides derive from (seed, round) independently. The data of a SEND or WRITE
// is the splitmix64 stream of the operation's key, so the server regenerates it to check what
// arrived; the server's READ region holds the stream of the round's key, so the client checks
// what it read. Every destination is first filled with a position-dependent canary, and the
// whole extent (data and the gaps around it) is compared with an expected image, so a byte
// written one off, twice or too far is caught as well as a wrong byte.
//
// What a round exercises: sizes from 0/1 byte to 1 MiB + 4097 (non-multiples of the MTU and of 4,
// around the MTU and the inline limit), 1-4 SGEs per WR at unaligned addresses on both sides,
// receive buffers larger than the message, IBV_SEND_INLINE for small SENDs/WRITEs, up to --depth
// WRs outstanding (by default the SQ's max_send_wr: a polled completion must free its slot),
// atomics within the QP's max_rd_atomic, and (MIXED) all of them interleaved.
// The client's first PSN is just below 2^24, so the PSN wraps early on.
//
// Prints one line per round and a summary; exits 1 at the first mismatch, with details.
#include "rc_common.h"

#include <getopt.h>
#include <inttypes.h>

enum { MiB = 1024 * 1024 };

enum op_kind { OP_SEND, OP_WRITE, OP_READ, OP_FADD, OP_CSWAP, OP_KINDS };
static const char* const kind_name[OP_KINDS] = {"SEND", "WRITE", "READ", "FETCH_ADD", "CMP_SWAP"};

enum round_type { RT_SEND, RT_WRITE, RT_READ, RT_ATOMIC, RT_MIXED, RT_COUNT };
static const char* const round_name[RT_COUNT] = {"SEND", "WRITE", "READ", "ATOMIC", "MIXED"};

enum { NCTR = 4, MAX_SGE = 4, MAX_OPS = 1000, ATOMIC_REGION = 4096 };
static const uint32_t counter_off[NCTR] = {0, 8, 1024, ATOMIC_REGION - 8};

// Sizes the SEND, WRITE and READ rounds among rounds 0-4 go through before random ones.
static const uint32_t special_sizes[] = {
    0,    1,    2,    3,    4,     5,     7,     8,       9,       15,      16,      17,      31,
    63,   64,   65,   127,  128,   129,   255,   256,     257,     511,     512,     513,     1000,
    1023, 1024, 1025, 1500, 2047,  2048,  2049,  3000,    3071,    3072,    3073,    4095,    4096,
    4097, 8191, 8192, 8193, 65535, 65536, 65537, 1048575, 1048576, 1048577, 1049599, 1310721,
};
enum { NSPECIAL = sizeof special_sizes / sizeof special_sizes[0] };

struct op {
    uint8_t kind;
    uint32_t len;    // data bytes (atomics: 8)
    uint64_t roff;   // offset in the server's WRITE/READ region, or of the counter
    uint64_t key;    // SEND/WRITE: data stream
    uint64_t arg0;   // FETCH_ADD: add; CMP_SWAP: compare
    uint64_t arg1;   // CMP_SWAP: swap
    uint64_t expect; // atomics: the counter's value before this operation
    int ctr;
};

struct plan {
    struct op ops[MAX_OPS];
    int n;
    uint64_t read_key;
    uint64_t ctr_init[NCTR], ctr_final[NCTR];
    uint64_t bytes[OP_KINDS];
    int count[OP_KINDS];
    uint64_t write_extent; // bytes of the WRITE region the round uses
};

// ---- data ------------------------------------------------------------------------------------

static inline uint8_t canary_at(uint64_t off) {
    return (uint8_t)(0xA5 ^ (off * 0x9Du) ^ (off >> 9));
}

static void fill_canary(uint8_t* p, uint64_t base_off, uint64_t len) {
    for (uint64_t i = 0; i < len; ++i)
        p[i] = canary_at(base_off + i);
}

// First offset where a and b differ in [0, len), or -1.
static int64_t first_diff(const uint8_t* a, const uint8_t* b, uint64_t len) {
    uint64_t i = 0;
    const uint64_t chunk = 4096;
    while (i < len) {
        uint64_t n = len - i < chunk ? len - i : chunk;
        if (memcmp(a + i, b + i, n) != 0) {
            for (uint64_t k = 0; k < n; ++k)
                if (a[i + k] != b[i + k]) return (int64_t)(i + k);
        }
        i += n;
    }
    return -1;
}

static uint64_t count_diff(const uint8_t* a, const uint8_t* b, uint64_t len) {
    uint64_t n = 0;
    for (uint64_t i = 0; i < len; ++i)
        n += a[i] != b[i];
    return n;
}

// ---- the plan of a round (the same on both sides) ----------------------------------------------

struct rng {
    uint64_t s;
};
static uint64_t rnd(struct rng* r) {
    return splitmix64(r->s += 0x632BE59BD9B4E019ull);
}
static uint64_t rnd_below(struct rng* r, uint64_t n) {
    return n ? rnd(r) % n : 0;
}

static uint32_t random_size(struct rng* r) {
    uint64_t c = rnd_below(r, 100);
    if (c < 20) return 1 + (uint32_t)rnd_below(r, 300);          // inline range and around it
    if (c < 45) return 301 + (uint32_t)rnd_below(r, 8192 - 300); // a few MTUs
    if (c < 75) return 8193 + (uint32_t)rnd_below(r, 256 * 1024);
    return 256 * 1024 + (uint32_t)rnd_below(r, 1024 * 1024 + 4097 - 256 * 1024);
}

static void add_atomic(struct plan* p, struct rng* r, uint64_t ctr[NCTR]) {
    struct op* o = &p->ops[p->n++];
    memset(o, 0, sizeof *o);
    o->ctr = (int)rnd_below(r, NCTR);
    o->roff = counter_off[o->ctr];
    o->len = 8;
    o->expect = ctr[o->ctr];
    if (rnd_below(r, 10) < 6) {
        o->kind = OP_FADD;
        // Small adds, and now and then a huge one (carries across all 64 bits, wraps).
        o->arg0 = rnd_below(r, 8) == 0 ? rnd(r) : 1 + rnd_below(r, 1000);
        ctr[o->ctr] += o->arg0;
    } else {
        o->kind = OP_CSWAP;
        int hit = rnd_below(r, 2) == 0;
        o->arg0 = hit ? ctr[o->ctr] : ctr[o->ctr] ^ (1ull << rnd_below(r, 64));
        o->arg1 = rnd(r);
        if (hit) ctr[o->ctr] = o->arg1;
    }
    p->bytes[o->kind] += 8;
    p->count[o->kind]++;
}

// Builds the plan of round `round` of type t: about `budget` data bytes (with `special`, every
// special size first), `n_atomics` atomics, WRITE offsets inside a region of `region` bytes.
static void make_plan(struct plan* p, uint64_t seed, uint32_t round, enum round_type t, int special,
                      uint64_t budget, uint32_t n_atomics, uint64_t region) {
    memset(p, 0, sizeof *p);
    struct rng r = {splitmix64(seed) ^ splitmix64(0x5EED0000ull + round)};
    p->read_key = rnd(&r);
    uint64_t ctr[NCTR];
    for (int i = 0; i < NCTR; ++i) {
        // Some counters start just below 2^64, so adds wrap.
        ctr[i] = rnd_below(&r, 4) == 0 ? ~0ull - rnd_below(&r, 5000) : rnd(&r);
        p->ctr_init[i] = ctr[i];
    }
    uint64_t data = 0, wcursor = 0;
    uint32_t atomics = 0;
    special = special && t != RT_ATOMIC && t != RT_MIXED;
    int next_special = 0;
    for (;;) {
        int want_data = t != RT_ATOMIC && (data < budget || (special && next_special < NSPECIAL));
        int want_atomic = (t == RT_ATOMIC || t == RT_MIXED) && atomics < n_atomics;
        if (!want_data && !want_atomic) break;
        if (p->n + 1 >= MAX_OPS) break;
        int atomic = want_atomic && (!want_data || rnd_below(&r, 100) < 15);
        if (atomic) {
            add_atomic(p, &r, ctr);
            ++atomics;
            continue;
        }
        enum op_kind k = t == RT_SEND    ? OP_SEND
                         : t == RT_WRITE ? OP_WRITE
                         : t == RT_READ  ? OP_READ
                                         : (enum op_kind)rnd_below(&r, 3);
        uint32_t len =
            special && next_special < NSPECIAL ? special_sizes[next_special++] : random_size(&r);
        if (k == OP_READ && len == 0) len = 1; // a 0-byte READ says nothing about data
        struct op* o = &p->ops[p->n++];
        memset(o, 0, sizeof *o);
        o->kind = (uint8_t)k;
        o->len = len;
        o->key = rnd(&r);
        if (k == OP_WRITE) {
            o->roff = wcursor + rnd_below(&r, 64);
            wcursor = o->roff + len;
            if (wcursor + 64 > region)
                die("plan: WRITE region of %" PRIu64 " bytes too small", region);
        } else if (k == OP_READ) {
            o->roff = rnd_below(&r, region - len);
        }
        data += len;
        p->bytes[k] += len;
        p->count[k]++;
    }
    p->write_extent = wcursor + 64;
    memcpy(p->ctr_final, ctr, sizeof ctr);
}

// ---- side channel messages ---------------------------------------------------------------------

enum msg_type { M_HELLO = 1, M_ROUND, M_READY, M_DONE, M_RESULT, M_END };

struct msg {
    uint32_t type, round, n_atomics, rtype, special, pad;
    uint64_t seed, budget;
    int32_t ok;
    char text[1024];
};

struct server_info {
    struct peer_info qp;
    uint64_t region; // size of each data region
    uint64_t write_addr, read_addr, atomic_addr;
    uint32_t write_rkey, read_rkey, atomic_rkey, pad;
};

static void send_msg(int fd, uint32_t type, uint32_t round) {
    struct msg m = {.type = type, .round = round, .ok = 1};
    write_all(fd, &m, sizeof m);
}

static void recv_msg(int fd, struct msg* m, uint32_t want) {
    read_all(fd, m, sizeof *m);
    if (m->type != want) die("side channel: expected message %u, got %u", want, m->type);
}

static uint64_t region_for(uint64_t budget) {
    return (budget > 8ull * MiB ? budget : 8ull * MiB) + 4ull * MiB;
}

static struct qp_params params_for(const struct dev* d) {
    struct qp_params p = {
        .timeout = 14,
        .retry_cnt = 7,
        .rnr_retry = 7,
        .min_rnr_timer = 12,
        .max_rd_atomic =
            (uint8_t)(d->attr.max_qp_init_rd_atom > 0 ? d->attr.max_qp_init_rd_atom : 1),
        .max_dest_rd_atomic = (uint8_t)(d->attr.max_qp_rd_atom > 0 ? d->attr.max_qp_rd_atom : 1),
        .mtu = IBV_MTU_1024,
    };
    return p;
}

// Splits len into k pieces (each >= 1 byte when len >= k).
static int split(struct rng* r, uint32_t len, uint32_t* pieces) {
    if (len == 0) return 0;
    int k = 1 + (int)rnd_below(r, MAX_SGE);
    if ((uint32_t)k > len) k = (int)len;
    uint32_t left = len;
    for (int i = 0; i < k - 1; ++i) {
        uint32_t max = left - (uint32_t)(k - 1 - i); // leave >= 1 byte for each later piece
        pieces[i] = 1 + (uint32_t)rnd_below(r, max);
        left -= pieces[i];
    }
    pieces[k - 1] = left;
    return k;
}

// ================================ server ========================================================

struct recv_layout { // where the receive of SEND op i scatters
    int nsge;
    uint64_t off[MAX_SGE];
    uint32_t cap[MAX_SGE];
};

static void server(int port, const char* port_file) {
    g_role = "server";
    struct dev d;
    dev_open(&d);
    int fd = tcp_serve(port, port_file);
    struct msg m;
    recv_msg(fd, &m, M_HELLO);
    uint64_t seed = m.seed, region = region_for(m.budget);
    note("seed %" PRIu64 ", data regions of %.1f MiB", seed, (double)region / MiB);

    struct ibv_pd* pd = ibv_alloc_pd(d.ctx);
    if (!pd) die("ibv_alloc_pd: %s", strerror(errno));
    uint8_t* recv_buf = xaligned(4096, region);
    uint8_t* recv_exp = xaligned(4096, region);
    uint8_t* write_buf = xaligned(4096, region);
    uint8_t* write_exp = xaligned(4096, region);
    uint8_t* read_buf = xaligned(4096, region);
    uint64_t* atom_buf = xaligned(4096, ATOMIC_REGION);
    uint8_t* atom_exp = xaligned(4096, ATOMIC_REGION);
    struct ibv_mr* recv_mr = reg_mr(pd, recv_buf, region, IBV_ACCESS_LOCAL_WRITE);
    struct ibv_mr* write_mr =
        reg_mr(pd, write_buf, region, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    struct ibv_mr* read_mr = reg_mr(pd, read_buf, region, IBV_ACCESS_REMOTE_READ);
    struct ibv_mr* atom_mr =
        reg_mr(pd, atom_buf, ATOMIC_REGION, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
    struct cqw scq, rcq;
    cqw_create(&scq, d.ctx, 64);
    cqw_create(&rcq, d.ctx, MAX_OPS + 24);
    struct ibv_qp* qp = create_rc_qp(pd, scq.cq, rcq.cq, 16, MAX_OPS + 16, MAX_SGE, 0);

    struct server_info si = {0};
    si.qp.qpn = qp->qp_num;
    si.qp.psn = 0x3A5C01;
    memcpy(si.qp.gid, d.gid.raw, 16);
    si.region = region;
    si.write_addr = (uintptr_t)write_buf;
    si.write_rkey = write_mr->rkey;
    si.read_addr = (uintptr_t)read_buf;
    si.read_rkey = read_mr->rkey;
    si.atomic_addr = (uintptr_t)atom_buf;
    si.atomic_rkey = atom_mr->rkey;
    write_all(fd, &si, sizeof si);
    struct peer_info client;
    read_all(fd, &client, sizeof client);
    struct qp_params qpp = params_for(&d);
    int rc = connect_qp(qp, &qpp, si.qp.psn, &client);
    if (rc) die("connecting the QP (to RTS): %s", strerror(rc));
    pass("QP %#x connected to client QP %#x (rq_psn %#x), max_dest_rd_atomic %u", qp->qp_num,
         client.qpn, client.psn, qpp.max_dest_rd_atomic);
    send_msg(fd, M_READY, 0);

    static struct plan p;
    static struct recv_layout lay[MAX_OPS];
    uint64_t verified = 0;
    unsigned rounds = 0;
    for (;;) {
        read_all(fd, &m, sizeof m);
        if (m.type == M_END) break;
        if (m.type != M_ROUND) die("side channel: expected ROUND or END, got %u", m.type);
        uint32_t round = m.round, rtype = m.rtype;
        if (m.rtype >= RT_COUNT) die("side channel: round type %u", m.rtype);
        make_plan(&p, seed, round, (enum round_type)m.rtype, (int)m.special, m.budget, m.n_atomics,
                  region);
        struct rng lr = {splitmix64(seed ^ 0x5E4E4ull) + round}; // our own layout choices

        // Receives for the SENDs, in plan order, scattering over 1-4 SGEs at odd offsets, the
        // last often larger than needed; the expected image gets the canary and the data.
        uint64_t rcur = 0;
        int nsend = 0;
        for (int i = 0; i < p.n; ++i) {
            const struct op* o = &p.ops[i];
            if (o->kind != OP_SEND) continue;
            struct recv_layout* L = &lay[i];
            uint32_t pieces[MAX_SGE];
            L->nsge = split(&lr, o->len, pieces);
            if (L->nsge == 0) { // a 0-byte SEND still needs a receive; give it 16 bytes
                L->nsge = 1;
                pieces[0] = 16;
            } else if (rnd_below(&lr, 2)) {
                pieces[L->nsge - 1] += 1 + (uint32_t)rnd_below(&lr, 100); // room to spare
            }
            for (int s = 0; s < L->nsge; ++s) {
                rcur += 1 + rnd_below(&lr, 15);
                L->off[s] = rcur;
                L->cap[s] = pieces[s];
                rcur += pieces[s];
            }
            if (rcur + 64 > region) die("receive region too small for round %u", round);
            ++nsend;
        }
        uint64_t rextent = rcur + 64;
        fill_canary(recv_buf, 0, rextent);
        memcpy(recv_exp, recv_buf, rextent);
        for (int i = 0; i < p.n; ++i) {
            const struct op* o = &p.ops[i];
            if (o->kind != OP_SEND) continue;
            const struct recv_layout* L = &lay[i];
            uint64_t done = 0;
            struct ibv_sge sge[MAX_SGE];
            for (int s = 0; s < L->nsge; ++s) {
                uint64_t n = o->len - done < L->cap[s] ? o->len - done : L->cap[s];
                gen(recv_exp + L->off[s], o->key, done, n);
                done += n;
                sge[s].addr = (uintptr_t)(recv_buf + L->off[s]);
                sge[s].length = L->cap[s];
                sge[s].lkey = recv_mr->lkey;
            }
            struct ibv_recv_wr wr = {.wr_id = (uint64_t)i, .sg_list = sge, .num_sge = L->nsge};
            struct ibv_recv_wr* bad = NULL;
            rc = ibv_post_recv(qp, &wr, &bad);
            if (rc) die("round %u: ibv_post_recv (op #%d): %s", round, i, strerror(rc));
        }
        // WRITE region: canary, and the image of what the WRITEs must leave.
        fill_canary(write_buf, 0, p.write_extent);
        memcpy(write_exp, write_buf, p.write_extent);
        for (int i = 0; i < p.n; ++i)
            if (p.ops[i].kind == OP_WRITE)
                gen(write_exp + p.ops[i].roff, p.ops[i].key, 0, p.ops[i].len);
        // READ region: the round's stream.
        if (p.count[OP_READ]) gen(read_buf, p.read_key, 0, region);
        // Counters among canary bytes.
        fill_canary((uint8_t*)atom_buf, 0, ATOMIC_REGION);
        for (int c = 0; c < NCTR; ++c)
            memcpy((uint8_t*)atom_buf + counter_off[c], &p.ctr_init[c], 8);
        memcpy(atom_exp, atom_buf, ATOMIC_REGION);
        for (int c = 0; c < NCTR; ++c)
            memcpy(atom_exp + counter_off[c], &p.ctr_final[c], 8);
        send_msg(fd, M_READY, round);

        recv_msg(fd, &m, M_DONE);
        if (!m.ok) die("round %u: the client failed (see its output)", round);

        // The receive completions, in order.
        char err[1024] = "";
        int got = 0;
        for (int i = 0; i < p.n && !err[0]; ++i) {
            const struct op* o = &p.ops[i];
            if (o->kind != OP_SEND) continue;
            struct ibv_wc wc;
            if (!cqw_poll(&rcq, &wc, 1, 30)) {
                snprintf(err, sizeof err,
                         "round %u: receive completion %d of %d (op #%d) did not come within 30 s",
                         round, got + 1, nsend, i);
                break;
            }
            ++got;
            if (wc.status != IBV_WC_SUCCESS || wc.wr_id != (uint64_t)i ||
                wc.opcode != IBV_WC_RECV || wc.byte_len != o->len)
                snprintf(
                    err, sizeof err,
                    "round %u: receive completion for SEND op #%d (len %u): expected wr_id %d, "
                    "IBV_WC_SUCCESS, opcode IBV_WC_RECV, byte_len %u; got wr_id %" PRIu64
                    ", %s, opcode %d, byte_len %u, vendor_err %#x",
                    round, i, o->len, i, o->len, wc.wr_id, wc_status_name(wc.status), wc.opcode,
                    wc.byte_len, wc.vendor_err);
        }
        if (!err[0]) {
            struct ibv_wc extra;
            if (ibv_poll_cq(rcq.cq, 1, &extra) == 1)
                snprintf(err, sizeof err,
                         "round %u: an extra receive completion (wr_id %" PRIu64
                         ", %s) after the %d expected",
                         round, extra.wr_id, wc_status_name(extra.status), nsend);
        }
        // The data where it landed, and the canary around it.
        int64_t at;
        if (!err[0] && (at = first_diff(recv_buf, recv_exp, rextent)) >= 0) {
            int which = -1, sge_i = -1;
            for (int i = 0; i < p.n && which < 0; ++i) {
                if (p.ops[i].kind != OP_SEND) continue;
                for (int s = 0; s < lay[i].nsge; ++s)
                    if ((uint64_t)at >= lay[i].off[s] &&
                        (uint64_t)at < lay[i].off[s] + lay[i].cap[s]) {
                        which = i;
                        sge_i = s;
                    }
            }
            if (which >= 0) {
                const struct recv_layout* L = &lay[which];
                uint64_t msg_off = 0;
                for (int s = 0; s < sge_i; ++s)
                    msg_off += L->cap[s];
                msg_off += (uint64_t)at - L->off[sge_i];
                snprintf(err, sizeof err,
                         "round %u: SEND op #%d (len %u, %d receive SGEs): byte %" PRIu64
                         " of the receive buffer (SGE %d, receive-region offset %" PRId64
                         ") is %#04x, expected %#04x (%s); %" PRIu64 " bytes differ in the region",
                         round, which, p.ops[which].len, L->nsge, msg_off, sge_i, at, recv_buf[at],
                         recv_exp[at],
                         msg_off < p.ops[which].len ? "message data"
                                                    : "spare room, must stay untouched",
                         count_diff(recv_buf, recv_exp, rextent));
            } else {
                snprintf(err, sizeof err,
                         "round %u: receive region offset %" PRId64
                         " (outside every receive SGE) is %#04x, expected canary %#04x",
                         round, at, recv_buf[at], recv_exp[at]);
            }
        }
        if (!err[0] && (at = first_diff(write_buf, write_exp, p.write_extent)) >= 0) {
            int which = -1;
            for (int i = 0; i < p.n; ++i)
                if (p.ops[i].kind == OP_WRITE && (uint64_t)at >= p.ops[i].roff &&
                    (uint64_t)at < p.ops[i].roff + p.ops[i].len)
                    which = i;
            if (which >= 0)
                snprintf(err, sizeof err,
                         "round %u: WRITE op #%d (len %u, remote offset %" PRIu64 "): byte %" PRIu64
                         " is %#04x, expected %#04x; %" PRIu64 " bytes differ in the region",
                         round, which, p.ops[which].len, p.ops[which].roff,
                         (uint64_t)at - p.ops[which].roff, write_buf[at], write_exp[at],
                         count_diff(write_buf, write_exp, p.write_extent));
            else
                snprintf(err, sizeof err,
                         "round %u: WRITE region offset %" PRId64
                         " (between WRITEs) is %#04x, expected canary %#04x",
                         round, at, write_buf[at], write_exp[at]);
        }
        if (!err[0] && (at = first_diff((uint8_t*)atom_buf, atom_exp, ATOMIC_REGION)) >= 0) {
            int c = -1;
            for (int i = 0; i < NCTR; ++i)
                if ((uint64_t)at >= counter_off[i] && (uint64_t)at < counter_off[i] + 8) c = i;
            if (c >= 0) {
                uint64_t v;
                memcpy(&v, (uint8_t*)atom_buf + counter_off[c], 8);
                snprintf(err, sizeof err,
                         "round %u: counter %d (offset %u) ends at %#018" PRIx64
                         ", expected %#018" PRIx64 " (started at %#018" PRIx64 ")",
                         round, c, counter_off[c], v, p.ctr_final[c], p.ctr_init[c]);
            } else {
                snprintf(err, sizeof err,
                         "round %u: atomic region offset %" PRId64
                         " (not a counter) is %#04x, expected canary %#04x",
                         round, at, ((uint8_t*)atom_buf)[at], atom_exp[at]);
            }
        }
        struct msg res = {.type = M_RESULT, .round = round, .ok = !err[0]};
        snprintf(res.text, sizeof res.text, "%s", err);
        write_all(fd, &res, sizeof res);
        if (err[0]) die("%s", err);
        uint64_t b = p.bytes[OP_SEND] + p.bytes[OP_WRITE];
        verified += b;
        ++rounds;
        pass("round %u (%s): %d receives and %d WRITEs verified (%.2f MiB), counters end as "
             "expected",
             round, round_name[rtype], nsend, p.count[OP_WRITE], (double)b / MiB);
    }
    pass("%u rounds, %.1f MiB of SEND/WRITE data verified byte for byte; %lu CQ events, %lu "
         "waits that ended without an event while a completion was there",
         rounds, (double)verified / MiB, rcq.events + scq.events,
         rcq.timeouts_with_work + scq.timeouts_with_work);
    if (ibv_destroy_qp(qp)) die("ibv_destroy_qp failed");
    cqw_destroy(&scq);
    cqw_destroy(&rcq);
    ibv_dereg_mr(recv_mr);
    ibv_dereg_mr(write_mr);
    ibv_dereg_mr(read_mr);
    ibv_dereg_mr(atom_mr);
    ibv_dealloc_pd(pd);
    ibv_close_device(d.ctx);
    close(fd);
}

// ================================ client ========================================================

struct client_opts {
    int port;
    uint64_t mib, seed, round_mib;
    uint32_t atomics, atomics_per_round, depth, start_round;
    double stall_s;    // no completion for this long: the transfer hangs
    const char* types; // round types to cycle through, letters of "SWRAM"
};

struct local_op { // the client's side of one op
    int nsge;
    struct ibv_sge sge[MAX_SGE];
    uint64_t off[MAX_SGE]; // in the client's src/dst/result region
    int inline_;
};

static void client(const struct client_opts* o) {
    g_role = "client";
    struct dev d;
    dev_open(&d);
    int fd = tcp_connect(o->port);
    uint64_t budget = o->round_mib * MiB;
    struct msg m = {.type = M_HELLO, .seed = o->seed, .budget = budget};
    write_all(fd, &m, sizeof m);
    struct server_info si;
    read_all(fd, &si, sizeof si);
    uint64_t region = si.region;

    struct ibv_pd* pd = ibv_alloc_pd(d.ctx);
    if (!pd) die("ibv_alloc_pd: %s", strerror(errno));
    uint8_t* src = xaligned(4096, region);
    uint8_t* dst = xaligned(4096, region);
    uint8_t* dst_exp = xaligned(4096, region);
    size_t res_len = MAX_OPS * 8 + 64;
    uint8_t* res = xaligned(4096, res_len);
    uint8_t* res_exp = xaligned(4096, res_len);
    struct ibv_mr* src_mr = reg_mr(pd, src, region, 0);
    struct ibv_mr* dst_mr = reg_mr(pd, dst, region, IBV_ACCESS_LOCAL_WRITE);
    struct ibv_mr* res_mr = reg_mr(pd, res, res_len, IBV_ACCESS_LOCAL_WRITE);
    struct cqw scq, rcq;
    uint32_t depth = o->depth;
    cqw_create(&scq, d.ctx, (int)depth + 16);
    cqw_create(&rcq, d.ctx, 16);
    struct ibv_qp* qp = create_rc_qp(pd, scq.cq, rcq.cq, depth, 4, MAX_SGE, 256);
    struct ibv_qp_attr qa;
    struct ibv_qp_init_attr qia;
    if (ibv_query_qp(qp, &qa, IBV_QP_CAP, &qia)) die("ibv_query_qp(IBV_QP_CAP) failed");
    uint32_t max_inline = qia.cap.max_inline_data;
    if (qia.cap.max_send_wr < depth) depth = qia.cap.max_send_wr;
    struct peer_info me = {.qpn = qp->qp_num, .psn = 0xFFFFFF - 2000};
    memcpy(me.gid, d.gid.raw, 16);
    write_all(fd, &me, sizeof me);
    struct qp_params qpp = params_for(&d);
    int rc = connect_qp(qp, &qpp, me.psn, &si.qp);
    if (rc) die("connecting the QP (to RTS): %s", strerror(rc));
    recv_msg(fd, &m, M_READY);
    pass("QP %#x connected to server QP %#x: MTU 1024, timeout 14, retry_cnt 7, rnr_retry 7, "
         "max_rd_atomic %u, max_inline_data %u, sq_psn %#x (wraps), %u WRs outstanding",
         qp->qp_num, si.qp.qpn, qpp.max_rd_atomic, max_inline, me.psn, depth);

    static struct plan p;
    static struct local_op lo[MAX_OPS];
    uint64_t total = o->mib * MiB, data_done = 0, bytes[OP_KINDS] = {0};
    uint32_t atomics_done = 0;
    double kind_time[RT_COUNT] = {0}, t_start = now_s(), xfer_time = 0;
    uint64_t kind_bytes[RT_COUNT] = {0}, kind_atomics[RT_COUNT] = {0};
    uint32_t round = o->start_round, ntypes = (uint32_t)strlen(o->types);
    for (;; ++round) {
        enum round_type t = (enum round_type)(strchr("SWRAM", o->types[round % ntypes]) - "SWRAM");
        int special = round < RT_COUNT; // rounds 0-4 also run every special size
        int has_data = strpbrk(o->types, "SWRM") != NULL,
            has_atomics = strpbrk(o->types, "AM") != NULL;
        if (round >= o->start_round + ntypes && (data_done >= total || !has_data) &&
            (atomics_done >= o->atomics || !has_atomics))
            break;
        uint32_t n_atomics = t == RT_ATOMIC ? o->atomics_per_round : t == RT_MIXED ? 64 : 0;
        make_plan(&p, o->seed, round, t, special, budget, n_atomics, region);
        struct rng lr = {splitmix64(o->seed ^ 0xC11E47ull) + round};

        // Lay out the local side: SEND/WRITE sources (filled) and READ destinations (canary),
        // 1-4 SGEs each at odd offsets; atomic results in 8-byte slots.
        uint64_t scur = 0, dcur = 0;
        int nres = 0;
        for (int i = 0; i < p.n; ++i) {
            const struct op* op = &p.ops[i];
            struct local_op* L = &lo[i];
            memset(L, 0, sizeof *L);
            if (op->kind == OP_FADD || op->kind == OP_CSWAP) {
                L->nsge = 1;
                L->off[0] = 8 + (uint64_t)nres++ * 8;
                L->sge[0] = (struct ibv_sge){(uintptr_t)(res + L->off[0]), 8, res_mr->lkey};
                continue;
            }
            uint32_t pieces[MAX_SGE];
            L->nsge = split(&lr, op->len, pieces);
            int is_read = op->kind == OP_READ;
            uint64_t* cur = is_read ? &dcur : &scur;
            uint64_t done = 0;
            for (int s = 0; s < L->nsge; ++s) {
                *cur += 1 + rnd_below(&lr, 15);
                L->off[s] = *cur;
                uint8_t* base = is_read ? dst : src;
                L->sge[s] = (struct ibv_sge){(uintptr_t)(base + *cur), pieces[s],
                                             is_read ? dst_mr->lkey : src_mr->lkey};
                if (!is_read) gen(src + *cur, op->key, done, pieces[s]);
                done += pieces[s];
                *cur += pieces[s];
            }
            if (scur + 64 > region || dcur + 64 > region)
                die("local region too small in round %u", round);
            L->inline_ = !is_read && op->len > 0 && op->len <= max_inline && rnd_below(&lr, 2);
        }
        uint64_t dextent = dcur + 64;
        fill_canary(dst, 0, dextent);
        memcpy(dst_exp, dst, dextent);
        uint64_t rextent = 8 + (uint64_t)nres * 8 + 8;
        fill_canary(res, 0, rextent);
        memcpy(res_exp, res, rextent);
        for (int i = 0; i < p.n; ++i) {
            const struct op* op = &p.ops[i];
            if (op->kind == OP_READ) {
                uint64_t done = 0;
                for (int s = 0; s < lo[i].nsge; ++s) {
                    gen(dst_exp + lo[i].off[s], p.read_key, op->roff + done, lo[i].sge[s].length);
                    done += lo[i].sge[s].length;
                }
            } else if (op->kind == OP_FADD || op->kind == OP_CSWAP) {
                memcpy(res_exp + lo[i].off[0], &op->expect, 8);
            }
        }

        struct msg rm = {.type = M_ROUND,
                         .round = round,
                         .n_atomics = n_atomics,
                         .rtype = t,
                         .special = (uint32_t)special,
                         .budget = budget};
        write_all(fd, &rm, sizeof rm);
        recv_msg(fd, &m, M_READY);

        // Post with up to `depth` outstanding; completions come back in order.
        double t0 = now_s();
        int posted = 0, completed = 0;
        struct ibv_wc wc[32];
        while (completed < p.n) {
            while (posted < p.n && posted - completed < (int)depth) {
                const struct op* op = &p.ops[posted];
                struct local_op* L = &lo[posted];
                struct ibv_send_wr wr = {.wr_id = (uint64_t)posted,
                                         .sg_list = L->nsge ? L->sge : NULL,
                                         .num_sge = L->nsge,
                                         .send_flags = IBV_SEND_SIGNALED};
                if (L->inline_) wr.send_flags |= IBV_SEND_INLINE;
                switch (op->kind) {
                case OP_SEND:
                    wr.opcode = IBV_WR_SEND;
                    break;
                case OP_WRITE:
                    wr.opcode = IBV_WR_RDMA_WRITE;
                    wr.wr.rdma.remote_addr = si.write_addr + op->roff;
                    wr.wr.rdma.rkey = si.write_rkey;
                    break;
                case OP_READ:
                    wr.opcode = IBV_WR_RDMA_READ;
                    wr.wr.rdma.remote_addr = si.read_addr + op->roff;
                    wr.wr.rdma.rkey = si.read_rkey;
                    break;
                case OP_FADD:
                    wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
                    wr.wr.atomic.remote_addr = si.atomic_addr + op->roff;
                    wr.wr.atomic.rkey = si.atomic_rkey;
                    wr.wr.atomic.compare_add = op->arg0;
                    break;
                case OP_CSWAP:
                    wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
                    wr.wr.atomic.remote_addr = si.atomic_addr + op->roff;
                    wr.wr.atomic.rkey = si.atomic_rkey;
                    wr.wr.atomic.compare_add = op->arg0;
                    wr.wr.atomic.swap = op->arg1;
                    break;
                }
                struct ibv_send_wr* bad = NULL;
                rc = ibv_post_send(qp, &wr, &bad);
                if (rc == ENOMEM)
                    die("round %u: ibv_post_send(%s op #%d) returned ENOMEM with %d WRs "
                        "outstanding on an SQ of max_send_wr %u: every earlier WR's completion "
                        "has been polled, so its slot must be free again",
                        round, kind_name[op->kind], posted, posted - completed,
                        qia.cap.max_send_wr);
                if (rc)
                    die("round %u: ibv_post_send(%s op #%d, len %u, %d SGEs%s): %s", round,
                        kind_name[op->kind], posted, op->len, L->nsge, L->inline_ ? ", inline" : "",
                        strerror(rc));
                ++posted;
            }
            int n = cqw_poll(&scq, wc, 32, o->stall_s);
            if (n == 0)
                die("round %u (%s): no send completion for %.0f s: %d of %d WRs completed, %d "
                    "posted; oldest outstanding: %s op #%d, len %u (replay: --start-round %u "
                    "--types %c)",
                    round, round_name[t], o->stall_s, completed, p.n, posted,
                    kind_name[p.ops[completed].kind], completed, p.ops[completed].len, round,
                    "SWRAM"[t]);
            for (int k = 0; k < n; ++k, ++completed) {
                const struct op* op = &p.ops[completed];
                static const enum ibv_wc_opcode want_opc[OP_KINDS] = {
                    IBV_WC_SEND, IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ, IBV_WC_FETCH_ADD,
                    IBV_WC_COMP_SWAP};
                if (wc[k].status != IBV_WC_SUCCESS || wc[k].wr_id != (uint64_t)completed ||
                    wc[k].opcode != want_opc[op->kind] || wc[k].qp_num != qp->qp_num)
                    die("round %u: completion of %s op #%d (len %u, %d SGEs%s): expected wr_id %d, "
                        "IBV_WC_SUCCESS, opcode %d, qp %#x; got wr_id %" PRIu64
                        ", %s, opcode %d, qp %#x, vendor_err %#x",
                        round, kind_name[op->kind], completed, op->len, lo[completed].nsge,
                        lo[completed].inline_ ? ", inline" : "", completed, want_opc[op->kind],
                        qp->qp_num, wc[k].wr_id, wc_status_name(wc[k].status), wc[k].opcode,
                        wc[k].qp_num, wc[k].vendor_err);
            }
        }
        double dt = now_s() - t0;
        struct ibv_wc extra;
        if (ibv_poll_cq(scq.cq, 1, &extra) == 1)
            die("round %u: an extra send completion (wr_id %" PRIu64 ", %s) after all %d", round,
                extra.wr_id, wc_status_name(extra.status), p.n);

        // READ data and atomic results where they landed.
        int64_t at = first_diff(dst, dst_exp, dextent);
        if (at >= 0) {
            int which = -1, sge_i = -1;
            for (int i = 0; i < p.n && which < 0; ++i) {
                if (p.ops[i].kind != OP_READ) continue;
                for (int s = 0; s < lo[i].nsge; ++s)
                    if ((uint64_t)at >= lo[i].off[s] &&
                        (uint64_t)at < lo[i].off[s] + lo[i].sge[s].length) {
                        which = i;
                        sge_i = s;
                    }
            }
            write_all(fd, &(struct msg){.type = M_DONE, .round = round, .ok = 0},
                      sizeof(struct msg));
            if (which >= 0) {
                uint64_t moff = 0;
                for (int s = 0; s < sge_i; ++s)
                    moff += lo[which].sge[s].length;
                moff += (uint64_t)at - lo[which].off[sge_i];
                die("round %u: READ op #%d (len %u, remote offset %" PRIu64
                    ", %d SGEs): byte %" PRIu64 " (SGE %d) is %#04x, expected %#04x; %" PRIu64
                    " bytes differ",
                    round, which, p.ops[which].len, p.ops[which].roff, lo[which].nsge, moff, sge_i,
                    dst[at], dst_exp[at], count_diff(dst, dst_exp, dextent));
            }
            die("round %u: READ destination offset %" PRId64
                " (outside every READ SGE) is %#04x, expected canary %#04x",
                round, at, dst[at], dst_exp[at]);
        }
        at = first_diff(res, res_exp, rextent);
        if (at >= 0) {
            write_all(fd, &(struct msg){.type = M_DONE, .round = round, .ok = 0},
                      sizeof(struct msg));
            for (int i = 0; i < p.n; ++i) {
                const struct op* op = &p.ops[i];
                if ((op->kind == OP_FADD || op->kind == OP_CSWAP) && (uint64_t)at >= lo[i].off[0] &&
                    (uint64_t)at < lo[i].off[0] + 8) {
                    uint64_t v;
                    memcpy(&v, res + lo[i].off[0], 8);
                    die("round %u: %s op #%d on counter %d: returned original %#018" PRIx64
                        ", expected %#018" PRIx64 " (operand %#" PRIx64 "%s%#" PRIx64 ")",
                        round, kind_name[op->kind], i, op->ctr, v, op->expect, op->arg0,
                        op->kind == OP_CSWAP ? ", swap " : "", op->kind == OP_CSWAP ? op->arg1 : 0);
                }
            }
            die("round %u: atomic result buffer offset %" PRId64
                " (between results) is %#04x, expected canary %#04x",
                round, at, res[at], res_exp[at]);
        }
        write_all(fd, &(struct msg){.type = M_DONE, .round = round, .ok = 1}, sizeof(struct msg));
        struct msg result;
        recv_msg(fd, &result, M_RESULT);
        if (!result.ok) die("the server found a mismatch: %s", result.text);

        uint64_t rb = 0;
        for (int k = 0; k < OP_KINDS; ++k) {
            bytes[k] += p.bytes[k];
            if (k <= OP_READ) rb += p.bytes[k];
        }
        data_done += rb;
        atomics_done += (uint32_t)(p.count[OP_FADD] + p.count[OP_CSWAP]);
        kind_time[t] += dt;
        kind_bytes[t] += rb;
        kind_atomics[t] += (uint64_t)(p.count[OP_FADD] + p.count[OP_CSWAP]);
        xfer_time += dt;
        pass("round %u (%s): %d WRs (SEND %d, WRITE %d, READ %d, atomics %d), %.2f MiB, all "
             "verified; %.3f s, %.1f MB/s",
             round, round_name[t], p.n, p.count[OP_SEND], p.count[OP_WRITE], p.count[OP_READ],
             p.count[OP_FADD] + p.count[OP_CSWAP], (double)rb / MiB, dt,
             dt > 0 ? (double)rb / dt / 1e6 : 0.0);
    }
    send_msg(fd, M_END, round);
    double wall = now_s() - t_start;
    printf("SUMMARY: %.1f MiB verified in %u rounds: SEND %.1f MiB, WRITE %.1f MiB, READ %.1f MiB; "
           "%u atomics (%" PRIu64 " fetch-add, %" PRIu64 " cmp-swap); "
           "SEND rounds %.1f MB/s, WRITE rounds %.1f MB/s, READ rounds %.1f MB/s, "
           "ATOMIC rounds %.0f ops/s, MIXED rounds %.1f MB/s; "
           "transfer %.2f s (%.1f MB/s), wall %.2f s\n",
           (double)data_done / MiB, round, (double)bytes[OP_SEND] / MiB,
           (double)bytes[OP_WRITE] / MiB, (double)bytes[OP_READ] / MiB, atomics_done,
           bytes[OP_FADD] / 8, bytes[OP_CSWAP] / 8,
           kind_time[RT_SEND] > 0 ? (double)kind_bytes[RT_SEND] / kind_time[RT_SEND] / 1e6 : 0.0,
           kind_time[RT_WRITE] > 0 ? (double)kind_bytes[RT_WRITE] / kind_time[RT_WRITE] / 1e6 : 0.0,
           kind_time[RT_READ] > 0 ? (double)kind_bytes[RT_READ] / kind_time[RT_READ] / 1e6 : 0.0,
           kind_time[RT_ATOMIC] > 0 ? (double)kind_atomics[RT_ATOMIC] / kind_time[RT_ATOMIC] : 0.0,
           kind_time[RT_MIXED] > 0 ? (double)kind_bytes[RT_MIXED] / kind_time[RT_MIXED] / 1e6 : 0.0,
           xfer_time, xfer_time > 0 ? (double)data_done / xfer_time / 1e6 : 0.0, wall);
    note("%lu CQ events, %lu waits ended without an event while a completion was there", scq.events,
         scq.timeouts_with_work);
    if (ibv_destroy_qp(qp)) die("ibv_destroy_qp failed");
    cqw_destroy(&scq);
    cqw_destroy(&rcq);
    ibv_dereg_mr(src_mr);
    ibv_dereg_mr(dst_mr);
    ibv_dereg_mr(res_mr);
    ibv_dealloc_pd(pd);
    ibv_close_device(d.ctx);
    close(fd);
    printf("PASS: %.1f MiB and %u atomics verified\n", (double)data_done / MiB, atomics_done);
}

static void usage(void) {
    fprintf(
        stderr,
        "usage: rc_integrity --server --port P [--port-file F]\n"
        "       rc_integrity --client --port P [--mib N (256)] [--seed S (1)]\n"
        "                    [--atomics N (2048)] [--atomics-per-round N (512)]\n"
        "                    [--depth D (32)] [--round-mib M (8)]\n"
        "                    [--types LETTERS (SWRAM): round types to cycle through:\n"
        "                     SEND, WRITE, READ, ATOMIC, MIXED]\n"
        "                    [--start-round R (0): the first round's number, to replay one]\n"
        "                    [--stall-timeout S (60): fail when no completion comes for S s]\n");
    exit(2);
}

int main(int argc, char** argv) {
    static const struct option opts[] = {
        {"server", no_argument, 0, 'S'},
        {"client", no_argument, 0, 'C'},
        {"port", required_argument, 0, 'p'},
        {"port-file", required_argument, 0, 'f'},
        {"mib", required_argument, 0, 'm'},
        {"seed", required_argument, 0, 's'},
        {"atomics", required_argument, 0, 'a'},
        {"atomics-per-round", required_argument, 0, 'A'},
        {"depth", required_argument, 0, 'd'},
        {"round-mib", required_argument, 0, 'r'},
        {"start-round", required_argument, 0, 'R'},
        {"types", required_argument, 0, 'T'},
        {"stall-timeout", required_argument, 0, 't'},
        {0, 0, 0, 0},
    };
    int is_server = 0, is_client = 0;
    const char* port_file = NULL;
    struct client_opts co = {.port = -1,
                             .mib = 256,
                             .seed = 1,
                             .round_mib = 8,
                             .atomics = 2048,
                             .atomics_per_round = 512,
                             .depth = 32,
                             .stall_s = 60,
                             .types = "SWRAM"};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'S':
            is_server = 1;
            break;
        case 'C':
            is_client = 1;
            break;
        case 'p':
            co.port = atoi(optarg);
            break;
        case 'f':
            port_file = optarg;
            break;
        case 'm':
            co.mib = strtoull(optarg, NULL, 0);
            break;
        case 's':
            co.seed = strtoull(optarg, NULL, 0);
            break;
        case 'a':
            co.atomics = (uint32_t)strtoul(optarg, NULL, 0);
            break;
        case 'A':
            co.atomics_per_round = (uint32_t)strtoul(optarg, NULL, 0);
            break;
        case 'd':
            co.depth = (uint32_t)strtoul(optarg, NULL, 0);
            break;
        case 'r':
            co.round_mib = strtoull(optarg, NULL, 0);
            break;
        case 'R':
            co.start_round = (uint32_t)strtoul(optarg, NULL, 0);
            break;
        case 'T':
            co.types = optarg;
            break;
        case 't':
            co.stall_s = strtod(optarg, NULL);
            break;
        default:
            usage();
        }
    }
    if (is_server == is_client || co.port < 0 || optind != argc || co.depth < 1 ||
        co.round_mib < 1 || co.atomics_per_round < 1 || co.atomics_per_round > MAX_OPS - 100 ||
        !co.types[0] || strspn(co.types, "SWRAM") != strlen(co.types))
        usage();
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (is_server)
        server(co.port, port_file);
    else
        client(&co);
    return 0;
}
