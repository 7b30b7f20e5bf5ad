// Responses the QP never asked for (IBA 9.7.5.1): ACKs, NAKs, READ responses and atomic ACKs
// whose PSN lies outside the outstanding range, from the oldest unacknowledged PSN to the
// newest one sent, are ghosts: ignored and counted per QP and per host. Older PSNs are
// harmless duplicates. This is what stops forged ACKs and NAKs with guessed PSNs.
#include "protocol_rig.h"

using namespace proto;

TEST_CASE("ghost responses: an ACK beyond the PSNs sent acknowledges nothing", "[ghost]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    auto data = pattern(64);
    Mr& mr = rig.reg_mr(data.data(), data.size(), IBV_ACCESS_LOCAL_WRITE);
    for (uint64_t i = 1; i <= 3; ++i)
        rig.enqueue_send(qp, wqe(i, IBV_WR_SEND), {sge(data.data(), 8, mr)});
    rig.doorbell();
    REQUIRE(rig.env.take().size() == 3); // PSNs sq_psn .. sq_psn + 2
    const uint64_t deadline = rig.env.timer(qp);

    // The first PSN not sent yet, and one far ahead.
    rig.deliver(qp, ack(psn(o.sq_psn, 3)));
    rig.deliver(qp, ack(psn(o.sq_psn, 0x4000)));
    CHECK(Rig::poll(*qp.send_cq).empty());
    CHECK(sq_consumer(qp) == 0);
    CHECK(rig.env.take().empty());
    CHECK(rig.env.timer(qp) == deadline); // not progress: the timer runs on
    CHECK(qp.counters.drops.ghost_responses == 2);
    CHECK(rig.nic.drops().ghost_responses == 2);

    // The peer's real ACK still completes all three.
    rig.deliver(qp, ack(psn(o.sq_psn, 2)));
    auto wcs = Rig::poll(*qp.send_cq);
    REQUIRE(wcs.size() == 3);
    for (const ibv_wc& wc : wcs)
        CHECK(wc.status == IBV_WC_SUCCESS);

    SECTION("with nothing outstanding, every newer PSN is a ghost") {
        rig.deliver(qp, ack(psn(o.sq_psn, 3)));
        CHECK(qp.counters.drops.ghost_responses == 3);
        CHECK(qp.attr.qp_state == IBV_QPS_RTS);
    }
    SECTION("an older PSN is a duplicate, not a ghost") {
        rig.deliver(qp, ack(psn(o.sq_psn, 1)));
        rig.deliver(qp, ack(psn(o.sq_psn, -100)));
        CHECK(qp.counters.drops.ghost_responses == 2);
        CHECK(qp.counters.drops.duplicate_responses == 2);
        CHECK(rig.nic.drops().duplicate_responses == 2);
        CHECK(Rig::poll(*qp.send_cq).empty());
    }
}

// A long message is sent as far as the window allows: its PSNs beyond are not sent yet, and
// an ACK for one of them must not move the window.
TEST_CASE("ghost responses: an ACK for a PSN of a message not sent that far is a ghost",
          "[ghost]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    const uint32_t window = nicsim::transport::kWindow;
    std::vector<uint8_t> data((window + 72) * 1024);
    Mr& mr = rig.reg_mr(data.data(), data.size(), IBV_ACCESS_LOCAL_WRITE);
    rig.post_send(qp, wqe(1, IBV_WR_SEND), {sge(data.data(), data.size(), mr)});
    REQUIRE(rig.env.take().size() == window);

    rig.deliver(qp, ack(psn(o.sq_psn, window + 22)));
    CHECK(rig.env.take().empty()); // the window did not move
    CHECK(qp.counters.drops.ghost_responses == 1);

    rig.deliver(qp, ack(psn(o.sq_psn, 49)));
    CHECK(rig.env.take().size() == 50); // a real ACK moves it by 50 PSNs
}

TEST_CASE("ghost responses: a NAK outside the outstanding PSNs fails no WR", "[ghost]") {
    auto syndrome =
        GENERATE(wire::aeth_nak(wire::NakCode::PsnSequenceError),
                 wire::aeth_nak(wire::NakCode::InvalidRequest),
                 wire::aeth_nak(wire::NakCode::RemoteAccessError),
                 wire::aeth_nak(wire::NakCode::RemoteOperationalError), wire::aeth_rnr_nak(31));
    CAPTURE(static_cast<int>(syndrome));
    Rig rig;
    QpOptions o;
    o.rnr_retry = 0; // an RNR NAK obeyed would fail the WR at once
    Qp& qp = rig.create_qp(o);
    auto data = pattern(64);
    Mr& mr = rig.reg_mr(data.data(), data.size(), IBV_ACCESS_LOCAL_WRITE);
    for (uint64_t i = 1; i <= 3; ++i)
        rig.enqueue_send(qp, wqe(i, IBV_WR_SEND), {sge(data.data(), 8, mr)});
    rig.doorbell();
    REQUIRE(rig.env.take().size() == 3);

    rig.deliver(qp, ack(psn(o.sq_psn, 3), syndrome));    // not sent yet
    rig.deliver(qp, ack(psn(o.sq_psn, 5000), syndrome)); // far ahead
    rig.deliver(qp, ack(psn(o.sq_psn, -1), syndrome));   // before the oldest unacknowledged
    CHECK(Rig::poll(*qp.send_cq).empty());
    CHECK(rig.env.take().empty()); // no go-back-N either
    CHECK(qp.attr.qp_state == IBV_QPS_RTS);
    CHECK(qp.counters.drops.ghost_responses == 2);
    CHECK(qp.counters.drops.duplicate_responses == 1);
    CHECK(qp.counters.naks_received == 0);
    CHECK(qp.counters.rnr_naks_received == 0);

    // New work goes out at once (no RNR wait was started) and completes normally.
    rig.post_send(qp, wqe(4, IBV_WR_SEND), {sge(data.data(), 8, mr)});
    REQUIRE(rig.env.take().size() == 1);
    rig.deliver(qp, ack(psn(o.sq_psn, 3)));
    auto wcs = Rig::poll(*qp.send_cq);
    REQUIRE(wcs.size() == 4);
    for (const ibv_wc& wc : wcs)
        CHECK(wc.status == IBV_WC_SUCCESS);

    SECTION("with nothing outstanding a NAK is a ghost whatever its PSN") {
        rig.deliver(qp, ack(psn(o.sq_psn, 4), syndrome));
        CHECK(qp.attr.qp_state == IBV_QPS_RTS);
        CHECK(qp.counters.drops.ghost_responses == 3);
        rig.post_send(qp, wqe(5, IBV_WR_SEND), {sge(data.data(), 8, mr)});
        CHECK(rig.env.take().size() == 1);
    }
}

TEST_CASE("ghost responses: READ responses outside the READ's requested PSNs are dropped",
          "[ghost]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    std::vector<uint8_t> buf(3000, 0xEE);
    Mr& mr = rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    auto remote = pattern(3000, 4);
    auto forged = pattern(1024, 9);

    rig.post_send(qp, rdma_wqe(1, IBV_WR_RDMA_READ, 0x10000, 0x5),
                  {sge(buf.data(), buf.size(), mr)});
    REQUIRE(rig.env.take().size() == 1); // PSNs sq_psn .. sq_psn + 2

    // Beyond the READ: not a gap in its responses (which would ask again), a ghost.
    rig.deliver(qp, read_response(wire::opcode::kReadResponseOnly, psn(o.sq_psn, 3)), forged.data(),
                1024);
    rig.deliver(qp, read_response(wire::opcode::kReadResponseFirst, psn(o.sq_psn, 700)),
                forged.data(), 1024);
    // Before it: a duplicate.
    rig.deliver(qp, read_response(wire::opcode::kReadResponseOnly, psn(o.sq_psn, -1)),
                forged.data(), 1024);
    CHECK(rig.env.take().empty());
    CHECK(buf == std::vector<uint8_t>(3000, 0xEE));
    CHECK(qp.counters.drops.ghost_responses == 2);
    CHECK(qp.counters.drops.duplicate_responses == 1);

    rig.deliver(qp, read_response(wire::opcode::kReadResponseFirst, o.sq_psn), remote.data(), 1024);
    wire::Headers middle;
    middle.opcode = rc(wire::opcode::kReadResponseMiddle);
    middle.psn = psn(o.sq_psn, 1);
    rig.deliver(qp, middle, &remote[1024], 1024);
    rig.deliver(qp, read_response(wire::opcode::kReadResponseLast, psn(o.sq_psn, 2)), &remote[2048],
                952);
    CHECK(buf == remote);
    expect_wcs(*qp.send_cq, {{}});
}

TEST_CASE("ghost responses: a READ response while no READ waits is a ghost", "[ghost]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    auto data = pattern(64);
    Mr& mr = rig.reg_mr(data.data(), data.size(), IBV_ACCESS_LOCAL_WRITE);
    rig.post_send(qp, wqe(1, IBV_WR_SEND), {sge(data.data(), 8, mr)});
    REQUIRE(rig.env.take().size() == 1);

    rig.deliver(qp, read_response(wire::opcode::kReadResponseOnly, o.sq_psn), data.data(), 8);
    CHECK(Rig::poll(*qp.send_cq).empty());
    CHECK(qp.counters.drops.ghost_responses == 1);
    CHECK(rig.nic.drops().ghost_responses == 1);
}

TEST_CASE("ghost responses: an atomic ACK beyond the PSNs sent writes nothing", "[ghost]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    alignas(8) uint64_t result = ~0ull;
    Mr& mr = rig.reg_mr(&result, sizeof result, IBV_ACCESS_LOCAL_WRITE);
    ipc::SendWqe fadd = rdma_wqe(1, IBV_WR_ATOMIC_FETCH_AND_ADD, 0x2000, 0x9);
    fadd.compare_add = 1;
    rig.post_send(qp, fadd, {sge(&result, 8, mr)});
    REQUIRE(rig.env.take().size() == 1);

    wire::Headers h;
    h.opcode = rc(wire::opcode::kAtomicAcknowledge);
    h.psn = psn(o.sq_psn, 1);
    h.aeth = {wire::aeth_ack(), 1};
    h.atomic_ack = 0xBAD;
    rig.deliver(qp, h);
    CHECK(result == ~0ull);
    CHECK(Rig::poll(*qp.send_cq).empty());
    CHECK(qp.counters.drops.ghost_responses == 1);

    h.psn = o.sq_psn;
    h.atomic_ack = 41;
    rig.deliver(qp, h);
    CHECK(result == 41);
    CHECK(Rig::poll(*qp.send_cq).size() == 1);
}
