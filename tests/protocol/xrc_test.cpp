// XRC: domains, XRC SRQs and the two XRC QP types. The initiator (XRC_SEND) is RC's requester
// with XRC opcodes and the target's SRQ number in every request's XRCETH; the target
// (XRC_RECV) is RC's responder that takes receives, PD and CQ from the XRC SRQ each request
// names, refusing (NAK invalid request) an SRQ that is unknown or of another domain.
#include "protocol_rig.h"

#include <fcntl.h>
#include <spdlog/sinks/null_sink.h>

#include <cstdio>
#include <string>

using namespace proto;

namespace {

constexpr uint32_t kE = 0x500; // the target's first expected PSN (QpOptions::rq_psn)

uint8_t xrc(uint8_t op) {
    return wire::opcode::make(wire::Transport::XRC, op);
}

// A second session on the rig's NIC (another process's context on the same host).
struct Session {
    explicit Session(Rig& rig)
        : log("session2", std::make_shared<spdlog::sinks::null_sink_mt>()),
          ctx{rig.nic, objects, log, "session#2", ::getpid(), {}} {
        bind_memory(objects, ::getpid());
        objects.async_fd = kAsyncFd;
    }
    static constexpr int kAsyncFd = 43;
    nicsim::SessionObjects objects;
    spdlog::logger log;
    nicsim::VerbContext ctx;
};

uint32_t open_xrcd(nicsim::VerbContext& ctx, int fd = -1, int oflags = 0, int* err = nullptr) {
    ipc::HandleReply r{};
    int e = nicsim::open_xrcd(ctx, {fd, oflags}, r);
    if (err)
        *err = e;
    else
        REQUIRE(e == 0);
    return r.handle;
}

nicsim::Srq& create_xrc_srq(Rig& rig, uint32_t xrcd, const Cq& cq, uint32_t max_wr = 16) {
    ipc::CreateSrqExReq q{};
    q.pd = rig.pd;
    q.srq_type = IBV_SRQT_XRC;
    q.xrcd = xrcd;
    q.cq = cq.handle;
    q.attr = {max_wr, 2, 0};
    ipc::CreateSrqReply r{};
    REQUIRE(nicsim::create_srq_ex(rig.ctx, q, r) == 0);
    rig.ctx.pass_fds.clear();
    nicsim::Srq& srq = *rig.objects.srqs.get(r.handle);
    CHECK(r.srqn == srq.srqn);
    CHECK(srq.srqn != 0);
    return srq;
}

void modify(nicsim::VerbContext& ctx, Qp& qp, ipc::ModifyQpReq m) {
    m.qp = qp.handle;
    ipc::Empty e;
    REQUIRE(nicsim::modify_qp(ctx, m, e) == 0);
}

void to_init(nicsim::VerbContext& ctx, Qp& qp, uint32_t access) {
    ipc::ModifyQpReq m{};
    m.attr.qp_state = IBV_QPS_INIT;
    m.attr.port_num = 1;
    m.attr.qp_access_flags = access;
    m.mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
    modify(ctx, qp, m);
}

ipc::ModifyQpReq rtr(const QpOptions& o, uint32_t mask) {
    ipc::ModifyQpReq m{};
    m.attr.qp_state = IBV_QPS_RTR;
    m.attr.path_mtu = o.mtu;
    m.attr.dest_qp_num = kPeerQpn;
    m.attr.rq_psn = o.rq_psn;
    m.attr.max_dest_rd_atomic = o.max_dest_rd_atomic;
    m.attr.min_rnr_timer = o.min_rnr_timer;
    m.attr.ah_attr.is_global = 1;
    m.attr.ah_attr.port_num = 1;
    m.attr.ah_attr.grh.hop_limit = 64;
    m.attr.ah_attr.grh.dgid.raw[10] = 0xff;
    m.attr.ah_attr.grh.dgid.raw[11] = 0xff;
    ::inet_pton(AF_INET, kPeerAddress, &m.attr.ah_attr.grh.dgid.raw[12]);
    m.mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | mask;
    return m;
}

// An XRC_RECV QP in `xrcd`, taken to RTS with the masks ibv_xsrq_pingpong gives.
Qp& create_xrc_recv(Rig& rig, nicsim::VerbContext& ctx, uint32_t xrcd, const QpOptions& o = {}) {
    ipc::CreateQpReq q{};
    q.qp_type = IBV_QPT_XRC_RECV;
    q.xrcd = xrcd;
    ipc::CreateQpReply r{};
    REQUIRE(nicsim::create_qp(ctx, q, r) == 0);
    ctx.pass_fds.clear();
    CHECK(r.rq_entries == 0);
    Qp& qp = *ctx.objects.qps.get(r.handle);
    CHECK(qp.pd == nullptr);
    CHECK(qp.send_cq == nullptr);
    CHECK(qp.recv_cq == nullptr);
    to_init(ctx, qp, o.access);
    modify(ctx, qp, rtr(o, IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER));
    ipc::ModifyQpReq m{};
    m.attr.qp_state = IBV_QPS_RTS;
    m.attr.timeout = o.timeout;
    m.attr.sq_psn = o.sq_psn;
    m.mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN;
    modify(ctx, qp, m);
    (void)rig;
    return qp;
}

// An XRC_SEND QP of the rig's PD with its own send CQ, at RTS.
Qp& create_xrc_send(Rig& rig, const QpOptions& o = {}) {
    Cq& scq = rig.create_cq(o.cqe);
    ipc::CreateQpReq q{};
    q.pd = rig.pd;
    q.send_cq = scq.handle;
    q.recv_cq = 9999; // ignored: an XRC_SEND QP has no receive side
    q.qp_type = IBV_QPT_XRC_SEND;
    q.cap.max_send_wr = o.max_send_wr;
    q.cap.max_send_sge = o.max_sge;
    q.cap.max_recv_wr = 8; // ignored too
    ipc::CreateQpReply r{};
    REQUIRE(nicsim::create_qp(rig.ctx, q, r) == 0);
    rig.ctx.pass_fds.clear();
    CHECK(r.rq_entries == 0);
    CHECK(r.cap.max_recv_wr == 0);
    Qp& qp = *rig.objects.qps.get(r.handle);
    CHECK(qp.recv_cq == nullptr);
    to_init(rig.ctx, qp, 0);
    modify(rig.ctx, qp, rtr(o, 0));
    rig.to_rts(qp, o);
    return qp;
}

// A request to the target naming XRC SRQ `srqn`.
wire::Headers xrc_request(uint8_t op, uint32_t psn, uint32_t srqn, bool ack_req = true) {
    wire::Headers h;
    h.opcode = xrc(op);
    h.psn = psn & wire::kPsnMask;
    h.ack_req = ack_req;
    h.xrc_srqn = srqn;
    return h;
}

// The one packet sent since the last take(): an XRC ACK/NAK with this syndrome.
void check_xrc_ack(Rig& rig, uint32_t psn, uint8_t syndrome) {
    auto sent = rig.env.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].h.opcode == xrc(wire::opcode::kAcknowledge));
    CHECK(sent[0].h.psn == psn);
    CHECK(sent[0].h.aeth.syndrome == syndrome);
    CHECK(sent[0].h.dest_qpn == kPeerQpn);
}

// The target refused a request: NAK invalid request, QP_REQ_ERR, ERR.
void check_refused(Rig& rig, Qp& qp, uint32_t psn) {
    check_xrc_ack(rig, psn, wire::aeth_nak(wire::NakCode::InvalidRequest));
    CHECK(qp.attr.qp_state == IBV_QPS_ERR);
    CHECK(qp.counters.xrc_srq_errors == 1);
    REQUIRE(rig.env.events.size() == 1);
    CHECK(rig.env.events[0].type == IBV_EVENT_QP_REQ_ERR);
    CHECK(rig.env.events[0].handle == qp.handle);
}

} // namespace

TEST_CASE("xrc: a SEND lands in the XRC SRQ its XRCETH names and completes on the SRQ's CQ",
          "[xrc]") {
    Rig rig;
    uint32_t xrcd = open_xrcd(rig.ctx);
    Cq& cq = rig.create_cq();
    nicsim::Srq& srq = create_xrc_srq(rig, xrcd, cq);
    Qp& qp = create_xrc_recv(rig, rig.ctx, xrcd);
    std::vector<uint8_t> buf(4096, 0xEE);
    Mr& mr = rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    rig.post_srq_recv(srq, 21, {sge(buf.data(), 3000, mr)});
    rig.post_srq_recv(srq, 22, {sge(&buf[3000], 1096, mr)});

    SECTION("SEND_ONLY with immediate") {
        auto data = pattern(100, 5);
        wire::Headers h = xrc_request(wire::opcode::kSendOnlyImm, kE, srq.srqn);
        h.imm = htonl(0x1234);
        rig.deliver(qp, h, data.data(), data.size());
        auto wcs = expect_wcs(cq, {{.wr_id = 21, .opcode = IBV_WC_RECV, .byte_len = 100}});
        CHECK(wcs[0].qp_num == qp.qpn); // the XRC_RECV QP's number, as mlx5 reports it
        CHECK(wcs[0].src_qp == kPeerQpn);
        CHECK((wcs[0].wc_flags & IBV_WC_WITH_IMM));
        CHECK(wcs[0].imm_data == htonl(0x1234));
        CHECK(bytes_of(buf, 0, 100) == data);
        check_xrc_ack(rig, kE, wire::aeth_ack());
    }
    SECTION("FIRST, MIDDLE, LAST at MTU 1024, the SRQ named in each") {
        auto data = pattern(2500, 6);
        rig.deliver(qp, xrc_request(wire::opcode::kSendFirst, kE, srq.srqn, false), data.data(),
                    1024);
        rig.deliver(qp, xrc_request(wire::opcode::kSendMiddle, kE + 1, srq.srqn, false),
                    &data[1024], 1024);
        CHECK(Rig::poll(cq).empty());
        rig.deliver(qp, xrc_request(wire::opcode::kSendLast, kE + 2, srq.srqn), &data[2048], 452);
        expect_wcs(cq, {{.byte_len = 2500}});
        CHECK(bytes_of(buf, 0, 2500) == data);
        check_xrc_ack(rig, kE + 2, wire::aeth_ack());
    }
    SECTION("a MIDDLE that names another SRQ of the domain is refused") {
        nicsim::Srq& other = create_xrc_srq(rig, xrcd, cq);
        auto data = pattern(2048, 7);
        rig.deliver(qp, xrc_request(wire::opcode::kSendFirst, kE, srq.srqn, false), data.data(),
                    1024);
        rig.deliver(qp, xrc_request(wire::opcode::kSendLast, kE + 1, other.srqn), &data[1024],
                    1024);
        check_refused(rig, qp, kE + 1);
        // The receive in progress completes in error on its own SRQ's CQ.
        auto wcs = expect_wcs(cq, {{.wr_id = 21, .status = IBV_WC_REM_INV_REQ_ERR}});
        CHECK(wcs[0].qp_num == qp.qpn);
    }
    SECTION("no receive posted in the SRQ: RNR NAK") {
        auto data = pattern(10);
        rig.deliver(qp, xrc_request(wire::opcode::kSendOnly, kE, srq.srqn), data.data(), 10);
        rig.deliver(qp, xrc_request(wire::opcode::kSendOnly, kE + 1, srq.srqn), data.data(), 10);
        rig.env.take();
        rig.deliver(qp, xrc_request(wire::opcode::kSendOnly, kE + 2, srq.srqn), data.data(), 10);
        check_xrc_ack(rig, kE + 2, wire::aeth_rnr_nak(12));
        CHECK(qp.attr.qp_state == IBV_QPS_RTS);
    }
}

TEST_CASE("xrc: requests for an unknown SRQ, a basic SRQ or another domain's are refused",
          "[xrc]") {
    Rig rig;
    uint32_t xrcd = open_xrcd(rig.ctx);
    uint32_t xrcd2 = open_xrcd(rig.ctx); // fd -1: a domain of its own
    Cq& cq = rig.create_cq();
    nicsim::Srq& srq = create_xrc_srq(rig, xrcd, cq);
    nicsim::Srq& foreign = create_xrc_srq(rig, xrcd2, cq);
    nicsim::Srq& basic = rig.create_srq(8, 1, 0);
    rig.ctx.pass_fds.clear();
    Qp& qp = create_xrc_recv(rig, rig.ctx, xrcd);
    std::vector<uint8_t> buf(64);
    Mr& mr = rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    for (nicsim::Srq* s : {&srq, &foreign, &basic})
        rig.post_srq_recv(*s, 1, {sge(buf.data(), buf.size(), mr)});
    auto data = pattern(16);

    uint32_t srqn = 0;
    SECTION("unknown") {
        srqn = 0xABCDE;
    }
    SECTION("zero") {
        srqn = 0;
    }
    SECTION("another domain's") {
        srqn = foreign.srqn;
    }
    SECTION("a basic SRQ") {
        srqn = basic.srqn;
    }
    rig.deliver(qp, xrc_request(wire::opcode::kSendOnly, kE, srqn), data.data(), data.size());
    check_refused(rig, qp, kE);
    CHECK(Rig::poll(cq).empty());
    for (nicsim::Srq* s : {&srq, &foreign, &basic})
        CHECK(s->ring.header->consumer.load() == 0); // no receive taken
}

TEST_CASE("xrc: RDMA WRITE, READ and atomics are checked against the XRC SRQ's PD", "[xrc]") {
    Rig rig;
    uint32_t xrcd = open_xrcd(rig.ctx);
    Cq& cq = rig.create_cq();
    nicsim::Srq& srq = create_xrc_srq(rig, xrcd, cq);
    Qp& qp = create_xrc_recv(rig, rig.ctx, xrcd);
    alignas(8) std::vector<uint8_t> mem(4096, 0);
    Mr& mr = rig.reg_mr(mem.data(), mem.size(),
                        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                            IBV_ACCESS_REMOTE_ATOMIC);
    const uint64_t va = reinterpret_cast<uint64_t>(mem.data());

    SECTION("WRITE_ONLY into the SRQ's PD") {
        auto data = pattern(64, 9);
        wire::Headers h = xrc_request(wire::opcode::kWriteOnly, kE, srq.srqn);
        h.reth = {va + 128, mr.rkey, 64};
        rig.deliver(qp, h, data.data(), data.size());
        CHECK(bytes_of(mem, 128, 64) == data);
        check_xrc_ack(rig, kE, wire::aeth_ack());
    }
    SECTION("READ answered with XRC READ responses") {
        auto data = pattern(1500, 4);
        std::copy(data.begin(), data.end(), mem.begin());
        wire::Headers h = xrc_request(wire::opcode::kReadRequest, kE, srq.srqn);
        h.reth = {va, mr.rkey, 1500};
        rig.deliver(qp, h);
        auto sent = rig.env.take();
        REQUIRE(sent.size() == 2);
        CHECK(sent[0].h.opcode == xrc(wire::opcode::kReadResponseFirst));
        CHECK(sent[1].h.opcode == xrc(wire::opcode::kReadResponseLast));
        CHECK(sent[0].payload == bytes_of(data, 0, 1024));
        CHECK(sent[1].payload == bytes_of(data, 1024, 476));
    }
    SECTION("FETCH_ADD answered with an XRC atomic ACK") {
        uint64_t v = 40;
        std::memcpy(&mem[8], &v, 8);
        wire::Headers h = xrc_request(wire::opcode::kFetchAdd, kE, srq.srqn);
        h.atomic_eth = {va + 8, mr.rkey, 2, 0};
        rig.deliver(qp, h);
        auto sent = rig.env.take();
        REQUIRE(sent.size() == 1);
        CHECK(sent[0].h.opcode == xrc(wire::opcode::kAtomicAcknowledge));
        CHECK(sent[0].h.atomic_ack == 40);
        std::memcpy(&v, &mem[8], 8);
        CHECK(v == 42);
    }
    SECTION("an MR of another PD is a remote access error") {
        ipc::HandleReply pd2{};
        REQUIRE(nicsim::alloc_pd(rig.ctx, ipc::Empty{}, pd2) == 0);
        ipc::RegMrReq q{};
        q.pd = pd2.handle;
        q.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
        q.addr = va;
        q.length = mem.size();
        q.iova = va;
        ipc::RegMrReply r{};
        REQUIRE(nicsim::reg_mr(rig.ctx, q, r) == 0);
        auto data = pattern(8);
        wire::Headers h = xrc_request(wire::opcode::kWriteOnly, kE, srq.srqn);
        h.reth = {va, r.rkey, 8};
        rig.deliver(qp, h, data.data(), data.size());
        check_xrc_ack(rig, kE, wire::aeth_nak(wire::NakCode::RemoteAccessError));
        CHECK(qp.attr.qp_state == IBV_QPS_ERR);
    }
}

TEST_CASE("xrc: the XRC_SEND requester names the remote SRQ in every request's XRCETH", "[xrc]") {
    Rig rig;
    QpOptions o;
    Qp& qp = create_xrc_send(rig, o);
    auto data = pattern(2100);
    Mr& mr = rig.reg_mr(data.data(), data.size(), IBV_ACCESS_LOCAL_WRITE);

    ipc::SendWqe w = wqe(1, IBV_WR_SEND);
    w.xrc_remote_srqn = 0x00C0DE;
    rig.post_send(qp, w, {sge(data.data(), data.size(), mr)});
    auto sent = rig.env.take();
    REQUIRE(sent.size() == 3);
    const uint8_t ops[] = {xrc(wire::opcode::kSendFirst), xrc(wire::opcode::kSendMiddle),
                           xrc(wire::opcode::kSendLast)};
    for (size_t i = 0; i < 3; ++i) {
        INFO("packet " << i);
        CHECK(sent[i].h.opcode == ops[i]);
        CHECK(sent[i].h.xrc_srqn == 0x00C0DE);
        CHECK(sent[i].h.psn == psn(o.sq_psn, i));
        CHECK(sent[i].bytes[12] == 0x00); // XRCETH: reserved byte, then the SRQ number
        CHECK(sent[i].bytes[13] == 0x00);
        CHECK(sent[i].bytes[14] == 0xC0);
        CHECK(sent[i].bytes[15] == 0xDE);
    }

    SECTION("an XRC ACK completes it") {
        wire::Headers a = ack(psn(o.sq_psn, 2));
        a.opcode = xrc(wire::opcode::kAcknowledge);
        rig.deliver(qp, a);
        expect_wcs(*qp.send_cq, {{.opcode = IBV_WC_SEND}});
    }
    SECTION("a NAK invalid request (unknown SRQ at the target) completes with REM_INV_REQ_ERR") {
        wire::Headers a = ack(psn(o.sq_psn, 2), wire::aeth_nak(wire::NakCode::InvalidRequest));
        a.opcode = xrc(wire::opcode::kAcknowledge);
        rig.deliver(qp, a);
        auto wcs = expect_wcs(*qp.send_cq, {{.status = IBV_WC_REM_INV_REQ_ERR}});
        CHECK(qp.attr.qp_state == IBV_QPS_ERR);
    }
}

TEST_CASE("xrc: READ and atomics from an XRC_SEND QP carry the XRCETH before RETH/AtomicETH",
          "[xrc]") {
    Rig rig;
    QpOptions o;
    Qp& qp = create_xrc_send(rig, o);
    std::vector<uint8_t> buf(64);
    Mr& mr = rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    ipc::SendWqe r = rdma_wqe(1, IBV_WR_RDMA_READ, 0x1000, 0x77);
    r.xrc_remote_srqn = 5;
    ipc::SendWqe f = rdma_wqe(2, IBV_WR_ATOMIC_FETCH_AND_ADD, 0x2000, 0x78);
    f.compare_add = 3;
    f.xrc_remote_srqn = 6;
    rig.post_send(qp, r, {sge(buf.data(), 32, mr)});
    rig.post_send(qp, f, {sge(&buf[32], 8, mr)});
    auto sent = rig.env.take();
    REQUIRE(sent.size() == 2);
    CHECK(sent[0].h.opcode == xrc(wire::opcode::kReadRequest));
    CHECK(sent[0].h.xrc_srqn == 5);
    CHECK(sent[0].h.reth.rkey == 0x77);
    CHECK(sent[1].h.opcode == xrc(wire::opcode::kFetchAdd));
    CHECK(sent[1].h.xrc_srqn == 6);
    CHECK(sent[1].h.atomic_eth.swap_add == 3);

    // The responses come back as XRC responses (no XRCETH).
    auto data = pattern(32);
    wire::Headers rr = read_response(wire::opcode::kReadResponseOnly, psn(o.sq_psn, 0));
    rr.opcode = xrc(wire::opcode::kReadResponseOnly);
    rig.deliver(qp, rr, data.data(), data.size());
    wire::Headers aa = read_response(wire::opcode::kAtomicAcknowledge, psn(o.sq_psn, 1));
    aa.opcode = xrc(wire::opcode::kAtomicAcknowledge);
    aa.atomic_ack = 99;
    rig.deliver(qp, aa);
    expect_wcs(*qp.send_cq, {{}, {}});
    CHECK(bytes_of(buf, 0, 32) == data);
    uint64_t v;
    std::memcpy(&v, &buf[32], 8);
    CHECK(v == 99);
}

TEST_CASE("xrc: domains named by a file are shared across sessions, others are private", "[xrc]") {
    Rig rig;
    Session other(rig);
    char path[] = "/tmp/rdmaemu-xrcd-XXXXXX";
    int fd = ::mkstemp(path);
    REQUIRE(fd >= 0);
    int err = 0;

    SECTION("without O_CREAT a file that names no domain is EAGAIN") {
        open_xrcd(rig.ctx, fd, 0, &err);
        CHECK(err == EAGAIN);
    }
    SECTION("a descriptor the process does not have is EBADF") {
        open_xrcd(rig.ctx, 1000000, O_CREAT, &err);
        CHECK(err == EBADF);
    }
    SECTION("O_CREAT | O_EXCL on a file that names one is EINVAL") {
        open_xrcd(rig.ctx, fd, O_CREAT);
        open_xrcd(other.ctx, fd, O_CREAT | O_EXCL, &err);
        CHECK(err == EINVAL);
    }
    SECTION("one domain through both sessions: the other's XRC_RECV QP takes our SRQ") {
        uint32_t mine = open_xrcd(rig.ctx, fd, O_CREAT);
        uint32_t theirs = open_xrcd(other.ctx, fd, 0); // found: O_CREAT not needed
        CHECK(rig.objects.xrcds.get(mine)->xrcd == other.objects.xrcds.get(theirs)->xrcd);
        Cq& cq = rig.create_cq();
        nicsim::Srq& srq = create_xrc_srq(rig, mine, cq);
        Qp& qp = create_xrc_recv(rig, other.ctx, theirs);
        std::vector<uint8_t> buf(64);
        Mr& mr = rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
        rig.post_srq_recv(srq, 5, {sge(buf.data(), buf.size(), mr)});
        auto data = pattern(40);
        rig.deliver(qp, xrc_request(wire::opcode::kSendOnly, kE, srq.srqn), data.data(), 40);
        auto wcs = Rig::poll(cq);
        REQUIRE(wcs.size() == 1);
        CHECK(wcs[0].qp_num == qp.qpn);
        CHECK(bytes_of(buf, 0, 40) == data);

        // A handle with users cannot be closed; the domain outlives either handle.
        ipc::Empty e;
        CHECK(nicsim::close_xrcd(other.ctx, {theirs, 0}, e) == EBUSY);
        CHECK(nicsim::close_xrcd(rig.ctx, {mine, 0}, e) == EBUSY);
        free_session_objects(rig.nic, other.objects); // the other process exits
        CHECK(other.objects.count() == 0);
        CHECK(rig.objects.xrcds.get(mine)->xrcd->opens == 1);
        REQUIRE(nicsim::destroy_srq(rig.ctx, {srq.handle, 0}, e) == 0);
        CHECK(nicsim::close_xrcd(rig.ctx, {mine, 0}, e) == 0);
        // Gone with its last handle: the file names no domain any more.
        open_xrcd(rig.ctx, fd, 0, &err);
        CHECK(err == EAGAIN);
    }
    free_session_objects(rig.nic, other.objects);
    ::close(fd);
    ::unlink(path);
}

TEST_CASE("xrc: an ibv_open_qp handle keeps the XRC_RECV QP after its creator lets go", "[xrc]") {
    Rig rig;
    Session other(rig);
    char path[] = "/tmp/rdmaemu-xrcd-XXXXXX";
    int fd = ::mkstemp(path);
    REQUIRE(fd >= 0);
    uint32_t mine = open_xrcd(rig.ctx, fd, O_CREAT);
    uint32_t theirs = open_xrcd(other.ctx, fd, O_CREAT);
    uint32_t private_domain = open_xrcd(other.ctx);
    Cq& cq = rig.create_cq();
    nicsim::Srq& srq = create_xrc_srq(rig, mine, cq);
    Qp& qp = create_xrc_recv(rig, rig.ctx, mine);
    const uint32_t qpn = qp.qpn;

    ipc::OpenQpReply r{};
    CHECK(nicsim::open_qp(other.ctx, {private_domain, qpn, IBV_QPT_XRC_RECV, 0}, r) == EINVAL);
    CHECK(nicsim::open_qp(other.ctx, {theirs, qpn, IBV_QPT_RC, 0}, r) == EINVAL);
    CHECK(nicsim::open_qp(other.ctx, {theirs, 0x777777, IBV_QPT_XRC_RECV, 0}, r) == EINVAL);
    REQUIRE(nicsim::open_qp(other.ctx, {theirs, qpn, IBV_QPT_XRC_RECV, 0}, r) == 0);
    CHECK(r.state == IBV_QPS_RTS);
    Qp* opened = nicsim::find_qp(other.objects, r.handle);
    CHECK(opened == &qp);

    // The creator destroys its handle: the QP goes on serving the opener's traffic.
    ipc::Empty e;
    REQUIRE(nicsim::destroy_qp(rig.ctx, {qp.handle, 0}, e) == 0);
    Qp* live = rig.nic.qp_by_qpn(qpn);
    REQUIRE(live != nullptr);
    std::vector<uint8_t> buf(64);
    Mr& mr = rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    rig.post_srq_recv(srq, 8, {sge(buf.data(), buf.size(), mr)});
    auto data = pattern(12);
    rig.deliver(*live, xrc_request(wire::opcode::kSendOnly, kE, srq.srqn), data.data(), 12);
    REQUIRE(Rig::poll(cq).size() == 1);

    // Its errors reach the opener (the creator's session no longer has it).
    rig.deliver(*live, xrc_request(wire::opcode::kSendOnly, kE + 1, 0x424242), data.data(), 12);
    REQUIRE(rig.env.events.size() == 1);
    CHECK(rig.env.events[0].fd == Session::kAsyncFd);
    CHECK(rig.env.events[0].handle == r.handle);

    // The opener's handle is the last: the QP goes with it.
    REQUIRE(nicsim::destroy_qp(other.ctx, {r.handle, 0}, e) == 0);
    CHECK(rig.nic.qp_by_qpn(qpn) == nullptr);
    CHECK(nicsim::close_xrcd(other.ctx, {theirs, 0}, e) == 0);
    free_session_objects(rig.nic, other.objects);
    ::close(fd);
    ::unlink(path);
}

TEST_CASE("xrc: verbs refuse what the kernel refuses", "[xrc]") {
    Rig rig;
    uint32_t xrcd = open_xrcd(rig.ctx);
    Cq& cq = rig.create_cq();
    ipc::CreateSrqReply r{};
    ipc::CreateSrqExReq q{};
    q.pd = rig.pd;
    q.srq_type = IBV_SRQT_XRC;
    q.attr = {8, 1, 0};
    q.xrcd = xrcd;
    CHECK(nicsim::create_srq_ex(rig.ctx, q, r) == EINVAL); // no CQ
    q.cq = cq.handle;
    q.xrcd = 77;
    CHECK(nicsim::create_srq_ex(rig.ctx, q, r) == EINVAL); // no such domain
    q.xrcd = xrcd;
    q.srq_type = IBV_SRQT_TM; // without max_num_tags
    CHECK(nicsim::create_srq_ex(rig.ctx, q, r) == EINVAL);
    q.srq_type = 9; // no such type
    CHECK(nicsim::create_srq_ex(rig.ctx, q, r) == EINVAL);

    ipc::CreateQpReq cq_req{};
    cq_req.qp_type = IBV_QPT_XRC_RECV;
    ipc::CreateQpReply qr{};
    CHECK(nicsim::create_qp(rig.ctx, cq_req, qr) == EINVAL); // no domain
    cq_req.qp_type = IBV_QPT_XRC_SEND;
    cq_req.pd = rig.pd;
    CHECK(nicsim::create_qp(rig.ctx, cq_req, qr) == EINVAL); // no send CQ

    // A basic SRQ cannot be an RC QP's... an XRC SRQ cannot be a plain QP's SRQ.
    q.srq_type = IBV_SRQT_XRC;
    REQUIRE(nicsim::create_srq_ex(rig.ctx, q, r) == 0);
    rig.ctx.pass_fds.clear();
    ipc::CreateQpReq rc_req{};
    rc_req.qp_type = IBV_QPT_RC;
    rc_req.pd = rig.pd;
    rc_req.send_cq = rc_req.recv_cq = cq.handle;
    rc_req.srq = r.handle;
    CHECK(nicsim::create_qp(rig.ctx, rc_req, qr) == EINVAL);

    // The SRQ holds its domain and CQ.
    ipc::Empty e;
    CHECK(nicsim::close_xrcd(rig.ctx, {xrcd, 0}, e) == EBUSY);
    CHECK(nicsim::destroy_cq(rig.ctx, {cq.handle, 0}, e) == EBUSY);
    REQUIRE(nicsim::destroy_srq(rig.ctx, {r.handle, 0}, e) == 0);
    CHECK(nicsim::close_xrcd(rig.ctx, {xrcd, 0}, e) == 0);
    CHECK(nicsim::close_xrcd(rig.ctx, {xrcd, 0}, e) == ENOENT);
}

TEST_CASE("xrc: an XRC_RECV QP sends nothing of its own, whatever its SQ ring says", "[xrc]") {
    Rig rig;
    uint32_t xrcd = open_xrcd(rig.ctx);
    Qp& qp = create_xrc_recv(rig, rig.ctx, xrcd);
    qp.sq.header->producer.store(5); // the app scribbles on the one-slot ring it was mapped
    rig.doorbell();
    CHECK(rig.env.take().empty());
    ipc::ModifyQpReq m{};
    m.attr.qp_state = IBV_QPS_ERR;
    m.mask = IBV_QP_STATE;
    modify(rig.ctx, qp, m); // flushing finds no CQ to complete to, and needs none
    rig.doorbell();
    CHECK(rig.env.take().empty());
}

TEST_CASE("xrc: a doorbell kick passes over an ibv_open_qp handle, whatever its entry holds",
          "[xrc]") {
    Rig rig;
    uint32_t xrcd = open_xrcd(rig.ctx);
    Qp& qp = create_xrc_recv(rig, rig.ctx, xrcd);
    ipc::OpenQpReply r{};
    REQUIRE(nicsim::open_qp(rig.ctx, {xrcd, qp.qpn, IBV_QPT_XRC_RECV, 0}, r) == 0);
    Qp& handle = *rig.objects.qps.get(r.handle);
    REQUIRE(handle.shared == &qp);
    CHECK(handle.sq.header == nullptr); // no queues of its own: nothing to flush or run
    // Its entry holds no state today (modify_qp moves the QP itself); the kick must not rest on
    // that. The rule is transport::doorbell's, which the daemon's Engine and this rig both call.
    for (ibv_qp_state state : {IBV_QPS_RTS, IBV_QPS_ERR}) {
        handle.attr.qp_state = state;
        rig.doorbell();
        CHECK(rig.env.take().empty());
        CHECK_FALSE(handle.scheduled);
    }
    handle.attr.qp_state = IBV_QPS_RESET;
    CHECK(qp.attr.qp_state == IBV_QPS_RTS);
    ipc::Empty e;
    REQUIRE(nicsim::destroy_qp(rig.ctx, {handle.handle, 0}, e) == 0);
}
