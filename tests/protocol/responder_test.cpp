// The responder: requests from the peer (SEND, WRITE, READ, atomics) checked in rxe's order,
// executed against local memory, answered with ACKs, NAKs, READ responses and atomic ACKs.
#include "protocol_rig.h"
#include "transport/memory_windows.h"

using namespace proto;

namespace {

constexpr uint32_t kE = 0x500; // the responder's first expected PSN (QpOptions::rq_psn)

// The one packet the responder sent since the last take(): an ACK/NAK with this syndrome.
void check_ack(Rig& rig, uint32_t psn, uint8_t syndrome) {
    auto sent = rig.env.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].h.opcode == rc(wire::opcode::kAcknowledge));
    CHECK(sent[0].h.psn == psn);
    CHECK(sent[0].h.aeth.syndrome == syndrome);
    CHECK(sent[0].h.dest_qpn == kPeerQpn);
    CHECK(sent[0].dst_addr == ipv4(kPeerAddress));
}

// The QP refused a request for good: NAK, async event, ERR.
void check_fatal(Rig& rig, Qp& qp, uint32_t psn, wire::NakCode code, ibv_event_type event) {
    check_ack(rig, psn, wire::aeth_nak(code));
    CHECK(qp.attr.qp_state == IBV_QPS_ERR);
    REQUIRE(rig.env.events.size() == 1);
    CHECK(rig.env.events[0].fd == Rig::kAsyncFd);
    CHECK(rig.env.events[0].type == event);
    CHECK(rig.env.events[0].handle == qp.handle);
}

// The one refusal counted, in its class's counter and in the total.
void check_counted_as(Rig& rig, nicsim::HwCounter counter) {
    using nicsim::HwCounter;
    CHECK(rig.nic.hw().get(HwCounter::RequestsRefused) == 1);
    CHECK(rig.nic.hw().get(counter) == 1);
    uint64_t classes = 0;
    for (HwCounter c : {HwCounter::RespLocalLengthError, HwCounter::RespRemoteAccessErrors,
                        HwCounter::RespInvalidRequests, HwCounter::RespLocalProtectionErrors})
        classes += rig.nic.hw().get(c);
    CHECK(classes == 1);
}

} // namespace

TEST_CASE("responder: an in-order SEND_ONLY lands in the posted receive", "[responder]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    REQUIRE(o.rq_psn == kE);
    std::vector<uint8_t> buf(256, 0xEE);
    Mr& mr = rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    rig.post_recv(qp, 7, {sge(buf.data(), buf.size(), mr)});
    auto data = pattern(100, 3);

    SECTION("plain, with AckReq") {
        rig.deliver(qp, request(wire::opcode::kSendOnly, kE), data.data(), data.size());
        auto wcs = expect_wcs(*qp.recv_cq, {{.wr_id = 7, .opcode = IBV_WC_RECV, .byte_len = 100}});
        CHECK((wcs[0].wc_flags & IBV_WC_WITH_IMM) == 0);
        CHECK(wcs[0].src_qp == kPeerQpn);
        CHECK(wcs[0].qp_num == qp.qpn);
        CHECK(bytes_of(buf, 0, 100) == data);
        CHECK(buf[100] == 0xEE);
        CHECK(rq_consumer(qp) == 1);
        auto sent = rig.env.take();
        REQUIRE(sent.size() == 1);
        CHECK(sent[0].h.opcode == rc(wire::opcode::kAcknowledge));
        CHECK(sent[0].h.psn == kE);
        CHECK(wire::classify(sent[0].h.aeth.syndrome).kind == wire::SyndromeKind::Ack);
        CHECK(sent[0].h.aeth.msn == 1);
        CHECK(Rig::poll(*qp.send_cq).empty());
    }
    SECTION("with immediate data") {
        wire::Headers h = request(wire::opcode::kSendOnlyImm, kE);
        const uint8_t imm[] = {0xDE, 0xAD, 0xBE, 0xEF};
        std::memcpy(&h.imm, imm, 4);
        rig.deliver(qp, h, data.data(), data.size());
        auto wcs = expect_wcs(*qp.recv_cq, {{.byte_len = 100}});
        CHECK((wcs[0].wc_flags & IBV_WC_WITH_IMM) != 0);
        CHECK(wcs[0].imm_data == htonl(0xDEADBEEF)); // __be32 in ibv_wc
        check_ack(rig, kE, wire::aeth_ack());
    }
    SECTION("with invalidate: the type 2 window bound through this QP stops granting access") {
        std::vector<uint8_t> window(256);
        Mr& wmr =
            rig.reg_mr(window.data(), window.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
        ipc::AllocMwReply mr_reply{};
        REQUIRE(nicsim::alloc_mw(rig.ctx, {rig.pd, IBV_MW_TYPE_2}, mr_reply) == 0);
        nicsim::Mw& mw = *rig.objects.mws.get(mr_reply.handle);
        ipc::SendWqe bind{};
        bind.opcode = IBV_WR_BIND_MW;
        bind.imm_data = mw.rkey;
        bind.rkey = mw.rkey + 1; // ibv_inc_rkey
        bind.remote_addr = reinterpret_cast<uint64_t>(window.data());
        bind.compare_add = window.size();
        bind.swap = wmr.lkey;
        bind.remote_qkey = IBV_ACCESS_REMOTE_WRITE;
        REQUIRE(nicsim::bind_window(rig.nic, qp, bind) == IBV_WC_SUCCESS);
        REQUIRE(mw.mr == &wmr);

        wire::Headers h = request(wire::opcode::kSendOnlyInv, kE);
        h.ieth_rkey = mw.rkey;
        rig.deliver(qp, h, data.data(), data.size());
        auto wcs = expect_wcs(*qp.recv_cq, {{}});
        CHECK((wcs[0].wc_flags & IBV_WC_WITH_INV) != 0);
        CHECK(wcs[0].invalidated_rkey == mw.rkey);
        CHECK(mw.mr == nullptr);
        CHECK(wmr.windows == 0);
    }
    SECTION("with invalidate of an rkey that is no window of this QP: the receive fails, no "
            "NAK") {
        // IBA 9.9.6.3 class J, as mlx5: the requester hears nothing and times out.
        wire::Headers h = request(wire::opcode::kSendOnlyInv, kE);
        h.ieth_rkey = 0x123456;
        rig.deliver(qp, h, data.data(), data.size());
        CHECK(rig.env.take().empty());
        auto wcs = Rig::poll(*qp.recv_cq);
        REQUIRE_FALSE(wcs.empty());
        CHECK(wcs[0].wr_id == 7);
        CHECK(wcs[0].status == IBV_WC_REM_INV_REQ_ERR);
        CHECK(qp.attr.qp_state == IBV_QPS_ERR);
    }
    SECTION("without AckReq: delivered, not acknowledged") {
        rig.deliver(qp, request(wire::opcode::kSendOnly, kE, false), data.data(), data.size());
        CHECK(Rig::poll(*qp.recv_cq).size() == 1);
        CHECK(rig.env.take().empty());
    }
    SECTION("zero length") {
        rig.deliver(qp, request(wire::opcode::kSendOnly, kE));
        auto wcs = expect_wcs(*qp.recv_cq, {{.byte_len = 0}});
        CHECK(buf[0] == 0xEE);
    }
}

TEST_CASE("responder: a multi-packet SEND fills one receive across its SGEs", "[responder]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    std::vector<uint8_t> a(1500), b(2000);
    Mr& mra = rig.reg_mr(a.data(), a.size(), IBV_ACCESS_LOCAL_WRITE);
    Mr& mrb = rig.reg_mr(b.data(), b.size(), IBV_ACCESS_LOCAL_WRITE);
    rig.post_recv(qp, 1, {sge(a.data(), a.size(), mra), sge(b.data(), b.size(), mrb)});
    auto data = pattern(3000, 4);

    rig.deliver(qp, request(wire::opcode::kSendFirst, kE, false), data.data(), 1024);
    rig.deliver(qp, request(wire::opcode::kSendMiddle, kE + 1, false), &data[1024], 1024);
    CHECK(Rig::poll(*qp.recv_cq).empty());
    CHECK(rig.env.take().empty()); // no AckReq, no ACK
    rig.deliver(qp, request(wire::opcode::kSendLast, kE + 2), &data[2048], 952);

    auto wcs = expect_wcs(*qp.recv_cq, {{.wr_id = 1, .byte_len = 3000}});
    CHECK(a == bytes_of(data, 0, 1500));
    CHECK(bytes_of(b, 0, 1500) == bytes_of(data, 1500, 1500));
    auto sent = rig.env.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].h.psn == kE + 2);
    CHECK(sent[0].h.aeth.msn == 1); // one message
}

TEST_CASE("responder: no receive posted means an RNR NAK and no state change", "[responder]") {
    Rig rig;
    QpOptions o;
    o.min_rnr_timer = 12;
    Qp& qp = rig.create_qp(o);
    std::vector<uint8_t> buf(4096);
    Mr& mr = rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    auto data = pattern(2048, 8);

    SECTION("SEND_ONLY") {
        rig.deliver(qp, request(wire::opcode::kSendOnly, kE), data.data(), 100);
        check_ack(rig, kE, wire::aeth_rnr_nak(12));
        CHECK(Rig::poll(*qp.recv_cq).empty());
        CHECK(qp.attr.qp_state == IBV_QPS_RTS);
        CHECK(qp.resp.epsn == kE);
        CHECK(rig.env.events.empty());

        // The retry after the RNR timer finds a receive: accepted as new, not as a duplicate.
        rig.post_recv(qp, 5, {sge(buf.data(), buf.size(), mr)});
        rig.deliver(qp, request(wire::opcode::kSendOnly, kE), data.data(), 100);
        expect_wcs(*qp.recv_cq, {{.wr_id = 5, .byte_len = 100}});
        check_ack(rig, kE, wire::aeth_ack());
    }
    SECTION("SEND_FIRST, then the whole message again") {
        rig.deliver(qp, request(wire::opcode::kSendFirst, kE, false), data.data(), 1024);
        check_ack(rig, kE, wire::aeth_rnr_nak(12));
        rig.post_recv(qp, 5, {sge(buf.data(), buf.size(), mr)});
        rig.deliver(qp, request(wire::opcode::kSendFirst, kE, false), data.data(), 1024);
        rig.deliver(qp, request(wire::opcode::kSendLast, kE + 1), &data[1024], 1024);
        auto wcs = expect_wcs(*qp.recv_cq, {{.byte_len = 2048}});
        CHECK(bytes_of(buf, 0, 2048) == data);
        check_ack(rig, kE + 1, wire::aeth_ack());
    }
    SECTION("RDMA WRITE with immediate consumes a receive too") {
        alignas(8) static uint8_t target[64];
        Mr& tmr =
            rig.reg_mr(target, sizeof target, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
        wire::Headers h = request(wire::opcode::kWriteOnlyImm, kE);
        h.reth = {reinterpret_cast<uint64_t>(target), tmr.rkey, 16};
        rig.deliver(qp, h, data.data(), 16);
        check_ack(rig, kE, wire::aeth_rnr_nak(12));
        CHECK(qp.resp.epsn == kE);
    }
    SECTION("requests behind it are counted apart from losses") {
        rig.deliver(qp, request(wire::opcode::kSendOnly, kE), data.data(), 8);
        check_ack(rig, kE, wire::aeth_rnr_nak(12));
        for (uint32_t k = 1; k <= 3; ++k)
            rig.deliver(qp, request(wire::opcode::kSendOnly, kE + k), data.data(), 8);
        check_ack(rig, kE, wire::aeth_nak(wire::NakCode::PsnSequenceError)); // once, as rxe
        CHECK(qp.counters.drops.behind_rnr_nak == 3);
        CHECK(rig.nic.drops().behind_rnr_nak == 3);
        CHECK(qp.counters.drops.out_of_sequence == 0);

        // The retry finds a receive; a gap after it is a loss again.
        rig.post_recv(qp, 5, {sge(buf.data(), buf.size(), mr)});
        rig.deliver(qp, request(wire::opcode::kSendOnly, kE), data.data(), 8);
        check_ack(rig, kE, wire::aeth_ack());
        rig.deliver(qp, request(wire::opcode::kSendOnly, kE + 2), data.data(), 8);
        check_ack(rig, kE + 1, wire::aeth_nak(wire::NakCode::PsnSequenceError));
        CHECK(qp.counters.drops.out_of_sequence == 1);
        CHECK(qp.counters.drops.behind_rnr_nak == 3);
    }
}

TEST_CASE("responder: a PSN gap gets one PSN sequence NAK and later packets are dropped",
          "[responder]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    std::vector<uint8_t> buf(4096);
    Mr& mr = rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    for (uint64_t i = 0; i < 4; ++i)
        rig.post_recv(qp, i, {sge(&buf[i * 1024], 1024, mr)});
    auto data = pattern(64);

    rig.deliver(qp, request(wire::opcode::kSendOnly, kE + 1), data.data(), 10);
    check_ack(rig, kE, wire::aeth_nak(wire::NakCode::PsnSequenceError));
    rig.deliver(qp, request(wire::opcode::kSendOnly, kE + 2), data.data(), 10);
    rig.deliver(qp, request(wire::opcode::kSendOnly, kE + 1), data.data(), 10);
    CHECK(rig.env.take().empty());
    CHECK(Rig::poll(*qp.recv_cq).empty());
    CHECK(qp.attr.qp_state == IBV_QPS_RTS);

    // The requester goes back to kE.
    rig.deliver(qp, request(wire::opcode::kSendOnly, kE), data.data(), 10);
    check_ack(rig, kE, wire::aeth_ack());
    rig.deliver(qp, request(wire::opcode::kSendOnly, kE + 1), &data[10], 10);
    check_ack(rig, kE + 1, wire::aeth_ack());
    expect_wcs(*qp.recv_cq, {{.wr_id = 0}, {.wr_id = 1}});
    CHECK(bytes_of(buf, 1024, 10) == bytes_of(data, 10, 10));

    // A new gap is NAKed again.
    rig.deliver(qp, request(wire::opcode::kSendOnly, kE + 5), data.data(), 10);
    check_ack(rig, kE + 2, wire::aeth_nak(wire::NakCode::PsnSequenceError));
}

TEST_CASE("responder: a duplicate SEND is ACKed again and not delivered twice", "[responder]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    std::vector<uint8_t> buf(2048, 0);
    Mr& mr = rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    rig.post_recv(qp, 1, {sge(&buf[0], 1024, mr)});
    rig.post_recv(qp, 2, {sge(&buf[1024], 1024, mr)});
    auto data = pattern(64);

    rig.deliver(qp, request(wire::opcode::kSendOnly, kE), data.data(), 50);
    check_ack(rig, kE, wire::aeth_ack());
    REQUIRE(Rig::poll(*qp.recv_cq).size() == 1);

    rig.deliver(qp, request(wire::opcode::kSendOnly, kE), data.data(), 50);
    check_ack(rig, kE, wire::aeth_ack());
    CHECK(Rig::poll(*qp.recv_cq).empty());
    CHECK(rq_consumer(qp) == 1);
    CHECK(buf[1024] == 0);

    // The next message still goes to the second receive.
    rig.deliver(qp, request(wire::opcode::kSendOnly, kE + 1), data.data(), 20);
    expect_wcs(*qp.recv_cq, {{.wr_id = 2}});
}

// Each duplicate used to be answered with its own ACK: a flood of spoofed duplicates was
// reflected to the peer packet for packet. One ACK answers a burst; a retransmission that comes
// later (the requester's retransmit timeout) is answered again.
TEST_CASE("responder: duplicates are re-ACKed once per PSN and millisecond", "[responder]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    std::vector<uint8_t> buf(1024, 0);
    Mr& mr = rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    rig.post_recv(qp, 1, {sge(&buf[0], 512, mr)});
    rig.post_recv(qp, 2, {sge(&buf[512], 512, mr)});
    auto data = pattern(64);

    rig.deliver(qp, request(wire::opcode::kSendOnly, kE), data.data(), 50);
    check_ack(rig, kE, wire::aeth_ack());

    // A burst of 20 duplicates: one ACK.
    for (int i = 0; i < 20; ++i)
        rig.deliver(qp, request(wire::opcode::kSendOnly, kE), data.data(), 50);
    check_ack(rig, kE, wire::aeth_ack());
    CHECK(qp.counters.drops.duplicate_requests == 20);
    CHECK(qp.counters.drops.reacks_suppressed == 19);
    CHECK(rig.nic.drops().reacks_suppressed == 19);

    // Within the millisecond: still nothing; after it: the retransmission is answered.
    rig.env.advance(999);
    rig.deliver(qp, request(wire::opcode::kSendOnly, kE), data.data(), 50);
    CHECK(rig.env.take().empty());
    rig.env.advance(1);
    rig.deliver(qp, request(wire::opcode::kSendOnly, kE), data.data(), 50);
    check_ack(rig, kE, wire::aeth_ack());

    // A new PSN: its first duplicate is answered at once.
    rig.deliver(qp, request(wire::opcode::kSendOnly, kE + 1), data.data(), 50);
    check_ack(rig, kE + 1, wire::aeth_ack());
    rig.deliver(qp, request(wire::opcode::kSendOnly, kE + 1), data.data(), 50);
    check_ack(rig, kE + 1, wire::aeth_ack());
    CHECK(Rig::poll(*qp.recv_cq).size() == 2); // nothing delivered twice
}

TEST_CASE("responder: out-of-sequence requests are counted", "[responder]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    auto data = pattern(64);
    for (uint32_t k = 1; k <= 5; ++k)
        rig.deliver(qp, request(wire::opcode::kSendOnly, kE + k * 1000), data.data(), 8);
    check_ack(rig, kE, wire::aeth_nak(wire::NakCode::PsnSequenceError)); // one NAK
    CHECK(qp.counters.drops.out_of_sequence == 5);
    CHECK(rig.nic.drops().out_of_sequence == 5);
    CHECK(qp.counters.drops.duplicate_requests == 0);
}

TEST_CASE("responder: RDMA WRITE into a registered MR", "[responder]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    std::vector<uint8_t> target(4096, 0xEE);
    Mr& mr =
        rig.reg_mr(target.data(), target.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    const uint64_t va = reinterpret_cast<uint64_t>(target.data());
    auto data = pattern(2500, 2);

    SECTION("WRITE_ONLY") {
        wire::Headers h = request(wire::opcode::kWriteOnly, kE);
        h.reth = {va + 100, mr.rkey, 200};
        rig.deliver(qp, h, data.data(), 200);
        CHECK(bytes_of(target, 100, 200) == bytes_of(data, 0, 200));
        CHECK(target[99] == 0xEE);
        CHECK(target[300] == 0xEE);
        check_ack(rig, kE, wire::aeth_ack());
        CHECK(Rig::poll(*qp.recv_cq).empty());
    }
    SECTION("WRITE FIRST MIDDLE LAST") {
        wire::Headers h = request(wire::opcode::kWriteFirst, kE, false);
        h.reth = {va, mr.rkey, 2500};
        rig.deliver(qp, h, data.data(), 1024);
        rig.deliver(qp, request(wire::opcode::kWriteMiddle, kE + 1, false), &data[1024], 1024);
        rig.deliver(qp, request(wire::opcode::kWriteLast, kE + 2), &data[2048], 452);
        CHECK(bytes_of(target, 0, 2500) == data);
        CHECK(target[2500] == 0xEE);
        check_ack(rig, kE + 2, wire::aeth_ack());
    }
    SECTION("WRITE_ONLY with immediate completes a receive") {
        std::vector<uint8_t> rbuf(16);
        Mr& rmr = rig.reg_mr(rbuf.data(), rbuf.size(), IBV_ACCESS_LOCAL_WRITE);
        rig.post_recv(qp, 9, {sge(rbuf.data(), rbuf.size(), rmr)});
        wire::Headers h = request(wire::opcode::kWriteOnlyImm, kE);
        h.reth = {va, mr.rkey, 300};
        h.imm = htonl(0x01020304);
        rig.deliver(qp, h, data.data(), 300);
        CHECK(bytes_of(target, 0, 300) == bytes_of(data, 0, 300));
        auto wcs = expect_wcs(*qp.recv_cq,
                              {{.wr_id = 9, .opcode = IBV_WC_RECV_RDMA_WITH_IMM, .byte_len = 300}});
        CHECK((wcs[0].wc_flags & IBV_WC_WITH_IMM) != 0);
        CHECK(wcs[0].imm_data == htonl(0x01020304));
        check_ack(rig, kE, wire::aeth_ack());
    }
}

TEST_CASE("responder: WRITE access violations NAK remote access error and stop the QP",
          "[responder]") {
    enum Case { BadRkey, PastEnd, BeforeStart, NoRemoteWrite, OtherPd };
    Case c = GENERATE(BadRkey, PastEnd, BeforeStart, NoRemoteWrite, OtherPd);
    CAPTURE(c);
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    // A receive that the error flushes.
    std::vector<uint8_t> rbuf(64);
    Mr& rmr = rig.reg_mr(rbuf.data(), rbuf.size(), IBV_ACCESS_LOCAL_WRITE);
    rig.post_recv(qp, 3, {sge(rbuf.data(), rbuf.size(), rmr)});

    std::vector<uint8_t> target(4096, 0xEE);
    uint32_t access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
    if (c == NoRemoteWrite) access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ;
    if (c == OtherPd) {
        ipc::HandleReply r{};
        REQUIRE(nicsim::alloc_pd(rig.ctx, ipc::Empty{}, r) == 0);
        rig.pd = r.handle; // the MR below goes to another PD than the QP's
    }
    Mr& mr = rig.reg_mr(target.data(), target.size(), access);

    const uint64_t va = reinterpret_cast<uint64_t>(target.data());
    wire::Headers h = request(wire::opcode::kWriteOnly, kE);
    h.reth = {va, mr.rkey, 200};
    if (c == BadRkey) h.reth.rkey = mr.rkey ^ 0x100;
    if (c == PastEnd) h.reth.va = va + 4096 - 100;
    if (c == BeforeStart) h.reth.va = va - 8;
    auto data = pattern(200);
    rig.deliver(qp, h, data.data(), 200);

    check_fatal(rig, qp, kE, wire::NakCode::RemoteAccessError, IBV_EVENT_QP_ACCESS_ERR);
    CHECK(target == std::vector<uint8_t>(4096, 0xEE));
    expect_wcs(*qp.recv_cq, {{.wr_id = 3, .status = IBV_WC_WR_FLUSH_ERR}});

    // An ERR QP answers nothing more.
    rig.deliver(qp, request(wire::opcode::kSendOnly, kE + 1), data.data(), 10);
    CHECK(rig.env.take().empty());
}

TEST_CASE("responder: a WRITE to a QP without remote write access is an invalid request",
          "[responder]") {
    Rig rig;
    QpOptions o;
    o.access = IBV_ACCESS_REMOTE_READ;
    Qp& qp = rig.create_qp(o);
    std::vector<uint8_t> target(256, 0xEE);
    Mr& mr =
        rig.reg_mr(target.data(), target.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    wire::Headers h = request(wire::opcode::kWriteOnly, kE);
    h.reth = {reinterpret_cast<uint64_t>(target.data()), mr.rkey, 16};
    auto data = pattern(16);
    rig.deliver(qp, h, data.data(), 16);
    // rxe's check_op_valid: an operation the QP does not allow is an invalid request.
    check_fatal(rig, qp, kE, wire::NakCode::InvalidRequest, IBV_EVENT_QP_REQ_ERR);
    check_counted_as(rig, nicsim::HwCounter::RespInvalidRequests);
    CHECK(target == std::vector<uint8_t>(256, 0xEE));
}

TEST_CASE("responder: a READ request is answered FIRST MIDDLE LAST with AETH on the ends",
          "[responder]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    auto source = pattern(3000, 7);
    Mr& mr = rig.reg_mr(source.data(), source.size(), IBV_ACCESS_REMOTE_READ);
    const uint64_t va = reinterpret_cast<uint64_t>(source.data());

    wire::Headers h = request(wire::opcode::kReadRequest, kE);
    h.reth = {va, mr.rkey, 3000};
    rig.deliver(qp, h);

    auto sent = rig.env.take();
    REQUIRE(sent.size() == 3);
    CHECK(sent[0].h.opcode == rc(wire::opcode::kReadResponseFirst));
    CHECK(sent[1].h.opcode == rc(wire::opcode::kReadResponseMiddle));
    CHECK(sent[2].h.opcode == rc(wire::opcode::kReadResponseLast));
    CHECK(wire::has(sent[0].h.opcode, wire::kHasAeth));
    CHECK_FALSE(wire::has(sent[1].h.opcode, wire::kHasAeth));
    CHECK(wire::has(sent[2].h.opcode, wire::kHasAeth));
    CHECK(sent[1].bytes.size() == 12 + 1024 + 4); // MIDDLE: BTH and payload only
    for (size_t i = 0; i < 3; ++i) {
        INFO("response " << i);
        CHECK(sent[i].h.psn == kE + i);
        CHECK(sent[i].h.dest_qpn == kPeerQpn);
    }
    for (size_t i : {0, 2}) {
        CHECK(wire::classify(sent[i].h.aeth.syndrome).kind == wire::SyndromeKind::Ack);
        CHECK(sent[i].h.aeth.msn == 1);
    }
    CHECK(sent[0].payload == bytes_of(source, 0, 1024));
    CHECK(sent[1].payload == bytes_of(source, 1024, 1024));
    CHECK(sent[2].payload == bytes_of(source, 2048, 952));

    // The READ used 3 PSNs: the next request is kE + 3.
    std::vector<uint8_t> rbuf(64);
    Mr& rmr = rig.reg_mr(rbuf.data(), rbuf.size(), IBV_ACCESS_LOCAL_WRITE);
    rig.post_recv(qp, 1, {sge(rbuf.data(), rbuf.size(), rmr)});
    rig.deliver(qp, request(wire::opcode::kSendOnly, kE + 3), source.data(), 8);
    check_ack(rig, kE + 3, wire::aeth_ack());
    CHECK(Rig::poll(*qp.recv_cq).size() == 1);

    SECTION("a small READ is one READ_RESPONSE_ONLY, a zero-length one too") {
        h = request(wire::opcode::kReadRequest, kE + 4);
        h.reth = {va + 10, mr.rkey, 100};
        rig.deliver(qp, h);
        h = request(wire::opcode::kReadRequest, kE + 5);
        h.reth = {0, 0, 0};
        rig.deliver(qp, h);
        sent = rig.env.take();
        REQUIRE(sent.size() == 2);
        CHECK(sent[0].h.opcode == rc(wire::opcode::kReadResponseOnly));
        CHECK(sent[0].h.psn == kE + 4);
        CHECK(sent[0].payload == bytes_of(source, 10, 100));
        CHECK(sent[1].h.opcode == rc(wire::opcode::kReadResponseOnly));
        CHECK(sent[1].h.psn == kE + 5);
        CHECK(sent[1].payload.empty());
    }
    SECTION("a duplicate READ is answered again") {
        rig.deliver(qp, h);
        auto again = rig.env.take();
        REQUIRE(again.size() == 3);
        for (size_t i = 0; i < 3; ++i) {
            CHECK(again[i].h.opcode == sent[i].h.opcode);
            CHECK(again[i].h.psn == sent[i].h.psn);
            CHECK(again[i].payload == sent[i].payload);
        }
        CHECK(qp.attr.qp_state == IBV_QPS_RTS);
    }
    SECTION("a READ re-requested from its middle resumes there") {
        wire::Headers r = request(wire::opcode::kReadRequest, kE + 1);
        r.reth = {va + 1024, mr.rkey, 3000 - 1024};
        rig.deliver(qp, r);
        auto again = rig.env.take();
        REQUIRE(again.size() == 2);
        CHECK(again[0].h.psn == kE + 1);
        CHECK(again[0].h.opcode == rc(wire::opcode::kReadResponseFirst));
        CHECK(again[0].payload == bytes_of(source, 1024, 1024));
        CHECK(again[1].h.psn == kE + 2);
        CHECK(again[1].h.opcode == rc(wire::opcode::kReadResponseLast));
        CHECK(again[1].payload == bytes_of(source, 2048, 952));
    }
    SECTION("a duplicate READ asking for more, elsewhere or with another rkey is dropped") {
        std::vector<uint8_t> other(4096);
        Mr& omr = rig.reg_mr(other.data(), other.size(), IBV_ACCESS_REMOTE_READ);
        for (wire::Reth reth :
             {wire::Reth{va, mr.rkey, 3001}, wire::Reth{va + 8, mr.rkey, 3000},
              wire::Reth{va - 8, mr.rkey, 100},
              wire::Reth{reinterpret_cast<uint64_t>(other.data()), omr.rkey, 3000}}) {
            wire::Headers r = request(wire::opcode::kReadRequest, kE);
            r.reth = reth;
            rig.deliver(qp, r);
            CHECK(rig.env.take().empty());
        }
        CHECK(qp.counters.drops.duplicate_requests == 4);
        CHECK(qp.attr.qp_state == IBV_QPS_RTS);
    }
}

TEST_CASE("responder: READ access violations NAK remote access error", "[responder]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    auto source = pattern(256);
    Mr& mr = rig.reg_mr(source.data(), source.size(), IBV_ACCESS_LOCAL_WRITE);
    wire::Headers h = request(wire::opcode::kReadRequest, kE);
    h.reth = {reinterpret_cast<uint64_t>(source.data()), mr.rkey, 100}; // no REMOTE_READ
    rig.deliver(qp, h);
    check_fatal(rig, qp, kE, wire::NakCode::RemoteAccessError, IBV_EVENT_QP_ACCESS_ERR);
    check_counted_as(rig, nicsim::HwCounter::RespRemoteAccessErrors);
}

TEST_CASE("responder: atomics execute once and duplicates are answered from the replay cache",
          "[responder]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    alignas(8) uint64_t target[2] = {100, 42};
    Mr& mr = rig.reg_mr(target, sizeof target, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
    const uint64_t va = reinterpret_cast<uint64_t>(target);

    wire::Headers fadd = request(wire::opcode::kFetchAdd, kE);
    fadd.atomic_eth = {va, mr.rkey, 5, 0};
    rig.deliver(qp, fadd);
    CHECK(target[0] == 105);
    auto sent = rig.env.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].h.opcode == rc(wire::opcode::kAtomicAcknowledge));
    CHECK(sent[0].h.psn == kE);
    CHECK(sent[0].h.atomic_ack == 100);
    CHECK(wire::classify(sent[0].h.aeth.syndrome).kind == wire::SyndromeKind::Ack);
    CHECK(sent[0].h.aeth.msn == 1);

    rig.deliver(qp, fadd);   // the requester did not get the ACK and asks again
    CHECK(target[0] == 105); // not added twice
    sent = rig.env.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].h.opcode == rc(wire::opcode::kAtomicAcknowledge));
    CHECK(sent[0].h.psn == kE);
    CHECK(sent[0].h.atomic_ack == 100);

    wire::Headers cas = request(wire::opcode::kCompareSwap, kE + 1);
    cas.atomic_eth = {va + 8, mr.rkey, 7, 42}; // swap 7 if 42
    rig.deliver(qp, cas);
    CHECK(target[1] == 7);
    sent = rig.env.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].h.atomic_ack == 42);

    cas.atomic_eth.compare = 1; // a failed compare leaves memory alone
    cas.psn = kE + 2;
    rig.deliver(qp, cas);
    CHECK(target[1] == 7);
    sent = rig.env.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].h.atomic_ack == 7);

    // The first one, duplicated once more, still answers from the cache.
    rig.deliver(qp, fadd);
    sent = rig.env.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].h.atomic_ack == 100);
    CHECK(target[0] == 105);
    CHECK(qp.attr.qp_state == IBV_QPS_RTS);
}

TEST_CASE("responder: a misaligned atomic is an invalid request", "[responder]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    alignas(8) uint64_t target[2] = {100, 200};
    Mr& mr = rig.reg_mr(target, sizeof target, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
    wire::Headers h = request(wire::opcode::kFetchAdd, kE);
    h.atomic_eth = {reinterpret_cast<uint64_t>(target) + 4, mr.rkey, 1, 0};
    rig.deliver(qp, h);
    check_fatal(rig, qp, kE, wire::NakCode::InvalidRequest, IBV_EVENT_QP_REQ_ERR);
    CHECK(target[0] == 100);
    CHECK(target[1] == 200);
}

TEST_CASE("responder: an atomic on an MR without REMOTE_ATOMIC is a remote access error",
          "[responder]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    alignas(8) uint64_t target = 100;
    Mr& mr = rig.reg_mr(&target, sizeof target, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    wire::Headers h = request(wire::opcode::kFetchAdd, kE);
    h.atomic_eth = {reinterpret_cast<uint64_t>(&target), mr.rkey, 1, 0};
    rig.deliver(qp, h);
    check_fatal(rig, qp, kE, wire::NakCode::RemoteAccessError, IBV_EVENT_QP_ACCESS_ERR);
    CHECK(target == 100);
}

TEST_CASE("responder: opcode sequence errors NAK invalid request", "[responder]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    std::vector<uint8_t> buf(4096);
    Mr& mr = rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    rig.post_recv(qp, 1, {sge(buf.data(), buf.size(), mr)});
    auto data = pattern(1024);

    SECTION("MIDDLE without FIRST") {
        rig.deliver(qp, request(wire::opcode::kSendMiddle, kE), data.data(), 1024);
        check_fatal(rig, qp, kE, wire::NakCode::InvalidRequest, IBV_EVENT_QP_REQ_ERR);
    }
    SECTION("LAST without FIRST") {
        rig.deliver(qp, request(wire::opcode::kSendLast, kE), data.data(), 10);
        check_fatal(rig, qp, kE, wire::NakCode::InvalidRequest, IBV_EVENT_QP_REQ_ERR);
    }
    SECTION("a new message inside one") {
        rig.deliver(qp, request(wire::opcode::kSendFirst, kE, false), data.data(), 1024);
        rig.deliver(qp, request(wire::opcode::kSendOnly, kE + 1), data.data(), 10);
        check_fatal(rig, qp, kE + 1, wire::NakCode::InvalidRequest, IBV_EVENT_QP_REQ_ERR);
    }
    SECTION("a WRITE MIDDLE continuing a SEND") {
        rig.deliver(qp, request(wire::opcode::kSendFirst, kE, false), data.data(), 1024);
        rig.deliver(qp, request(wire::opcode::kWriteMiddle, kE + 1), data.data(), 1024);
        check_fatal(rig, qp, kE + 1, wire::NakCode::InvalidRequest, IBV_EVENT_QP_REQ_ERR);
    }
    auto wcs = Rig::poll(*qp.recv_cq);
    REQUIRE(wcs.size() == 1); // the receive ends in error, whichever status
    CHECK(wcs[0].wr_id == 1);
    CHECK(wcs[0].status != IBV_WC_SUCCESS);
}

TEST_CASE("responder: a SEND longer than the receive is an invalid request", "[responder]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    std::vector<uint8_t> buf(100, 0xEE);
    Mr& mr = rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    rig.post_recv(qp, 4, {sge(buf.data(), buf.size(), mr)});
    auto data = pattern(200);

    rig.deliver(qp, request(wire::opcode::kSendOnly, kE), data.data(), 200);
    check_fatal(rig, qp, kE, wire::NakCode::InvalidRequest, IBV_EVENT_QP_REQ_ERR);
    check_counted_as(rig, nicsim::HwCounter::RespLocalLengthError);
    expect_wcs(*qp.recv_cq, {{.wr_id = 4, .status = IBV_WC_LOC_LEN_ERR}});
    CHECK(buf == std::vector<uint8_t>(100, 0xEE));
}

TEST_CASE("responder: FIRST and MIDDLE must carry exactly one MTU", "[responder]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    std::vector<uint8_t> buf(4096);
    Mr& mr = rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    rig.post_recv(qp, 1, {sge(buf.data(), buf.size(), mr)});
    auto data = pattern(2048);

    rig.deliver(qp, request(wire::opcode::kSendFirst, kE, false), data.data(), 1000);
    check_fatal(rig, qp, kE, wire::NakCode::InvalidRequest, IBV_EVENT_QP_REQ_ERR);
}

TEST_CASE("responder: PSNs wrap modulo 2^24", "[responder]") {
    Rig rig;
    QpOptions o;
    o.rq_psn = 0xFFFFFE;
    Qp& qp = rig.create_qp(o);
    auto source = pattern(3000, 7);
    Mr& mr = rig.reg_mr(source.data(), source.size(), IBV_ACCESS_REMOTE_READ);
    std::vector<uint8_t> buf(64);
    Mr& rmr = rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    rig.post_recv(qp, 1, {sge(buf.data(), buf.size(), rmr)});

    wire::Headers h = request(wire::opcode::kReadRequest, 0xFFFFFE);
    h.reth = {reinterpret_cast<uint64_t>(source.data()), mr.rkey, 3000};
    rig.deliver(qp, h);
    auto sent = rig.env.take();
    REQUIRE(sent.size() == 3);
    CHECK(sent[0].h.psn == 0xFFFFFE);
    CHECK(sent[1].h.psn == 0xFFFFFF);
    CHECK(sent[2].h.psn == 0);

    rig.deliver(qp, request(wire::opcode::kSendOnly, 1), source.data(), 8);
    check_ack(rig, 1, wire::aeth_ack());
    CHECK(Rig::poll(*qp.recv_cq).size() == 1);

    // 0xFFFFFF is behind the expected PSN 2: a duplicate, ACKed again.
    rig.deliver(qp, request(wire::opcode::kSendOnly, 0xFFFFFF), source.data(), 8);
    check_ack(rig, 1, wire::aeth_ack());
}

TEST_CASE("responder: remote addresses are in the MR's iova space", "[responder]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    std::vector<uint8_t> target(1024, 0xEE);
    const uint64_t iova = 0x10000000;
    Mr& mr =
        rig.reg_mr(target.data(), target.size(),
                   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, iova);
    auto data = pattern(100);

    wire::Headers w = request(wire::opcode::kWriteOnly, kE);
    w.reth = {iova + 200, mr.rkey, 100};
    rig.deliver(qp, w, data.data(), 100);
    check_ack(rig, kE, wire::aeth_ack());
    CHECK(bytes_of(target, 200, 100) == data);

    wire::Headers r = request(wire::opcode::kReadRequest, kE + 1);
    r.reth = {iova + 200, mr.rkey, 100};
    rig.deliver(qp, r);
    auto sent = rig.env.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].payload == data);

    // Its own address is outside that space.
    wire::Headers bad = request(wire::opcode::kWriteOnly, kE + 2);
    bad.reth = {reinterpret_cast<uint64_t>(target.data()), mr.rkey, 100};
    rig.deliver(qp, bad, data.data(), 100);
    check_fatal(rig, qp, kE + 2, wire::NakCode::RemoteAccessError, IBV_EVENT_QP_ACCESS_ERR);
}

TEST_CASE("responder: a receive with a bad lkey fails the SEND as a remote operational error",
          "[responder]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    std::vector<uint8_t> buf(256, 0xEE);
    Mr& mr = rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    ipc::Sge bad = sge(buf.data(), buf.size(), mr);
    bad.lkey ^= 0x5a5a;
    rig.post_recv(qp, 6, {bad});
    auto data = pattern(100);

    rig.deliver(qp, request(wire::opcode::kSendOnly, kE), data.data(), 100);
    check_fatal(rig, qp, kE, wire::NakCode::RemoteOperationalError, IBV_EVENT_QP_FATAL);
    check_counted_as(rig, nicsim::HwCounter::RespLocalProtectionErrors);
    expect_wcs(*qp.recv_cq, {{.wr_id = 6, .status = IBV_WC_LOC_PROT_ERR}});
    CHECK(buf == std::vector<uint8_t>(256, 0xEE));
}

TEST_CASE("responder: responses leave in PSN order: an ACK waits behind READ responses",
          "[responder]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    auto source = pattern(3000, 7);
    Mr& mr = rig.reg_mr(source.data(), source.size(),
                        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
                            IBV_ACCESS_REMOTE_ATOMIC);
    alignas(8) uint64_t counter = 10;
    Mr& amr = rig.reg_mr(&counter, 8, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
    const uint64_t va = reinterpret_cast<uint64_t>(source.data());

    // Three requests arrive before the NIC gets to send anything.
    wire::Headers r = request(wire::opcode::kReadRequest, kE);
    r.reth = {va, mr.rkey, 3000};
    rig.deliver(qp, r, nullptr, 0, false);
    wire::Headers w = request(wire::opcode::kWriteOnly, kE + 3);
    w.reth = {va, mr.rkey, 4};
    rig.deliver(qp, w, source.data(), 4, false);
    wire::Headers a = request(wire::opcode::kFetchAdd, kE + 4);
    a.atomic_eth = {reinterpret_cast<uint64_t>(&counter), amr.rkey, 1, 0};
    rig.deliver(qp, a, nullptr, 0, false);
    rig.env.drain();

    auto sent = rig.env.take();
    REQUIRE(sent.size() == 5);
    CHECK(sent[0].h.opcode == rc(wire::opcode::kReadResponseFirst));
    CHECK(sent[2].h.opcode == rc(wire::opcode::kReadResponseLast));
    CHECK(sent[3].h.opcode == rc(wire::opcode::kAcknowledge));
    CHECK(sent[3].h.psn == kE + 3);
    CHECK(sent[4].h.opcode == rc(wire::opcode::kAtomicAcknowledge));
    CHECK(sent[4].h.psn == kE + 4);
    CHECK(sent[4].h.atomic_ack == 10);
    for (size_t i = 1; i < sent.size(); ++i)
        CHECK(wire::psn_gt(sent[i].h.psn, sent[i - 1].h.psn));
}

TEST_CASE("responder: a fatal error behind READ responses: responses, then the NAK, then ERR",
          "[responder]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    auto source = pattern(3000, 7);
    Mr& mr = rig.reg_mr(source.data(), source.size(), IBV_ACCESS_REMOTE_READ);
    const uint64_t va = reinterpret_cast<uint64_t>(source.data());

    wire::Headers r = request(wire::opcode::kReadRequest, kE);
    r.reth = {va, mr.rkey, 3000};
    rig.deliver(qp, r, nullptr, 0, false);
    wire::Headers w = request(wire::opcode::kWriteOnly, kE + 3);
    w.reth = {va, mr.rkey, 4}; // the MR does not allow remote writes
    rig.deliver(qp, w, source.data(), 4, false);
    // Nothing more is accepted while the error is being reported.
    wire::Headers r2 = request(wire::opcode::kReadRequest, kE + 4);
    r2.reth = {va, mr.rkey, 100};
    rig.deliver(qp, r2, nullptr, 0, false);
    rig.env.drain();

    auto sent = rig.env.take();
    REQUIRE(sent.size() == 4);
    CHECK(sent[0].h.opcode == rc(wire::opcode::kReadResponseFirst));
    CHECK(sent[1].h.opcode == rc(wire::opcode::kReadResponseMiddle));
    CHECK(sent[2].h.opcode == rc(wire::opcode::kReadResponseLast));
    CHECK(sent[2].payload == bytes_of(source, 2048, 952));
    CHECK(sent[3].h.opcode == rc(wire::opcode::kAcknowledge));
    CHECK(sent[3].h.psn == kE + 3);
    CHECK(sent[3].h.aeth.syndrome == wire::aeth_nak(wire::NakCode::RemoteAccessError));
    CHECK(qp.attr.qp_state == IBV_QPS_ERR);
    REQUIRE(rig.env.events.size() == 1);
    CHECK(rig.env.events[0].type == IBV_EVENT_QP_ACCESS_ERR);
}

// The rkey is looked up again for every packet of a multi-packet WRITE: an MR deregistered
// between packets is never written through (IBA 10.6.3: access is checked at each access).
TEST_CASE("responder: a WRITE whose MR is deregistered midway stops with a remote access error",
          "[responder]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    std::vector<uint8_t> target(4096, 0xEE);
    Mr& mr =
        rig.reg_mr(target.data(), target.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    const uint64_t va = reinterpret_cast<uint64_t>(target.data());
    auto data = pattern(2500, 2);

    wire::Headers h = request(wire::opcode::kWriteFirst, kE, false);
    h.reth = {va, mr.rkey, 2500};
    rig.deliver(qp, h, data.data(), 1024);
    REQUIRE(bytes_of(target, 0, 1024) == bytes_of(data, 0, 1024));
    ipc::HandleReq dereg{mr.handle, 0};
    ipc::Empty none;
    REQUIRE(nicsim::dereg_mr(rig.ctx, dereg, none) == 0);

    rig.deliver(qp, request(wire::opcode::kWriteMiddle, kE + 1, false), &data[1024], 1024);
    CHECK(target[1024] == 0xEE); // nothing written after the deregistration
    check_ack(rig, kE + 1, wire::aeth_nak(wire::NakCode::RemoteAccessError));
    CHECK(qp.attr.qp_state == IBV_QPS_ERR);
}

TEST_CASE("responder: an ATOMIC WRITE stores 8 aligned bytes; misaligned or longer is invalid",
          "[responder]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    alignas(8) uint64_t target[2] = {100, 200};
    Mr& mr = rig.reg_mr(target, sizeof target, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    const uint64_t va = reinterpret_cast<uint64_t>(target);
    const uint64_t value = 0x0102030405060708;

    SECTION("aligned: written, ACKed, no receive consumed") {
        wire::Headers h = request(wire::opcode::kAtomicWrite, kE);
        h.reth = {va + 8, mr.rkey, 8};
        rig.deliver(qp, h, &value, 8);
        CHECK(target[0] == 100);
        CHECK(target[1] == value);
        check_ack(rig, kE, wire::aeth_ack());
        CHECK(Rig::poll(*qp.recv_cq).empty());
    }
    SECTION("misaligned") {
        wire::Headers h = request(wire::opcode::kAtomicWrite, kE);
        h.reth = {va + 4, mr.rkey, 8};
        rig.deliver(qp, h, &value, 8);
        check_fatal(rig, qp, kE, wire::NakCode::InvalidRequest, IBV_EVENT_QP_REQ_ERR);
        CHECK(target[0] == 100);
        CHECK(target[1] == 200);
    }
    SECTION("16 bytes") {
        const uint64_t two[2] = {1, 2};
        wire::Headers h = request(wire::opcode::kAtomicWrite, kE);
        h.reth = {va, mr.rkey, 16};
        rig.deliver(qp, h, two, 16);
        check_fatal(rig, qp, kE, wire::NakCode::InvalidRequest, IBV_EVENT_QP_REQ_ERR);
        CHECK(target[0] == 100);
        CHECK(target[1] == 200);
    }
}
