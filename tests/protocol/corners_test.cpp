// The corners where the hardware's behaviour is the spec (issue 17): what mlx5 (and Linux rxe)
// do, each case saying where that is written; docs/features.md has the table ("Corner
// behaviour"). Memory windows are in memory_window_test.cpp.
#include "protocol_rig.h"
#include "transport/memory_windows.h"
#include "transport/ud.h"

#include <unistd.h>

using namespace proto;

namespace {

constexpr uint32_t kE = 0x500; // the responder's first expected PSN (QpOptions::rq_psn)

// An AH of the rig's PD to 127.0.0.2 with traffic class `tclass`.
uint32_t make_ah(Rig& rig, uint8_t tclass) {
    ipc::CreateAhReq q{};
    q.pd = rig.pd;
    q.attr.is_global = 1;
    q.attr.port_num = 1;
    q.attr.grh.traffic_class = tclass;
    q.attr.grh.hop_limit = 64;
    q.attr.grh.dgid.raw[10] = q.attr.grh.dgid.raw[11] = 0xff;
    ::inet_pton(AF_INET, kPeerAddress, &q.attr.grh.dgid.raw[12]);
    ipc::HandleReply r{};
    REQUIRE(nicsim::create_ah(rig.ctx, q, r) == 0);
    return r.handle;
}

uint32_t alloc_pd(Rig& rig) {
    ipc::HandleReply r{};
    REQUIRE(nicsim::alloc_pd(rig.ctx, ipc::Empty{}, r) == 0);
    return r.handle;
}

} // namespace

// --- error precedence on RC --------------------------------------------------------------------

// The local buffers of a READ are written only by its response: hardware checks their lkey
// when it scatters the response, so a remote refusal comes first (google/rdma-unit-test
// ReadInvalidRKeyAndInvalidLKey expects REM_ACCESS_ERR; no deviation on mlx5).
TEST_CASE("corners: a READ with a bad rkey and a bad lkey completes with REM_ACCESS_ERR",
          "[corners]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    std::vector<uint8_t> local(64, 0x77);
    Mr& mr = rig.reg_mr(local.data(), local.size(), IBV_ACCESS_LOCAL_WRITE);
    ipc::Sge bad = sge(local.data(), 64, mr);
    bad.lkey = (bad.lkey + 10) * 5;
    rig.post_send(qp, rdma_wqe(1, IBV_WR_RDMA_READ, 0x1000, 0xBADBAD), {bad});

    auto sent = rig.env.take();
    REQUIRE(sent.size() == 1); // the request goes out: the lkey is not looked at yet
    CHECK(sent[0].h.opcode == rc(wire::opcode::kReadRequest));

    SECTION("the responder refuses the rkey: REM_ACCESS_ERR, the local buffer untouched") {
        rig.deliver(qp, ack(o.sq_psn, wire::aeth_nak(wire::NakCode::RemoteAccessError)));
        expect_wcs(*qp.send_cq, {{.status = IBV_WC_REM_ACCESS_ERR}});
    }
    SECTION("the response comes: LOC_PROT_ERR, the local buffer untouched") {
        auto remote = pattern(64);
        rig.deliver(qp, read_response(wire::opcode::kReadResponseOnly, o.sq_psn), remote.data(),
                    remote.size());
        auto wcs = expect_wcs(*qp.send_cq, {{.status = IBV_WC_LOC_PROT_ERR}});
    }
    CHECK(local == std::vector<uint8_t>(64, 0x77));
    CHECK(qp.attr.qp_state == IBV_QPS_ERR);
}

// An atomic's lkey is checked when its result comes back: the responder has executed it by
// then (google/rdma-unit-test CompareSwapInvalidLKey: LOC_PROT_ERR, and the remote value
// swapped "because the lkey is not eagerly checked").
TEST_CASE("corners: a compare-and-swap with a bad lkey executes remotely, then fails locally",
          "[corners]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    alignas(8) uint64_t result = 1;
    Mr& mr = rig.reg_mr(&result, sizeof result, IBV_ACCESS_LOCAL_WRITE);
    ipc::Sge bad = sge(&result, 8, mr);
    bad.lkey = bad.lkey * 13 + 7;
    ipc::SendWqe cas = rdma_wqe(1, IBV_WR_ATOMIC_CMP_AND_SWP, 0x2000, 0x9);
    cas.compare_add = 2;
    cas.swap = 3;
    rig.post_send(qp, cas, {bad});
    auto sent = rig.env.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].h.opcode == rc(wire::opcode::kCompareSwap));
    CHECK(sent[0].h.atomic_eth.swap_add == 3);

    wire::Headers h;
    h.opcode = rc(wire::opcode::kAtomicAcknowledge);
    h.psn = o.sq_psn;
    h.aeth = {wire::aeth_ack(), 1};
    h.atomic_ack = 2; // the responder swapped 2 for 3
    rig.deliver(qp, h);
    expect_wcs(*qp.send_cq, {{.status = IBV_WC_LOC_PROT_ERR}});
    CHECK(result == 1);
    CHECK(qp.attr.qp_state == IBV_QPS_ERR);
}

// The same from the responder's side: it executes the CAS it is sent, whatever the requester's
// lkeys are (it never sees them).
TEST_CASE("corners: the responder swaps for a compare-and-swap it is sent", "[corners]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    alignas(8) uint64_t value = 2;
    Mr& mr = rig.reg_mr(&value, sizeof value, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
    wire::Headers h = request(wire::opcode::kCompareSwap, kE);
    h.atomic_eth = {reinterpret_cast<uint64_t>(&value), mr.rkey, 3, 2};
    rig.deliver(qp, h);
    CHECK(value == 3);
    auto sent = rig.env.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].h.atomic_ack == 2);
}

// A WRITE with immediate whose rkey is refused: its receive completes in error (IBA's "Local
// Access Error" of the responder, mlx5's LOCAL_ACCESS_ERR syndrome; google/rdma-unit-test
// WriteImmDataInvalidRKey takes LOC_ACCESS_ERR or LOC_PROT_ERR), not flushed.
TEST_CASE("corners: a WRITE with immediate and a bad rkey completes its receive with "
          "LOC_ACCESS_ERR",
          "[corners]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    std::vector<uint8_t> target(256, 0xEE);
    rig.reg_mr(target.data(), target.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    rig.post_recv(qp, 5, {});
    auto data = pattern(64);
    wire::Headers h = request(wire::opcode::kWriteOnlyImm, kE);
    h.reth = {reinterpret_cast<uint64_t>(target.data()), 0xDEADBEEF, 64};
    h.imm = 0xCAFE;
    rig.deliver(qp, h, data.data(), data.size());

    auto sent = rig.env.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].h.aeth.syndrome == wire::aeth_nak(wire::NakCode::RemoteAccessError));
    expect_wcs(*qp.recv_cq, {{.wr_id = 5, .status = IBV_WC_LOC_ACCESS_ERR}});
    CHECK(target == std::vector<uint8_t>(256, 0xEE));
    CHECK(qp.attr.qp_state == IBV_QPS_ERR);
}

// SEND with invalidate of a type 1 window's rkey: only type 2 windows are invalidated remotely
// (IBA o10-37.2.26). IBA 9.9.6.3's class J error: the receive completes in error, the QP goes
// to ERR, and no NAK goes back (mlx5; google/rdma-unit-test SendWithInvalidateType1Rkey).
TEST_CASE("corners: SEND with invalidate of a type 1 window's rkey fails the receive, no NAK",
          "[corners]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    std::vector<uint8_t> buf(256, 0xEE);
    Mr& mr = rig.reg_mr(buf.data(), buf.size(),
                        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND);
    ipc::AllocMwReply r{};
    REQUIRE(nicsim::alloc_mw(rig.ctx, {rig.pd, IBV_MW_TYPE_1}, r) == 0);
    nicsim::Mw& mw = *rig.objects.mws.get(r.handle);
    ipc::SendWqe b = wqe(9, IBV_WR_BIND_MW);
    b.imm_data = mw.rkey;
    b.rkey = mw.rkey + 1;
    b.remote_addr = reinterpret_cast<uint64_t>(buf.data());
    b.compare_add = 128;
    b.swap = mr.lkey;
    b.remote_qkey = IBV_ACCESS_REMOTE_READ;
    REQUIRE(nicsim::bind_window(rig.nic, qp, b) == IBV_WC_SUCCESS);
    rig.post_recv(qp, 6, {sge(buf.data(), buf.size(), mr)});

    wire::Headers h = request(wire::opcode::kSendOnlyInv, kE);
    h.ieth_rkey = mw.rkey;
    auto data = pattern(32);
    rig.deliver(qp, h, data.data(), data.size());
    CHECK(rig.env.take().empty()); // no NAK, no ACK
    auto wcs = expect_wcs(*qp.recv_cq, {{.wr_id = 6, .status = IBV_WC_REM_INV_REQ_ERR}});
    CHECK(qp.attr.qp_state == IBV_QPS_ERR);
    CHECK(mw.mr == &mr); // the window stays bound
}

// --- PDs and SRQs --------------------------------------------------------------------------------

// An SRQ of PD 1 serving a QP of PD 2: its receive buffers are checked against the SRQ's PD,
// the QP's remote accesses against the QP's (google/rdma-unit-test PdSrqTest, which mlx5
// passes; rxe checks receives against the QP's PD and deviates).
TEST_CASE("corners: receives from an SRQ are the SRQ's PD's, remote accesses the QP's",
          "[corners]") {
    Rig rig;
    const uint32_t pd1 = rig.pd;
    nicsim::Srq& srq = rig.create_srq(16, 2, 0);
    std::vector<uint8_t> recv_buf(256, 0xEE), write_buf(256, 0xEE);
    Mr& in_pd1 = rig.reg_mr(recv_buf.data(), recv_buf.size(), IBV_ACCESS_LOCAL_WRITE);
    rig.pd = alloc_pd(rig); // the QP and what it writes into: PD 2
    Mr& in_pd2 = rig.reg_mr(write_buf.data(), write_buf.size(),
                            IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    QpOptions o;
    o.srq = srq.handle;
    Qp& qp = rig.create_qp(o);
    REQUIRE(qp.pd != srq.pd);
    auto data = pattern(64);

    SECTION("a receive buffer of the SRQ's PD takes a SEND") {
        rig.post_srq_recv(srq, 1, {sge(recv_buf.data(), recv_buf.size(), in_pd1)});
        rig.deliver(qp, request(wire::opcode::kSendOnly, kE), data.data(), data.size());
        expect_wcs(*qp.recv_cq, {{}});
        CHECK(bytes_of(recv_buf, 0, 64) == data);
        CHECK(rig.env.take().at(0).h.aeth.syndrome == wire::aeth_ack());
    }
    SECTION("a receive buffer of the QP's PD: LOC_PROT_ERR, NAK remote operational error") {
        rig.post_srq_recv(srq, 2, {sge(write_buf.data(), write_buf.size(), in_pd2)});
        rig.deliver(qp, request(wire::opcode::kSendOnly, kE), data.data(), data.size());
        auto wcs = Rig::poll(*qp.recv_cq);
        REQUIRE_FALSE(wcs.empty());
        CHECK(wcs[0].status == IBV_WC_LOC_PROT_ERR);
        CHECK(rig.env.take().at(0).h.aeth.syndrome ==
              wire::aeth_nak(wire::NakCode::RemoteOperationalError)); // REM_OP_ERR there
        CHECK(write_buf == std::vector<uint8_t>(256, 0xEE));
    }
    SECTION("a WRITE with immediate into the QP's PD, its receive from the SRQ's") {
        rig.post_srq_recv(srq, 3, {sge(recv_buf.data(), recv_buf.size(), in_pd1)});
        wire::Headers h = request(wire::opcode::kWriteOnlyImm, kE);
        h.reth = {reinterpret_cast<uint64_t>(write_buf.data()), in_pd2.rkey, 64};
        rig.deliver(qp, h, data.data(), data.size());
        expect_wcs(*qp.recv_cq, {{.opcode = IBV_WC_RECV_RDMA_WITH_IMM}});
        CHECK(bytes_of(write_buf, 0, 64) == data);
        CHECK(rig.env.take().at(0).h.aeth.syndrome == wire::aeth_ack());
    }
    (void)pd1;
}

// --- UD ------------------------------------------------------------------------------------------

// Operations UD lacks complete with LOC_QP_OP_ERR (the library posts them, as mlx5's and rxe's
// do; google/rdma-unit-test LoopbackUdQpTest.Read/Write/FetchAdd/CompareSwap).
TEST_CASE("corners: READ, WRITE and atomics on a UD QP complete with LOC_QP_OP_ERR", "[corners]") {
    for (ibv_wr_opcode op : {IBV_WR_RDMA_READ, IBV_WR_RDMA_WRITE, IBV_WR_ATOMIC_CMP_AND_SWP,
                             IBV_WR_ATOMIC_FETCH_AND_ADD}) {
        Rig rig;
        Qp& qp = ud_qp(rig);
        alignas(8) uint64_t buf = 0;
        Mr& mr = rig.reg_mr(&buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
        ipc::SendWqe w = wqe(4, op);
        w.ah = make_ah(rig, 0);
        w.remote_qpn = 0x123;
        w.remote_qkey = 0x11111111;
        rig.post_send(qp, w, {sge(&buf, 8, mr)});
        CHECK(rig.env.take().empty());
        auto wcs = Rig::poll(*qp.send_cq);
        INFO("opcode " << op);
        REQUIRE(wcs.size() == 1);
        CHECK(wcs[0].wr_id == 4);
        CHECK(wcs[0].status == IBV_WC_LOC_QP_OP_ERR);
    }
}

// RoCE v2 carries the GRH's traffic class in the IPv4 header's TOS byte: the AH's goes out
// there, and a UD receive's GRH (20 unused bytes, then the IPv4 header) shows the packet's
// (google/rdma-unit-test SendTrafficClass: tos & 0xfc as sent).
TEST_CASE("corners: a UD AH's traffic class goes out and lands in the receiver's GRH",
          "[corners]") {
    Rig rig;
    Qp& qp = ud_qp(rig);
    auto data = pattern(32);
    Mr& mr = rig.reg_mr(data.data(), data.size(), 0);
    ipc::SendWqe w = wqe(1, IBV_WR_SEND);
    w.ah = make_ah(rig, 0xff);
    w.remote_qpn = 0x123;
    w.remote_qkey = 0x11111111;
    rig.post_send(qp, w, {sge(data.data(), data.size(), mr)});
    auto sent = rig.env.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].tclass == 0xff);

    std::vector<uint8_t> buf(40 + 64, 0);
    Mr& rmr = rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    rig.post_recv(qp, 2, {sge(buf.data(), buf.size(), rmr)});
    wire::Headers h;
    h.opcode = wire::opcode::kUdSendOnly;
    h.dest_qpn = qp.qpn;
    h.deth = {0x11111111, 0x77};
    nicsim::ud::receive(rig.env, qp, address("127.0.0.2"), address("127.0.0.1"), h, data.data(),
                        data.size(), 8 + 12 + data.size() + 4, tos_fields(0xfc));
    expect_wcs(*qp.recv_cq, {{}});
    CHECK(buf[20] == 0x45); // IPv4, 20-byte header
    CHECK(buf[21] == 0xfc); // the TOS byte: the traffic class
    CHECK(bytes_of(buf, 40, 32) == data);
}

// A datagram posted before its AH is destroyed still goes to the AH's address: hardware copies
// the address vector into the WQE at post time (mlx5's datagram segment); mckey posts and then
// destroys its AH at once.
TEST_CASE("corners: a UD send posted before ibv_destroy_ah still goes out", "[corners]") {
    Rig rig;
    Qp& qp = ud_qp(rig);
    auto data = pattern(32);
    Mr& mr = rig.reg_mr(data.data(), data.size(), 0);
    ipc::SendWqe w = wqe(1, IBV_WR_SEND);
    w.ah = make_ah(rig, 0);
    w.remote_qpn = 0x123;
    w.remote_qkey = 0x11111111;
    rig.enqueue_send(qp, w, {sge(data.data(), data.size(), mr)}); // posted; no doorbell yet
    ipc::Empty e;
    REQUIRE(nicsim::destroy_ah(rig.ctx, {w.ah, 0}, e) == 0);
    rig.env.drain();
    auto sent = rig.env.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].payload == data);
    auto wcs = Rig::poll(*qp.send_cq);
    REQUIRE(wcs.size() == 1);
    CHECK(wcs[0].status == IBV_WC_SUCCESS); // not LOC_QP_OP_ERR
}

// An RC QP's packets carry the traffic class of its address vector.
TEST_CASE("corners: an RC QP sends with its path's traffic class", "[corners]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    qp.attr.ah_attr.grh.traffic_class = 0x68;
    auto data = pattern(16);
    Mr& mr = rig.reg_mr(data.data(), data.size(), 0);
    rig.post_send(qp, wqe(1, IBV_WR_SEND), {sge(data.data(), data.size(), mr)});
    auto sent = rig.env.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].tclass == 0x68);
}

// --- handles and MRs -----------------------------------------------------------------------------

// The kernel's object lookup answers a handle that names nothing of the caller's file with
// ENOENT (google/rdma-unit-test: DestroyInvalidCq, DeregInvalidMr, DeleteInvalidPd,
// DeallocInvalidMw, DestroyInvalidSrq; no deviation on mlx5 or rxe).
TEST_CASE("corners: destroying by a handle that names nothing is ENOENT", "[corners]") {
    Rig rig;
    ipc::Empty e;
    const uint32_t garbled = 1 ^ 0xDEADBEEF;
    CHECK(nicsim::dealloc_pd(rig.ctx, {garbled, 0}, e) == ENOENT);
    CHECK(nicsim::dereg_mr(rig.ctx, {garbled, 0}, e) == ENOENT);
    CHECK(nicsim::dealloc_mw(rig.ctx, {garbled, 0}, e) == ENOENT);
    CHECK(nicsim::destroy_cq(rig.ctx, {garbled, 0}, e) == ENOENT);
    CHECK(nicsim::destroy_qp(rig.ctx, {garbled, 0}, e) == ENOENT);
    CHECK(nicsim::destroy_srq(rig.ctx, {garbled, 0}, e) == ENOENT);
    CHECK(nicsim::destroy_ah(rig.ctx, {garbled, 0}, e) == ENOENT);
    CHECK(nicsim::dealloc_dm(rig.ctx, {garbled, 0}, e) == ENOENT);
    CHECK(nicsim::destroy_comp_channel(rig.ctx, {garbled, 0}, e) == ENOENT);
    CHECK(rig.ctx.reason.find("names no") != std::string::npos);
}

// ib_umem_get pins the pages a range touches and refuses a range that touches none: a
// zero-length MR registers inside a page (that page is pinned; mlx5 and rxe both pin so) and is
// EINVAL at a page boundary.
TEST_CASE("corners: a zero-length MR registers where its address lies inside a page", "[corners]") {
    Rig rig;
    const long page = ::sysconf(_SC_PAGESIZE);
    std::vector<uint8_t> buf(3 * static_cast<size_t>(page));
    uint64_t aligned = (reinterpret_cast<uint64_t>(buf.data()) + page - 1) / page * page;
    auto reg = [&](uint64_t addr) {
        ipc::RegMrReq q{};
        q.pd = rig.pd;
        q.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ;
        q.addr = q.iova = addr;
        q.length = 0;
        ipc::RegMrReply r{};
        return nicsim::reg_mr(rig.ctx, q, r);
    };
    CHECK(reg(aligned + 1) == 0);
    CHECK(reg(aligned + page - 8) == 0);
    CHECK(reg(aligned) == EINVAL);
}
