// The completer: ACKs, NAKs, RNR NAKs, READ responses and atomic ACKs from the peer, the
// retransmit and RNR timers on the fake clock, and the completions they produce.
#include "protocol_rig.h"

using namespace proto;

TEST_CASE("completer: an ACK for the last PSN completes the WR", "[completer]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    auto data = pattern(3000);
    Mr& mr = rig.reg_mr(data.data(), data.size(), IBV_ACCESS_LOCAL_WRITE);

    rig.post_send(qp, wqe(0xABC, IBV_WR_SEND), {sge(data.data(), data.size(), mr)});
    REQUIRE(rig.env.take().size() == 3);

    // An ACK inside the message acknowledges part of it: nothing completes.
    rig.deliver(qp, ack(psn(o.sq_psn, 1)));
    CHECK(Rig::poll(*qp.send_cq).empty());
    CHECK(sq_consumer(qp) == 0);

    rig.deliver(qp, ack(psn(o.sq_psn, 2), wire::aeth_ack(), 1));
    auto wcs = expect_wcs(*qp.send_cq, {{.wr_id = 0xABC, .opcode = IBV_WC_SEND}});
    CHECK(wcs[0].qp_num == qp.qpn);
    CHECK(sq_consumer(qp) == 1);
    CHECK(rig.env.timer(qp) == 0); // nothing outstanding: the retransmit timer stops
    CHECK(rig.env.take().empty());
    CHECK(Rig::poll(*qp.recv_cq).empty());

    SECTION("a duplicate ACK changes nothing") {
        rig.deliver(qp, ack(psn(o.sq_psn, 2)));
        CHECK(Rig::poll(*qp.send_cq).empty());
        CHECK(rig.env.take().empty());
        CHECK(qp.attr.qp_state == IBV_QPS_RTS);
    }
}

TEST_CASE("completer: a coalesced ACK completes several WRs in order", "[completer]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    auto data = pattern(4096);
    Mr& mr = rig.reg_mr(data.data(), data.size(), IBV_ACCESS_LOCAL_WRITE);

    rig.enqueue_send(qp, wqe(10, IBV_WR_SEND), {sge(data.data(), 100, mr)});
    rig.enqueue_send(qp, rdma_wqe(11, IBV_WR_RDMA_WRITE, 0x1000, 0x3),
                     {sge(data.data(), 2000, mr)});
    rig.enqueue_send(qp, wqe(12, IBV_WR_SEND), {sge(data.data(), 10, mr)});
    rig.doorbell();
    REQUIRE(rig.env.take().size() == 4); // PSNs sq_psn .. sq_psn + 3

    rig.deliver(qp, ack(psn(o.sq_psn, 2))); // through the WRITE
    expect_wcs(*qp.send_cq,
               {{.wr_id = 10, .opcode = IBV_WC_SEND}, {.wr_id = 11, .opcode = IBV_WC_RDMA_WRITE}});
    CHECK(sq_consumer(qp) == 2);
    CHECK(rig.env.timer(qp) != 0); // the last SEND is still out

    rig.deliver(qp, ack(psn(o.sq_psn, 3)));
    expect_wcs(*qp.send_cq, {{.wr_id = 12}});
    CHECK(sq_consumer(qp) == 3);
}

TEST_CASE("completer: unsignaled WRs make no CQE but free their slot", "[completer]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    auto data = pattern(64);
    Mr& mr = rig.reg_mr(data.data(), data.size(), IBV_ACCESS_LOCAL_WRITE);

    rig.enqueue_send(qp, wqe(1, IBV_WR_SEND, 0), {sge(data.data(), 8, mr)});
    rig.enqueue_send(qp, rdma_wqe(2, IBV_WR_RDMA_WRITE, 0x1000, 0x3, 0), {sge(data.data(), 8, mr)});
    rig.enqueue_send(qp, wqe(3, IBV_WR_SEND), {sge(data.data(), 8, mr)});
    rig.doorbell();
    REQUIRE(rig.env.take().size() == 3);

    rig.deliver(qp, ack(o.sq_psn));
    CHECK(Rig::poll(*qp.send_cq).empty());
    CHECK(sq_consumer(qp) == 1);

    rig.deliver(qp, ack(psn(o.sq_psn, 2)));
    expect_wcs(*qp.send_cq, {{.wr_id = 3}});
    CHECK(sq_consumer(qp) == 3);

    SECTION("sq_sig_all signals every WR") {
        QpOptions all;
        all.sq_sig_all = true;
        Qp& qp2 = rig.create_qp(all);
        rig.enqueue_send(qp2, wqe(7, IBV_WR_SEND, 0), {sge(data.data(), 8, mr)});
        rig.doorbell();
        rig.env.take();
        rig.deliver(qp2, ack(all.sq_psn));
        expect_wcs(*qp2.send_cq, {{.wr_id = 7}});
    }
}

TEST_CASE("completer: a PSN sequence NAK retransmits go-back-N from its PSN", "[completer]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    auto data = pattern(4096);
    Mr& mr = rig.reg_mr(data.data(), data.size(), IBV_ACCESS_LOCAL_WRITE);

    SECTION("single packet messages") {
        for (uint64_t i = 0; i < 4; ++i)
            rig.enqueue_send(qp, wqe(i, IBV_WR_SEND), {sge(&data[i * 100], 100, mr)});
        rig.doorbell();
        auto first = rig.env.take();
        REQUIRE(first.size() == 4);

        // The peer got sq_psn and expects sq_psn + 1: WR 0 is acknowledged by the NAK.
        rig.deliver(qp, ack(psn(o.sq_psn, 1), wire::aeth_nak(wire::NakCode::PsnSequenceError)));
        expect_wcs(*qp.send_cq, {{.wr_id = 0}});

        auto again = rig.env.take();
        REQUIRE(again.size() == 3);
        for (size_t i = 0; i < 3; ++i) {
            CHECK(again[i].h.psn == psn(o.sq_psn, i + 1));
            CHECK(again[i].h.opcode == first[i + 1].h.opcode);
            CHECK(again[i].payload == first[i + 1].payload);
        }
        CHECK(qp.attr.qp_state == IBV_QPS_RTS);

        rig.deliver(qp, ack(psn(o.sq_psn, 3)));
        CHECK(Rig::poll(*qp.send_cq).size() == 3);
        CHECK(sq_consumer(qp) == 4);
    }
    SECTION("inside a multi-packet message: from that packet, not from the message start") {
        rig.enqueue_send(qp, wqe(1, IBV_WR_SEND), {sge(data.data(), 3000, mr)});
        rig.enqueue_send(qp, wqe(2, IBV_WR_SEND), {sge(data.data(), 10, mr)});
        rig.doorbell();
        auto first = rig.env.take();
        REQUIRE(first.size() == 4);

        rig.deliver(qp, ack(psn(o.sq_psn, 1), wire::aeth_nak(wire::NakCode::PsnSequenceError)));
        CHECK(Rig::poll(*qp.send_cq).empty());
        auto again = rig.env.take();
        REQUIRE(again.size() == 3);
        CHECK(again[0].h.psn == psn(o.sq_psn, 1));
        CHECK(again[0].h.opcode == rc(wire::opcode::kSendMiddle));
        CHECK(again[0].payload == bytes_of(data, 1024, 1024));
        CHECK(again[1].h.psn == psn(o.sq_psn, 2));
        CHECK(again[1].h.opcode == rc(wire::opcode::kSendLast));
        CHECK(again[2].h.psn == psn(o.sq_psn, 3));
        CHECK(again[2].h.opcode == rc(wire::opcode::kSendOnly));
    }
}

TEST_CASE("completer: an RNR NAK holds the SQ until the RNR timer of its code", "[completer]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    auto data = pattern(64);
    Mr& mr = rig.reg_mr(data.data(), data.size(), IBV_ACCESS_LOCAL_WRITE);

    rig.post_send(qp, wqe(1, IBV_WR_SEND), {sge(data.data(), 20, mr)});
    auto first = rig.env.take();
    REQUIRE(first.size() == 1);

    // Code 14 is 1.28 ms (IBA table 45), whatever our own min_rnr_timer says.
    rig.deliver(qp, ack(o.sq_psn, wire::aeth_rnr_nak(14)));
    CHECK(rig.env.take().empty());
    CHECK(Rig::poll(*qp.send_cq).empty());
    CHECK(rig.env.timer(qp) == rig.env.now + 1280);

    // New work waits too.
    rig.post_send(qp, wqe(2, IBV_WR_SEND), {sge(data.data(), 20, mr)});
    CHECK(rig.env.take().empty());

    rig.env.advance(1279);
    CHECK(rig.env.take().empty());

    rig.env.advance(1);
    auto again = rig.env.take();
    REQUIRE(again.size() == 2);
    CHECK(again[0].h.psn == o.sq_psn);
    CHECK(again[0].h.opcode == rc(wire::opcode::kSendOnly));
    CHECK(again[0].payload == first[0].payload);
    CHECK(again[1].h.psn == psn(o.sq_psn, 1));
    CHECK(rig.env.timer(qp) == rig.env.now + retransmit_timeout_us(o.timeout));

    rig.deliver(qp, ack(psn(o.sq_psn, 1)));
    expect_wcs(*qp.send_cq, {{}, {}});
}

TEST_CASE("completer: rnr_retry counts the RNR NAKs of a message, afresh after progress",
          "[completer]") {
    Rig rig;
    QpOptions o;
    o.rnr_retry = 1;
    Qp& qp = rig.create_qp(o);
    auto data = pattern(64);
    Mr& mr = rig.reg_mr(data.data(), data.size(), IBV_ACCESS_LOCAL_WRITE);
    // Three SENDs, each refused once (the peer posts each receive a little late), then taken:
    // rdma-core's test_rdmacm_async_traffic_external_qp failed so at its third message.
    for (uint64_t i = 0; i < 3; ++i) {
        rig.post_send(qp, wqe(i, IBV_WR_SEND), {sge(data.data(), 20, mr)});
        REQUIRE(rig.env.take().size() == 1);
        rig.deliver(qp, ack(psn(o.sq_psn, int64_t(i)), wire::aeth_rnr_nak(1))); // 10 us
        rig.env.advance(10);
        REQUIRE(rig.env.take().size() == 1); // the retry
        rig.deliver(qp, ack(psn(o.sq_psn, int64_t(i))));
        expect_wcs(*qp.send_cq, {{.wr_id = i}});
    }
    CHECK(qp.attr.qp_state == IBV_QPS_RTS);
}

TEST_CASE("completer: rnr_retry exhausted completes with IBV_WC_RNR_RETRY_EXC_ERR and flushes",
          "[completer]") {
    Rig rig;
    QpOptions o;
    o.rnr_retry = 1;
    Qp& qp = rig.create_qp(o);
    auto data = pattern(64);
    Mr& mr = rig.reg_mr(data.data(), data.size(), IBV_ACCESS_LOCAL_WRITE);

    for (uint64_t i = 1; i <= 3; ++i)
        rig.enqueue_send(qp, wqe(i, IBV_WR_SEND), {sge(data.data(), 20, mr)});
    rig.doorbell();
    REQUIRE(rig.env.take().size() == 3);

    rig.deliver(qp, ack(o.sq_psn, wire::aeth_rnr_nak(1))); // 10 us
    CHECK(rig.env.take().empty());
    rig.env.advance(10);
    CHECK(rig.env.take().size() == 3); // the one retry, go-back-N

    rig.deliver(qp, ack(o.sq_psn, wire::aeth_rnr_nak(1)));
    auto wcs = expect_wcs(*qp.send_cq, {{.wr_id = 1, .status = IBV_WC_RNR_RETRY_EXC_ERR},
                                        {.wr_id = 2, .status = IBV_WC_WR_FLUSH_ERR},
                                        {.wr_id = 3, .status = IBV_WC_WR_FLUSH_ERR}});
    CHECK(wcs[0].qp_num == qp.qpn);
    CHECK(sq_consumer(qp) == 3);
    CHECK(qp.attr.qp_state == IBV_QPS_ERR);

    rig.env.advance(1000);
    CHECK(rig.env.take().empty());

    // In ERR, later WRs are flushed as soon as they are posted.
    rig.post_send(qp, wqe(4, IBV_WR_SEND), {sge(data.data(), 20, mr)});
    expect_wcs(*qp.send_cq, {{.wr_id = 4, .status = IBV_WC_WR_FLUSH_ERR}});
    CHECK(rig.env.take().empty());
}

TEST_CASE("completer: retransmit timer expiry resends and an exhausted retry_cnt ends in "
          "IBV_WC_RETRY_EXC_ERR",
          "[completer]") {
    Rig rig;
    QpOptions o;
    o.timeout = 10; // 4.096 us * 1024 = 4194 us
    o.retry_cnt = 2;
    Qp& qp = rig.create_qp(o);
    auto data = pattern(64);
    Mr& mr = rig.reg_mr(data.data(), data.size(), IBV_ACCESS_LOCAL_WRITE);
    const uint64_t t = retransmit_timeout_us(o.timeout);
    REQUIRE(t == 4194);

    rig.enqueue_send(qp, wqe(1, IBV_WR_SEND), {sge(data.data(), 20, mr)});
    rig.enqueue_send(qp, wqe(2, IBV_WR_SEND), {sge(&data[20], 20, mr)});
    rig.doorbell();
    auto first = rig.env.take();
    REQUIRE(first.size() == 2);
    CHECK(rig.env.timer(qp) == rig.env.now + t);

    rig.env.advance(t - 1);
    CHECK(rig.env.take().empty());

    for (int retry = 1; retry <= 2; ++retry) {
        INFO("retry " << retry);
        rig.env.advance(retry == 1 ? 1 : t);
        auto again = rig.env.take();
        REQUIRE(again.size() == 2);
        CHECK(again[0].h.psn == o.sq_psn);
        CHECK(again[0].payload == first[0].payload);
        CHECK(again[1].h.psn == psn(o.sq_psn, 1));
        CHECK(Rig::poll(*qp.send_cq).empty());
        CHECK(rig.env.timer(qp) == rig.env.now + t);
    }

    rig.env.advance(t);
    CHECK(rig.env.take().empty());
    auto wcs = expect_wcs(*qp.send_cq, {{.wr_id = 1, .status = IBV_WC_RETRY_EXC_ERR},
                                        {.wr_id = 2, .status = IBV_WC_WR_FLUSH_ERR}});
    CHECK(qp.attr.qp_state == IBV_QPS_ERR);
    CHECK(sq_consumer(qp) == 2);
}

// On hardware retry_cnt 7 is seven retries (rxe alone retries forever): a dead peer ends the
// QP after timeout x 8. rnr_retry 7 is different: IBA defines it as infinite.
TEST_CASE("completer: retry_cnt 7 is seven retries, rnr_retry 7 is forever", "[completer]") {
    Rig rig;
    QpOptions o;
    o.timeout = 10;
    o.retry_cnt = 7;
    o.rnr_retry = 7;
    Qp& qp = rig.create_qp(o);
    auto data = pattern(64);
    Mr& mr = rig.reg_mr(data.data(), data.size(), IBV_ACCESS_LOCAL_WRITE);
    const uint64_t t = retransmit_timeout_us(o.timeout);

    rig.enqueue_send(qp, wqe(1, IBV_WR_SEND), {sge(data.data(), 20, mr)});
    rig.enqueue_send(qp, wqe(2, IBV_WR_SEND), {sge(&data[20], 20, mr)});
    rig.doorbell();
    REQUIRE(rig.env.take().size() == 2);
    const uint64_t start = rig.env.now;

    SECTION("a peer that never answers: RETRY_EXC_ERR after timeout x 8") {
        for (int retry = 1; retry <= 7; ++retry) {
            INFO("retry " << retry);
            rig.env.advance(t);
            CHECK(rig.env.take().size() == 2);
            CHECK(Rig::poll(*qp.send_cq).empty());
        }
        rig.env.advance(t);
        CHECK(rig.env.take().empty());
        expect_wcs(*qp.send_cq,
                   {{.wr_id = 1, .status = IBV_WC_RETRY_EXC_ERR}, {.status = IBV_WC_WR_FLUSH_ERR}});
        CHECK(qp.attr.qp_state == IBV_QPS_ERR);
        CHECK(rig.env.now - start == 8 * t); // timeout x (retry_cnt + 1)
        CHECK(qp.counters.timeouts == 8);
        CHECK(qp.counters.retransmits == 7);
    }
    SECTION("a peer that answers RNR NAK after RNR NAK: retried as long as they come") {
        for (int nak = 1; nak <= 50; ++nak) {
            INFO("RNR NAK " << nak);
            rig.deliver(qp, ack(o.sq_psn, wire::aeth_rnr_nak(1))); // 10 us
            rig.env.advance(10);
            REQUIRE(rig.env.take().size() == 2);
        }
        CHECK(Rig::poll(*qp.send_cq).empty());
        CHECK(qp.attr.qp_state == IBV_QPS_RTS);
        rig.deliver(qp, ack(psn(o.sq_psn, 1)));
        auto wcs = expect_wcs(*qp.send_cq, {{}, {}});
    }
}

TEST_CASE("completer: progress restarts the retransmit timer and refills retry_cnt",
          "[completer]") {
    Rig rig;
    QpOptions o;
    o.timeout = 10;
    o.retry_cnt = 1;
    Qp& qp = rig.create_qp(o);
    auto data = pattern(64);
    Mr& mr = rig.reg_mr(data.data(), data.size(), IBV_ACCESS_LOCAL_WRITE);
    const uint64_t t = retransmit_timeout_us(o.timeout);

    rig.enqueue_send(qp, wqe(1, IBV_WR_SEND), {sge(data.data(), 20, mr)});
    rig.enqueue_send(qp, wqe(2, IBV_WR_SEND), {sge(data.data(), 20, mr)});
    rig.doorbell();
    rig.env.take();
    rig.env.advance(t); // uses the one retry
    REQUIRE(rig.env.take().size() == 2);

    rig.env.advance(t / 2);
    rig.deliver(qp, ack(o.sq_psn)); // progress: the retry budget is whole again
    CHECK(Rig::poll(*qp.send_cq).size() == 1);
    CHECK(rig.env.timer(qp) == rig.env.now + t);

    rig.env.advance(t);
    auto again = rig.env.take();
    REQUIRE(again.size() == 1);
    CHECK(again[0].h.psn == psn(o.sq_psn, 1));
    CHECK(Rig::poll(*qp.send_cq).empty());
    CHECK(qp.attr.qp_state == IBV_QPS_RTS);
}

TEST_CASE("completer: NAKs for errors complete the WR with the matching status", "[completer]") {
    auto [code, status] =
        GENERATE(std::make_pair(wire::NakCode::RemoteAccessError, IBV_WC_REM_ACCESS_ERR),
                 std::make_pair(wire::NakCode::InvalidRequest, IBV_WC_REM_INV_REQ_ERR),
                 std::make_pair(wire::NakCode::RemoteOperationalError, IBV_WC_REM_OP_ERR));
    CAPTURE(static_cast<int>(code));
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    auto data = pattern(64);
    Mr& mr = rig.reg_mr(data.data(), data.size(), IBV_ACCESS_LOCAL_WRITE);

    rig.enqueue_send(qp, wqe(1, IBV_WR_SEND), {sge(data.data(), 8, mr)});
    rig.enqueue_send(qp, rdma_wqe(2, IBV_WR_RDMA_WRITE, 0x1000, 0x77), {sge(data.data(), 8, mr)});
    rig.enqueue_send(qp, wqe(3, IBV_WR_SEND), {sge(data.data(), 8, mr)});
    rig.doorbell();
    REQUIRE(rig.env.take().size() == 3);

    rig.deliver(qp, ack(psn(o.sq_psn, 1), wire::aeth_nak(code)));
    expect_wcs(*qp.send_cq, {{.wr_id = 1}, // the NAK acknowledges what came before it
                             {.wr_id = 2, .status = status, .opcode = IBV_WC_RDMA_WRITE},
                             {.wr_id = 3, .status = IBV_WC_WR_FLUSH_ERR}});
    CHECK(qp.attr.qp_state == IBV_QPS_ERR);
    CHECK(rig.env.timer(qp) == 0);
    CHECK(rig.env.take().empty());
}

TEST_CASE("completer: READ response payload lands in the local buffers", "[completer]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    std::vector<uint8_t> a(1000), b(2000);
    Mr& mra = rig.reg_mr(a.data(), a.size(), IBV_ACCESS_LOCAL_WRITE);
    Mr& mrb = rig.reg_mr(b.data(), b.size(), IBV_ACCESS_LOCAL_WRITE);
    auto remote = pattern(3000, 5);

    rig.post_send(qp, rdma_wqe(0x77, IBV_WR_RDMA_READ, 0x10000, 0x5),
                  {sge(a.data(), a.size(), mra), sge(b.data(), b.size(), mrb)});
    REQUIRE(rig.env.take().size() == 1);

    rig.deliver(qp, read_response(wire::opcode::kReadResponseFirst, o.sq_psn), remote.data(), 1024);
    wire::Headers middle;
    middle.opcode = rc(wire::opcode::kReadResponseMiddle);
    middle.psn = psn(o.sq_psn, 1);
    rig.deliver(qp, middle, &remote[1024], 1024);
    CHECK(Rig::poll(*qp.send_cq).empty());
    rig.deliver(qp, read_response(wire::opcode::kReadResponseLast, psn(o.sq_psn, 2)), &remote[2048],
                952);

    CHECK(a == bytes_of(remote, 0, 1000));
    CHECK(b == bytes_of(remote, 1000, 2000));
    expect_wcs(*qp.send_cq, {{.wr_id = 0x77, .opcode = IBV_WC_RDMA_READ, .byte_len = 3000}});
    CHECK(sq_consumer(qp) == 1);
    CHECK(rig.env.timer(qp) == 0);
    CHECK(rig.env.take().empty());
}

TEST_CASE("completer: a READ response after a gap re-requests from the missing PSN",
          "[completer]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    std::vector<uint8_t> buf(3000);
    Mr& mr = rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    auto remote = pattern(3000, 6);
    const uint64_t va = 0x10000;

    rig.post_send(qp, rdma_wqe(1, IBV_WR_RDMA_READ, va, 0x5), {sge(buf.data(), buf.size(), mr)});
    REQUIRE(rig.env.take().size() == 1);

    rig.deliver(qp, read_response(wire::opcode::kReadResponseFirst, o.sq_psn), remote.data(), 1024);
    // MIDDLE (sq_psn + 1) is lost; LAST arrives.
    rig.deliver(qp, read_response(wire::opcode::kReadResponseLast, psn(o.sq_psn, 2)), &remote[2048],
                952);
    CHECK(Rig::poll(*qp.send_cq).empty());
    auto sent = rig.env.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].h.opcode == rc(wire::opcode::kReadRequest));
    CHECK(sent[0].h.psn == psn(o.sq_psn, 1));
    CHECK(sent[0].h.reth.va == va + 1024);
    CHECK(sent[0].h.reth.rkey == 0x5);
    CHECK(sent[0].h.reth.length == 3000 - 1024);

    // The responder answers the new request from its PSN.
    rig.deliver(qp, read_response(wire::opcode::kReadResponseFirst, psn(o.sq_psn, 1)),
                &remote[1024], 1024);
    rig.deliver(qp, read_response(wire::opcode::kReadResponseLast, psn(o.sq_psn, 2)), &remote[2048],
                952);
    CHECK(buf == remote);
    expect_wcs(*qp.send_cq, {{.byte_len = 3000}});
}

TEST_CASE("completer: an ACK past an unanswered READ re-requests the READ", "[completer]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    std::vector<uint8_t> buf(64);
    Mr& mr = rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);

    rig.enqueue_send(qp, rdma_wqe(1, IBV_WR_RDMA_READ, 0x1000, 0x5), {sge(buf.data(), 32, mr)});
    rig.enqueue_send(qp, wqe(2, IBV_WR_SEND), {sge(buf.data(), 8, mr)});
    rig.doorbell();
    REQUIRE(rig.env.take().size() == 2);

    // The SEND's ACK arrives but the READ response was lost (IBA 9.7.5.1.2: implied NAK).
    rig.deliver(qp, ack(psn(o.sq_psn, 1)));
    CHECK(Rig::poll(*qp.send_cq).empty());
    auto sent = rig.env.take();
    REQUIRE_FALSE(sent.empty());
    CHECK(sent[0].h.opcode == rc(wire::opcode::kReadRequest));
    CHECK(sent[0].h.psn == o.sq_psn);
}

TEST_CASE("completer: an atomic ACK writes the original value and completes", "[completer]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    alignas(8) uint64_t result[2] = {~0ull, ~0ull};
    Mr& mr = rig.reg_mr(result, sizeof result, IBV_ACCESS_LOCAL_WRITE);

    ipc::SendWqe fadd = rdma_wqe(1, IBV_WR_ATOMIC_FETCH_AND_ADD, 0x2000, 0x9);
    fadd.compare_add = 3;
    rig.enqueue_send(qp, fadd, {sge(&result[0], 8, mr)});
    ipc::SendWqe cas = rdma_wqe(2, IBV_WR_ATOMIC_CMP_AND_SWP, 0x2008, 0x9);
    cas.compare_add = 1;
    cas.swap = 2;
    rig.enqueue_send(qp, cas, {sge(&result[1], 8, mr)});
    rig.doorbell();
    REQUIRE(rig.env.take().size() == 2);

    wire::Headers h;
    h.opcode = rc(wire::opcode::kAtomicAcknowledge);
    h.psn = psn(o.sq_psn, 1); // not the oldest atomic's PSN: ignored
    h.aeth = {wire::aeth_ack(), 1};
    h.atomic_ack = 0xDEAD;
    rig.deliver(qp, h);
    CHECK(Rig::poll(*qp.send_cq).empty());
    CHECK(result[0] == ~0ull);

    h.psn = o.sq_psn;
    h.atomic_ack = 0x1122334455667788;
    rig.deliver(qp, h);
    CHECK(result[0] == 0x1122334455667788); // host order, as the app reads it
    expect_wcs(*qp.send_cq, {{.wr_id = 1, .opcode = IBV_WC_FETCH_ADD, .byte_len = 8}});

    h.psn = psn(o.sq_psn, 1);
    h.atomic_ack = 1;
    rig.deliver(qp, h);
    CHECK(result[1] == 1);
    expect_wcs(*qp.send_cq, {{.wr_id = 2, .opcode = IBV_WC_COMP_SWAP, .byte_len = 8}});
    CHECK(sq_consumer(qp) == 2);
}

// una_psn must not move past a READ still waiting for its response: the retransmit timer
// resends from una_psn, and a lost re-request would otherwise never be repeated.
TEST_CASE("completer: a re-requested READ that is lost again is resent by the timer",
          "[completer]") {
    Rig rig;
    QpOptions o;
    o.timeout = 10;
    Qp& qp = rig.create_qp(o);
    std::vector<uint8_t> buf(64);
    Mr& mr = rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);

    rig.enqueue_send(qp, rdma_wqe(1, IBV_WR_RDMA_READ, 0x1000, 0x5), {sge(buf.data(), 32, mr)});
    rig.enqueue_send(qp, wqe(2, IBV_WR_SEND), {sge(buf.data(), 8, mr)});
    rig.doorbell();
    REQUIRE(rig.env.take().size() == 2);
    rig.deliver(qp, ack(psn(o.sq_psn, 1))); // implied NAK: the READ is asked again
    auto sent = rig.env.take();
    REQUIRE_FALSE(sent.empty());
    REQUIRE(sent[0].h.opcode == rc(wire::opcode::kReadRequest));

    // That request is lost as well: the retransmit timer must ask again.
    rig.env.advance(retransmit_timeout_us(o.timeout));
    sent = rig.env.take();
    REQUIRE_FALSE(sent.empty());
    CHECK(sent[0].h.opcode == rc(wire::opcode::kReadRequest));
    CHECK(sent[0].h.psn == o.sq_psn);

    auto remote = pattern(32);
    rig.deliver(qp, read_response(wire::opcode::kReadResponseOnly, o.sq_psn), remote.data(), 32);
    rig.deliver(qp, ack(psn(o.sq_psn, 1)));
    expect_wcs(*qp.send_cq, {{}, {}});
}

// A NAK for the request after a READ whose responses were lost implies the loss (IBA
// 9.7.5.1.2): the requester goes back to the READ, not just to the NAKed PSN.
TEST_CASE("completer: a PSN sequence NAK past an unanswered READ re-requests the READ",
          "[completer]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    std::vector<uint8_t> buf(4096);
    Mr& mr = rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);

    rig.enqueue_send(qp, rdma_wqe(1, IBV_WR_RDMA_READ, 0x1000, 0x5), {sge(buf.data(), 3000, mr)});
    rig.enqueue_send(qp, wqe(2, IBV_WR_SEND), {sge(buf.data(), 8, mr)});
    rig.doorbell();
    REQUIRE(rig.env.take().size() == 2); // READ at sq_psn (3 PSNs), SEND at sq_psn + 3

    // The responder executed the READ (its responses are lost) and missed the SEND.
    rig.deliver(qp, ack(psn(o.sq_psn, 3), wire::aeth_nak(wire::NakCode::PsnSequenceError)));
    auto sent = rig.env.take();
    bool read_again = false;
    for (const Sent& s : sent)
        if (s.h.opcode == rc(wire::opcode::kReadRequest) && s.h.psn == o.sq_psn) read_again = true;
    CHECK(read_again);
}

// Responses of the old stream still arriving after a gap must not each make another READ
// REQUEST for the rest of the message (O(N^2) packets for one early loss); rxe asks once per
// gap (comp.started_retry).
TEST_CASE("completer: several READ responses after one gap re-request once", "[completer]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    std::vector<uint8_t> buf(5 * 1024);
    Mr& mr = rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    auto remote = pattern(buf.size());

    rig.post_send(qp, rdma_wqe(1, IBV_WR_RDMA_READ, 0x1000, 0x5),
                  {sge(buf.data(), buf.size(), mr)});
    REQUIRE(rig.env.take().size() == 1);

    rig.deliver(qp, read_response(wire::opcode::kReadResponseFirst, o.sq_psn), remote.data(), 1024);
    // sq_psn + 1 is lost; the rest of the responses arrive.
    for (uint32_t k = 2; k < 5; ++k) {
        wire::Headers h;
        h.opcode = rc(k == 4 ? wire::opcode::kReadResponseLast : wire::opcode::kReadResponseMiddle);
        h.psn = psn(o.sq_psn, k);
        h.aeth = {wire::aeth_ack(), 1};
        rig.deliver(qp, h, &remote[k * 1024], 1024);
    }
    auto sent = rig.env.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].h.opcode == rc(wire::opcode::kReadRequest));
    CHECK(sent[0].h.psn == psn(o.sq_psn, 1));
    CHECK(sent[0].h.reth.length == 4 * 1024);

    // The answer to the re-request completes the READ.
    for (uint32_t k = 1; k < 5; ++k) {
        wire::Headers h;
        h.opcode = rc(k == 1   ? wire::opcode::kReadResponseFirst
                      : k == 4 ? wire::opcode::kReadResponseLast
                               : wire::opcode::kReadResponseMiddle);
        h.psn = psn(o.sq_psn, k);
        h.aeth = {wire::aeth_ack(), 1};
        rig.deliver(qp, h, &remote[k * 1024], 1024);
    }
    CHECK(buf == remote);
    expect_wcs(*qp.send_cq, {{}});
    CHECK(rig.env.take().empty());
}

TEST_CASE("completer: a long READ asks for at most kReadAhead responses beyond those it has",
          "[completer]") {
    const uint32_t ahead = nicsim::transport::kReadAhead;
    const uint32_t len = ahead + 72; // packets of the READ
    Rig rig;
    QpOptions o;
    o.max_rd_atomic = 16; // a credit for every request the window allows (window / 64)
    Qp& qp = rig.create_qp(o);
    std::vector<uint8_t> buf(len * 1024);
    Mr& mr = rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    auto remote = pattern(1024);

    // The READ takes PSNs sq_psn .. sq_psn + len - 1, asked for in requests of 64 response
    // packets; the SEND behind it goes once the READ's last request is out.
    rig.enqueue_send(qp, rdma_wqe(1, IBV_WR_RDMA_READ, 0x1000, 0x5),
                     {sge(buf.data(), buf.size(), mr)});
    rig.enqueue_send(qp, wqe(2, IBV_WR_SEND), {sge(buf.data(), 8, mr)});
    rig.doorbell();
    auto first = rig.env.take();
    REQUIRE(first.size() == ahead / 64);
    for (uint32_t k = 0; k < first.size(); ++k) {
        CHECK(first[k].h.psn == psn(o.sq_psn, 64 * k));
        CHECK(first[k].h.reth.length == 64 * 1024);
        CHECK(first[k].h.reth.va == 0x1000 + 64 * 1024 * k);
    }

    // response index -> what went out after it
    std::vector<std::pair<uint32_t, uint32_t>> later;
    for (uint32_t k = 0; k < 72; ++k) {
        wire::Headers h = read_response(k == 0 ? wire::opcode::kReadResponseFirst
                                               : wire::opcode::kReadResponseMiddle,
                                        psn(o.sq_psn, k));
        rig.deliver(qp, h, remote.data(), 1024);
        for (const auto& p : rig.env.take()) {
            later.emplace_back(k, p.h.psn);
            if (p.h.psn == psn(o.sq_psn, ahead + 64)) CHECK(p.h.reth.length == 8 * 1024);
            if (p.h.psn == psn(o.sq_psn, len)) CHECK(p.h.opcode == rc(wire::opcode::kSendOnly));
        }
    }
    CHECK(later == std::vector<std::pair<uint32_t, uint32_t>>{{0, psn(o.sq_psn, ahead)},
                                                              {64, psn(o.sq_psn, ahead + 64)},
                                                              {64, psn(o.sq_psn, len)}});
}

TEST_CASE("completer: a stale ACK does not restart the retransmit timer", "[completer]") {
    Rig rig;
    QpOptions o;
    o.timeout = 10;
    Qp& qp = rig.create_qp(o);
    auto data = pattern(64);
    Mr& mr = rig.reg_mr(data.data(), data.size(), IBV_ACCESS_LOCAL_WRITE);
    const uint64_t t = retransmit_timeout_us(o.timeout);

    rig.enqueue_send(qp, wqe(1, IBV_WR_SEND), {sge(data.data(), 8, mr)});
    rig.enqueue_send(qp, wqe(2, IBV_WR_SEND), {sge(data.data(), 8, mr)});
    rig.doorbell();
    rig.env.take();
    rig.env.advance(t / 4);
    rig.deliver(qp, ack(o.sq_psn));
    const uint64_t deadline = rig.env.timer(qp);
    CHECK(deadline == rig.env.now + t);

    rig.env.advance(t / 4);
    rig.deliver(qp, ack(o.sq_psn)); // a duplicate: no progress
    CHECK(rig.env.timer(qp) == deadline);
    rig.env.advance(deadline - rig.env.now);
    auto again = rig.env.take();
    REQUIRE(again.size() == 1);
    CHECK(again[0].h.psn == psn(o.sq_psn, 1));
}

TEST_CASE("completer: an unsignaled WR that fails still completes with its error", "[completer]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    auto data = pattern(64);
    Mr& mr = rig.reg_mr(data.data(), data.size(), IBV_ACCESS_LOCAL_WRITE);

    rig.post_send(qp, rdma_wqe(5, IBV_WR_RDMA_WRITE, 0x1000, 0x77, 0), {sge(data.data(), 8, mr)});
    rig.env.take();
    rig.deliver(qp, ack(o.sq_psn, wire::aeth_nak(wire::NakCode::RemoteAccessError)));
    expect_wcs(*qp.send_cq, {{.wr_id = 5, .status = IBV_WC_REM_ACCESS_ERR}});
}

TEST_CASE("completer: an RNR NAK inside a message resumes from the NAKed packet", "[completer]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    auto data = pattern(2048);
    Mr& mr = rig.reg_mr(data.data(), data.size(), IBV_ACCESS_LOCAL_WRITE);

    ipc::SendWqe w = rdma_wqe(1, IBV_WR_RDMA_WRITE_WITH_IMM, 0x1000, 0x5);
    w.imm_data = htonl(7);
    rig.post_send(qp, w, {sge(data.data(), 2048, mr)});
    REQUIRE(rig.env.take().size() == 2);

    // The WRITE's data was taken; its LAST found no receive for the immediate.
    rig.deliver(qp, ack(psn(o.sq_psn, 1), wire::aeth_rnr_nak(1)));
    CHECK(rig.env.take().empty());
    rig.env.advance(10);
    auto again = rig.env.take();
    REQUIRE(again.size() == 1);
    CHECK(again[0].h.psn == psn(o.sq_psn, 1));
    CHECK(again[0].h.opcode == rc(wire::opcode::kWriteLastImm));
    CHECK(again[0].payload == bytes_of(data, 1024, 1024));

    rig.deliver(qp, ack(psn(o.sq_psn, 1)));
    expect_wcs(*qp.send_cq, {{.opcode = IBV_WC_RDMA_WRITE}});
}

TEST_CASE("completer: completions beyond a full CQ are lost with one IBV_EVENT_CQ_ERR",
          "[completer]") {
    Rig rig;
    QpOptions o;
    o.cqe = 2;
    Qp& qp = rig.create_qp(o);
    auto data = pattern(64);
    Mr& mr = rig.reg_mr(data.data(), data.size(), IBV_ACCESS_LOCAL_WRITE);

    for (uint64_t i = 0; i < 4; ++i)
        rig.enqueue_send(qp, wqe(i, IBV_WR_SEND), {sge(data.data(), 8, mr)});
    rig.doorbell();
    rig.env.take();
    rig.deliver(qp, ack(psn(o.sq_psn, 3)));

    expect_wcs(*qp.send_cq, {{.wr_id = 0}, {.wr_id = 1}});
    REQUIRE(rig.env.events.size() == 1);
    CHECK(rig.env.events[0].fd == Rig::kAsyncFd);
    CHECK(rig.env.events[0].type == IBV_EVENT_CQ_ERR);
    CHECK(rig.env.events[0].handle == qp.send_cq->handle);
    CHECK(sq_consumer(qp) == 4); // the SQ moves on all the same
}

// A BIND_MW completes on the NIC alone and has no PSNs: an ACK for the WRs around it must
// pass over it whatever the PSNs are (the upper half of the PSN space compares as "after" 0).
TEST_CASE("completer: an ACK completes the WRs behind a memory-window bind", "[completer]") {
    Rig rig;
    QpOptions o;
    o.sq_psn = 0x900000;
    Qp& qp = rig.create_qp(o);
    auto data = pattern(64);
    Mr& mr = rig.reg_mr(data.data(), data.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
    ipc::AllocMwReply mw{};
    REQUIRE(nicsim::alloc_mw(rig.ctx, {rig.pd, IBV_MW_TYPE_2}, mw) == 0);
    const nicsim::Mw& window = *rig.objects.mws.get(mw.handle);

    ipc::SendWqe bind = wqe(2, IBV_WR_BIND_MW);
    bind.imm_data = window.rkey;
    bind.rkey = (window.rkey & 0xffffff00) | ((window.rkey + 1) & 0xff); // ibv_inc_rkey
    bind.remote_addr = reinterpret_cast<uint64_t>(data.data());
    bind.compare_add = 32;
    bind.swap = mr.lkey;
    bind.remote_qkey = IBV_ACCESS_REMOTE_WRITE;
    rig.enqueue_send(qp, wqe(1, IBV_WR_SEND), {sge(data.data(), 8, mr)});
    rig.enqueue_send(qp, bind);
    rig.enqueue_send(qp, wqe(3, IBV_WR_SEND), {sge(data.data(), 8, mr)});
    rig.doorbell();
    REQUIRE(rig.env.take().size() == 2); // PSNs sq_psn and sq_psn + 1

    rig.deliver(qp, ack(psn(o.sq_psn, 1)));
    auto wcs = expect_wcs(*qp.send_cq,
                          {{.wr_id = 1}, {.wr_id = 2, .opcode = IBV_WC_BIND_MW}, {.wr_id = 3}});
    for (const ibv_wc& wc : wcs)
        CHECK(wc.status == IBV_WC_SUCCESS);
    CHECK(rig.env.timer(qp) == 0);
}
