// The requester: what send WRs become on the wire (segmentation at the path MTU, PSNs, AckReq,
// extension headers), and what holds packets back (window, read/atomic credits, fence).
#include "protocol_rig.h"

using namespace proto;

namespace {

uint8_t opcode_at(const Sent& s) {
    return s.bytes[0];
}

} // namespace

TEST_CASE("requester: a 3000 byte SEND at MTU 1024 is FIRST MIDDLE LAST", "[requester]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    auto data = pattern(3000);
    Mr& mr = rig.reg_mr(data.data(), data.size(), IBV_ACCESS_LOCAL_WRITE);

    rig.post_send(qp, wqe(1, IBV_WR_SEND), {sge(data.data(), data.size(), mr)});

    auto sent = rig.env.take();
    REQUIRE(sent.size() == 3);
    const uint8_t ops[] = {rc(wire::opcode::kSendFirst), rc(wire::opcode::kSendMiddle),
                           rc(wire::opcode::kSendLast)};
    const size_t lens[] = {1024, 1024, 952};
    size_t offset = 0;
    for (size_t i = 0; i < 3; ++i) {
        INFO("packet " << i);
        const Sent& s = sent[i];
        CHECK(s.h.opcode == ops[i]);
        CHECK(opcode_at(s) == ops[i]);
        CHECK(s.h.psn == psn(o.sq_psn, i));
        CHECK(s.h.dest_qpn == kPeerQpn);
        CHECK(s.h.pkey == 0xFFFF);
        CHECK(s.h.tver == 0);
        CHECK(s.h.ack_req == (i == 2)); // AckReq on the last packet of the message only
        CHECK(s.dst_addr == ipv4(kPeerAddress));
        CHECK(s.payload == bytes_of(data, offset, lens[i]));
        offset += lens[i];
    }
    // Nothing completes before the ACK; the retransmit timer runs.
    CHECK(Rig::poll(*qp.send_cq).empty());
    CHECK(sq_consumer(qp) == 0);
    CHECK(rig.env.timer(qp) == rig.env.now + retransmit_timeout_us(o.timeout));
}

TEST_CASE("requester: small SENDs are ONLY packets with pad and consecutive PSNs", "[requester]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    auto data = pattern(64);
    Mr& mr = rig.reg_mr(data.data(), data.size(), IBV_ACCESS_LOCAL_WRITE);

    rig.enqueue_send(qp, wqe(1, IBV_WR_SEND), {sge(data.data(), 5, mr)});
    rig.enqueue_send(qp, wqe(2, IBV_WR_SEND), {}); // zero length
    rig.enqueue_send(qp, wqe(3, IBV_WR_SEND), {sge(data.data(), 10, mr), sge(&data[20], 6, mr)});
    rig.doorbell();

    auto sent = rig.env.take();
    REQUIRE(sent.size() == 3);
    for (size_t i = 0; i < 3; ++i) {
        CHECK(sent[i].h.opcode == rc(wire::opcode::kSendOnly));
        CHECK(sent[i].h.psn == psn(o.sq_psn, i));
        CHECK(sent[i].h.ack_req);
    }
    CHECK(sent[0].payload == bytes_of(data, 0, 5));
    CHECK(sent[0].h.pad_count == 3);
    CHECK(sent[0].bytes.size() == 12 + 5 + 3 + 4);
    CHECK(sent[1].payload.empty());
    std::vector<uint8_t> gathered = bytes_of(data, 0, 10);
    auto tail = bytes_of(data, 20, 6);
    gathered.insert(gathered.end(), tail.begin(), tail.end());
    CHECK(sent[2].payload == gathered);
}

TEST_CASE("requester: PSNs wrap modulo 2^24", "[requester]") {
    Rig rig;
    QpOptions o;
    o.sq_psn = 0xFFFFFF;
    Qp& qp = rig.create_qp(o);
    auto data = pattern(3000);
    Mr& mr = rig.reg_mr(data.data(), data.size(), IBV_ACCESS_LOCAL_WRITE);

    rig.post_send(qp, wqe(1, IBV_WR_SEND), {sge(data.data(), data.size(), mr)});
    auto sent = rig.env.take();
    REQUIRE(sent.size() == 3);
    CHECK(sent[0].h.psn == 0xFFFFFF);
    CHECK(sent[1].h.psn == 0);
    CHECK(sent[2].h.psn == 1);

    rig.deliver(qp, ack(1));
    expect_wcs(*qp.send_cq, {{}});
}

TEST_CASE("requester: SEND with immediate and solicited event and SEND with invalidate",
          "[requester]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    auto data = pattern(1500);
    Mr& mr = rig.reg_mr(data.data(), data.size(), IBV_ACCESS_LOCAL_WRITE);

    ipc::SendWqe imm = wqe(1, IBV_WR_SEND_WITH_IMM, IBV_SEND_SIGNALED | IBV_SEND_SOLICITED);
    imm.imm_data = htonl(0x11223344); // __be32, as the app gives it
    rig.enqueue_send(qp, imm, {sge(data.data(), data.size(), mr)});
    ipc::SendWqe inv = wqe(2, IBV_WR_SEND_WITH_INV);
    inv.imm_data = 0xCAFE0102; // the rkey to invalidate, host order (ibv_send_wr.invalidate_rkey)
    rig.enqueue_send(qp, inv, {sge(data.data(), 16, mr)});
    rig.doorbell();

    auto sent = rig.env.take();
    REQUIRE(sent.size() == 3);
    CHECK(sent[0].h.opcode == rc(wire::opcode::kSendFirst));
    CHECK_FALSE(sent[0].h.se);
    CHECK(sent[1].h.opcode == rc(wire::opcode::kSendLastImm));
    CHECK(sent[1].h.se); // solicited event on the last packet
    // ImmDt right after the BTH, the app's bytes as they are.
    const uint8_t imm_bytes[] = {0x11, 0x22, 0x33, 0x44};
    CHECK(std::memcmp(&sent[1].bytes[12], imm_bytes, 4) == 0);
    CHECK(sent[1].payload == bytes_of(data, 1024, 476));

    CHECK(sent[2].h.opcode == rc(wire::opcode::kSendOnlyInv));
    CHECK(sent[2].h.ieth_rkey == 0xCAFE0102);
    const uint8_t ieth_bytes[] = {0xCA, 0xFE, 0x01, 0x02};
    CHECK(std::memcmp(&sent[2].bytes[12], ieth_bytes, 4) == 0);
}

TEST_CASE("requester: RDMA WRITE carries the RETH on its first packet only", "[requester]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    auto data = pattern(2500);
    Mr& mr = rig.reg_mr(data.data(), data.size(), IBV_ACCESS_LOCAL_WRITE);
    const uint64_t va = 0x7f0000001000;
    const uint32_t rkey = 0xabcdef;

    rig.post_send(qp, rdma_wqe(1, IBV_WR_RDMA_WRITE, va, rkey),
                  {sge(data.data(), data.size(), mr)});
    auto sent = rig.env.take();
    REQUIRE(sent.size() == 3);
    CHECK(sent[0].h.opcode == rc(wire::opcode::kWriteFirst));
    CHECK(sent[0].h.reth.va == va);
    CHECK(sent[0].h.reth.rkey == rkey);
    CHECK(sent[0].h.reth.length == 2500);
    CHECK(sent[0].payload == bytes_of(data, 0, 1024));
    CHECK(sent[1].h.opcode == rc(wire::opcode::kWriteMiddle));
    CHECK(sent[2].h.opcode == rc(wire::opcode::kWriteLast));
    for (size_t i = 1; i < 3; ++i) {
        CHECK_FALSE(wire::has(sent[i].h.opcode, wire::kHasReth));
        CHECK(sent[i].bytes.size() == 12 + sent[i].payload.size() + 4); // BTH + payload + ICRC
    }
    CHECK(sent[2].payload == bytes_of(data, 2048, 452));
    CHECK(sent[2].h.ack_req);
    CHECK_FALSE(sent[0].h.ack_req);

    SECTION("a single packet WRITE is WRITE_ONLY with RETH; WRITE_WITH_IMM ends in LAST_IMM") {
        rig.enqueue_send(qp, rdma_wqe(2, IBV_WR_RDMA_WRITE, va + 8, rkey),
                         {sge(data.data(), 100, mr)});
        ipc::SendWqe w = rdma_wqe(3, IBV_WR_RDMA_WRITE_WITH_IMM, va, rkey);
        w.imm_data = htonl(0xA1B2C3D4);
        rig.enqueue_send(qp, w, {sge(data.data(), 1500, mr)});
        rig.doorbell();
        sent = rig.env.take();
        REQUIRE(sent.size() == 3);
        CHECK(sent[0].h.opcode == rc(wire::opcode::kWriteOnly));
        CHECK(sent[0].h.reth.va == va + 8);
        CHECK(sent[0].h.reth.length == 100);
        CHECK(sent[0].h.psn == psn(o.sq_psn, 3));
        CHECK(sent[1].h.opcode == rc(wire::opcode::kWriteFirst));
        CHECK(sent[1].h.reth.length == 1500);
        CHECK(sent[2].h.opcode == rc(wire::opcode::kWriteLastImm));
        const uint8_t imm_bytes[] = {0xA1, 0xB2, 0xC3, 0xD4};
        CHECK(std::memcmp(&sent[2].bytes[12], imm_bytes, 4) == 0);
    }
}

TEST_CASE("requester: AckReq at least every 32 packets of a long message", "[requester]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    auto data = pattern(40 * 1024);
    Mr& mr = rig.reg_mr(data.data(), data.size(), IBV_ACCESS_LOCAL_WRITE);

    rig.post_send(qp, rdma_wqe(1, IBV_WR_RDMA_WRITE, 0x1000, 0x55),
                  {sge(data.data(), data.size(), mr)});
    auto sent = rig.env.take();
    REQUIRE(sent.size() == 40);
    for (size_t i = 0; i < 40; ++i) {
        INFO("packet " << i);
        CHECK(sent[i].h.ack_req == (i == 31 || i == 39));
    }
}

TEST_CASE("requester: RDMA READ is one READ_REQUEST and uses one PSN per response packet",
          "[requester]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    std::vector<uint8_t> buf(3000);
    Mr& mr = rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    const uint64_t va = 0x10000;

    rig.enqueue_send(qp, rdma_wqe(1, IBV_WR_RDMA_READ, va, 0x77),
                     {sge(buf.data(), buf.size(), mr)});
    rig.enqueue_send(qp, wqe(2, IBV_WR_SEND), {sge(buf.data(), 8, mr)});
    rig.doorbell();

    auto sent = rig.env.take();
    REQUIRE(sent.size() == 2);
    CHECK(sent[0].h.opcode == rc(wire::opcode::kReadRequest));
    CHECK(sent[0].h.psn == o.sq_psn);
    CHECK(sent[0].h.reth.va == va);
    CHECK(sent[0].h.reth.rkey == 0x77);
    CHECK(sent[0].h.reth.length == 3000);
    CHECK(sent[0].h.ack_req);
    CHECK(sent[0].payload.empty());
    CHECK(sent[0].bytes.size() == 12 + 16 + 4);
    // ceil(3000 / 1024) = 3 PSNs for the READ: the next request gets sq_psn + 3.
    CHECK(sent[1].h.opcode == rc(wire::opcode::kSendOnly));
    CHECK(sent[1].h.psn == psn(o.sq_psn, 3));
}

TEST_CASE("requester: atomics carry the AtomicETH", "[requester]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    alignas(8) uint64_t result[2] = {};
    Mr& mr = rig.reg_mr(result, sizeof result, IBV_ACCESS_LOCAL_WRITE);

    ipc::SendWqe cas = rdma_wqe(1, IBV_WR_ATOMIC_CMP_AND_SWP, 0x2000, 0x99);
    cas.compare_add = 5;
    cas.swap = 9;
    rig.enqueue_send(qp, cas, {sge(&result[0], 8, mr)});
    ipc::SendWqe fadd = rdma_wqe(2, IBV_WR_ATOMIC_FETCH_AND_ADD, 0x2008, 0x99);
    fadd.compare_add = 7;
    rig.enqueue_send(qp, fadd, {sge(&result[1], 8, mr)});
    rig.doorbell();

    auto sent = rig.env.take();
    REQUIRE(sent.size() == 2);
    CHECK(sent[0].h.opcode == rc(wire::opcode::kCompareSwap));
    CHECK(sent[0].h.psn == o.sq_psn);
    CHECK(sent[0].h.atomic_eth.va == 0x2000);
    CHECK(sent[0].h.atomic_eth.rkey == 0x99);
    CHECK(sent[0].h.atomic_eth.swap_add == 9);
    CHECK(sent[0].h.atomic_eth.compare == 5);
    CHECK(sent[0].h.ack_req);
    CHECK(sent[0].bytes.size() == 12 + 28 + 4);
    CHECK(sent[1].h.opcode == rc(wire::opcode::kFetchAdd));
    CHECK(sent[1].h.psn == psn(o.sq_psn, 1));
    CHECK(sent[1].h.atomic_eth.va == 0x2008);
    CHECK(sent[1].h.atomic_eth.swap_add == 7);
    CHECK(sent[1].h.atomic_eth.compare == 0);
}

TEST_CASE("requester: inline data goes out from the WQE itself", "[requester]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    auto data = pattern(40, 9);

    rig.enqueue_send_inline(qp, wqe(1, IBV_WR_SEND), data.data(), 40);
    rig.enqueue_send_inline(qp, rdma_wqe(2, IBV_WR_RDMA_WRITE, 0x3000, 0x42), data.data(), 33);
    rig.doorbell();

    auto sent = rig.env.take();
    REQUIRE(sent.size() == 2);
    CHECK(sent[0].h.opcode == rc(wire::opcode::kSendOnly));
    CHECK(sent[0].payload == data);
    CHECK(sent[1].h.opcode == rc(wire::opcode::kWriteOnly));
    CHECK(sent[1].h.reth.length == 33);
    CHECK(sent[1].payload == bytes_of(data, 0, 33));
    CHECK(rig.env.fake_dma.reads == 0); // no DMA: the bytes were in the ring

    rig.deliver(qp, ack(psn(o.sq_psn, 1)));
    expect_wcs(*qp.send_cq, {{}, {}});
}

TEST_CASE("requester: no more than kWindow unacknowledged PSNs in flight", "[requester]") {
    const uint32_t window = nicsim::transport::kWindow;
    const uint32_t n = window + 72; // SENDs, one PSN each
    Rig rig;
    QpOptions o;
    o.max_send_wr = 2 * window;
    Qp& qp = rig.create_qp(o);
    auto data = pattern(64);
    Mr& mr = rig.reg_mr(data.data(), data.size(), IBV_ACCESS_LOCAL_WRITE);

    for (uint64_t i = 0; i < n; ++i)
        rig.enqueue_send(qp, wqe(i, IBV_WR_SEND), {sge(data.data(), 8, mr)});
    rig.doorbell();
    auto sent = rig.env.take();
    REQUIRE(sent.size() == window);
    for (size_t i = 0; i < sent.size(); ++i)
        CHECK(sent[i].h.psn == psn(o.sq_psn, i));

    // A coalesced ACK for the first 10 opens the window by 10.
    rig.deliver(qp, ack(psn(o.sq_psn, 9)));
    CHECK(Rig::poll(*qp.send_cq).size() == 10);
    sent = rig.env.take();
    REQUIRE(sent.size() == 10);
    CHECK(sent.front().h.psn == psn(o.sq_psn, window));
    CHECK(sent.back().h.psn == psn(o.sq_psn, window + 9));

    SECTION("the window holds within one long message too") {
        rig.deliver(qp, ack(psn(o.sq_psn, window + 9)));
        CHECK(Rig::poll(*qp.send_cq).size() == window);
        CHECK(rig.env.take().size() == 62); // the rest of the n
        rig.deliver(qp, ack(psn(o.sq_psn, n - 1)));
        CHECK(Rig::poll(*qp.send_cq).size() == 62);
        CHECK(sq_consumer(qp) == n);
        std::vector<uint8_t> big((window + 100) * 1024);
        Mr& bmr = rig.reg_mr(big.data(), big.size(), IBV_ACCESS_LOCAL_WRITE);
        rig.post_send(qp, rdma_wqe(500, IBV_WR_RDMA_WRITE, 0x1000, 0x1),
                      {sge(big.data(), big.size(), bmr)});
        sent = rig.env.take();
        REQUIRE(sent.size() == window);
        CHECK(sent.back().h.psn == psn(o.sq_psn, n + window - 1));
        rig.deliver(qp, ack(psn(o.sq_psn, n + 31)));
        CHECK(rig.env.take().size() == 32);
    }
}

TEST_CASE("requester: READs and atomics wait for max_rd_atomic credits", "[requester]") {
    Rig rig;
    QpOptions o;
    o.max_rd_atomic = 2;
    Qp& qp = rig.create_qp(o);
    std::vector<uint8_t> buf(4096);
    Mr& mr = rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);

    rig.enqueue_send(qp, rdma_wqe(1, IBV_WR_RDMA_READ, 0x1000, 0x5), {sge(&buf[0], 100, mr)});
    ipc::SendWqe fadd = rdma_wqe(2, IBV_WR_ATOMIC_FETCH_AND_ADD, 0x2000, 0x5);
    fadd.compare_add = 1;
    rig.enqueue_send(qp, fadd, {sge(&buf[1024], 8, mr)});
    rig.enqueue_send(qp, rdma_wqe(3, IBV_WR_RDMA_READ, 0x1000, 0x5), {sge(&buf[2048], 100, mr)});
    rig.enqueue_send(qp, wqe(4, IBV_WR_SEND), {sge(&buf[3072], 10, mr)});
    rig.doorbell();

    auto sent = rig.env.take();
    REQUIRE(sent.size() == 2); // the third READ has no credit, and the SEND waits behind it
    CHECK(sent[0].h.opcode == rc(wire::opcode::kReadRequest));
    CHECK(sent[1].h.opcode == rc(wire::opcode::kFetchAdd));

    rig.doorbell(); // another kick changes nothing
    CHECK(rig.env.take().empty());

    // The first READ's response returns its credit.
    auto remote = pattern(100);
    rig.deliver(qp, read_response(wire::opcode::kReadResponseOnly, o.sq_psn), remote.data(), 100);
    sent = rig.env.take();
    REQUIRE(sent.size() == 2);
    CHECK(sent[0].h.opcode == rc(wire::opcode::kReadRequest));
    CHECK(sent[0].h.psn == psn(o.sq_psn, 2));
    CHECK(sent[1].h.opcode == rc(wire::opcode::kSendOnly));
    CHECK(sent[1].h.psn == psn(o.sq_psn, 3));
}

TEST_CASE("requester: a fenced WR waits for the READs before it", "[requester]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    std::vector<uint8_t> buf(4096);
    Mr& mr = rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);

    SECTION("without the fence a SEND follows a READ at once") {
        rig.enqueue_send(qp, rdma_wqe(1, IBV_WR_RDMA_READ, 0x1000, 0x5), {sge(&buf[0], 64, mr)});
        rig.enqueue_send(qp, wqe(2, IBV_WR_SEND), {sge(&buf[1024], 10, mr)});
        rig.doorbell();
        CHECK(rig.env.take().size() == 2);
    }
    SECTION("with IBV_SEND_FENCE it goes when the READ has completed") {
        rig.enqueue_send(qp, rdma_wqe(1, IBV_WR_RDMA_READ, 0x1000, 0x5), {sge(&buf[0], 64, mr)});
        rig.enqueue_send(qp, wqe(2, IBV_WR_SEND, IBV_SEND_SIGNALED | IBV_SEND_FENCE),
                         {sge(&buf[1024], 10, mr)});
        rig.doorbell();
        auto sent = rig.env.take();
        REQUIRE(sent.size() == 1);
        CHECK(sent[0].h.opcode == rc(wire::opcode::kReadRequest));

        auto remote = pattern(64);
        rig.deliver(qp, read_response(wire::opcode::kReadResponseOnly, o.sq_psn), remote.data(),
                    64);
        sent = rig.env.take();
        REQUIRE(sent.size() == 1);
        CHECK(sent[0].h.opcode == rc(wire::opcode::kSendOnly));
        CHECK(sent[0].h.psn == psn(o.sq_psn, 1));
    }
}

// A WR that fails the requester's local checks (here an unknown lkey; the same for an
// over-long inline WR or an invalid opcode) is not sent and completes, in order, with its error.
TEST_CASE("requester: a WR with a bad lkey completes with IBV_WC_LOC_PROT_ERR", "[requester]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    auto data = pattern(64);
    Mr& mr = rig.reg_mr(data.data(), data.size(), IBV_ACCESS_LOCAL_WRITE);
    ipc::Sge bad = sge(data.data(), 8, mr);
    bad.lkey ^= 0x5a5a;

    rig.enqueue_send(qp, wqe(1, IBV_WR_SEND), {bad});
    rig.enqueue_send(qp, wqe(2, IBV_WR_SEND), {sge(data.data(), 8, mr)});
    rig.doorbell();
    rig.env.advance(10 * retransmit_timeout_us(o.timeout));

    CHECK(rig.env.take().empty()); // nothing of it reaches the wire
    expect_wcs(*qp.send_cq, {{.wr_id = 1, .status = IBV_WC_LOC_PROT_ERR},
                             {.wr_id = 2, .status = IBV_WC_WR_FLUSH_ERR}});
    CHECK(sq_consumer(qp) == 2);
    CHECK(qp.attr.qp_state == IBV_QPS_ERR);
}

TEST_CASE("requester: local memory gone at send time fails the WR with IBV_WC_LOC_PROT_ERR",
          "[requester]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    auto data = pattern(64);
    Mr& mr = rig.reg_mr(data.data(), data.size(), IBV_ACCESS_LOCAL_WRITE);

    rig.env.fake_dma.fail = true;
    rig.enqueue_send(qp, wqe(1, IBV_WR_SEND), {sge(data.data(), 8, mr)});
    rig.enqueue_send(qp, wqe(2, IBV_WR_SEND), {sge(data.data(), 8, mr)});
    rig.doorbell();

    CHECK(rig.env.take().empty());
    expect_wcs(*qp.send_cq,
               {{.wr_id = 1, .status = IBV_WC_LOC_PROT_ERR}, {.status = IBV_WC_WR_FLUSH_ERR}});
    CHECK(qp.attr.qp_state == IBV_QPS_ERR);
}

TEST_CASE("requester: WRs posted before RTS go out when the QP reaches RTS", "[requester]") {
    Rig rig;
    QpOptions o;
    o.state = IBV_QPS_RTR;
    Qp& qp = rig.create_qp(o);
    auto data = pattern(64);
    Mr& mr = rig.reg_mr(data.data(), data.size(), IBV_ACCESS_LOCAL_WRITE);

    rig.post_send(qp, wqe(1, IBV_WR_SEND), {sge(data.data(), 8, mr)});
    CHECK(rig.env.take().empty());
    rig.to_rts(qp, o);
    auto sent = rig.env.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].h.psn == o.sq_psn);
}

// As rxe, a caller's IBV_QP_CUR_STATE stands in for the QP's state when the transition is
// checked; what the QP leaves is still its real state.
TEST_CASE("requester: WRs posted in SQD go out at SQD->RTS, also when the modify says it is in "
          "RTS",
          "[requester]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    auto data = pattern(64);
    Mr& mr = rig.reg_mr(data.data(), data.size(), IBV_ACCESS_LOCAL_WRITE);
    ipc::ModifyQpReq m{};
    ipc::Empty e;
    m.qp = qp.handle;
    m.attr.qp_state = IBV_QPS_SQD;
    m.mask = IBV_QP_STATE;
    REQUIRE(nicsim::modify_qp(rig.ctx, m, e) == 0);

    rig.post_send(qp, wqe(1, IBV_WR_SEND), {sge(data.data(), 8, mr)});
    CHECK(rig.env.take().empty());
    m.attr.qp_state = IBV_QPS_RTS;
    m.attr.cur_qp_state = IBV_QPS_RTS;
    m.mask = IBV_QP_STATE | IBV_QP_CUR_STATE;
    REQUIRE(nicsim::modify_qp(rig.ctx, m, e) == 0);
    CHECK(qp.attr.qp_state == IBV_QPS_RTS);
    rig.env.drain();
    CHECK(rig.env.take().size() == 1);
}

TEST_CASE("requester: an ATOMIC WRITE carries its 8 bytes after the RETH and completes on the ACK",
          "[requester]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    ipc::SendWqe w = rdma_wqe(4, IBV_WR_ATOMIC_WRITE, 0x3000, 0x77);
    const uint8_t value[8] = {'c', 'c', 'c', 'c', 'c', 'c', 'c', 'c'};
    std::memcpy(&w.compare_add, value, 8); // as ibv_wr_atomic_write stores them
    rig.post_send(qp, w, {});

    auto sent = rig.env.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].h.opcode == rc(wire::opcode::kAtomicWrite));
    CHECK(sent[0].h.reth.va == 0x3000);
    CHECK(sent[0].h.reth.rkey == 0x77);
    CHECK(sent[0].h.reth.length == 8);
    CHECK(sent[0].h.ack_req);
    REQUIRE(sent[0].bytes.size() == 12 + 16 + 8 + 4); // BTH, RETH, data, ICRC
    CHECK(std::memcmp(sent[0].bytes.data() + 28, value, 8) == 0);

    rig.deliver(qp, ack(o.sq_psn));
    expect_wcs(*qp.send_cq, {{.opcode = IBV_WC_ATOMIC_WRITE}});
}
