// The requests of a long READ (kReadChunk response packets each) count one by one against
// max_rd_atomic: the responder remembers only max_dest_rd_atomic requests to answer again, and
// one it forgot leaves a retransmitted request unanswered until RETRY_EXC_ERR. (Found by the
// soak: a small READ whose last response was lost, behind it long READs of 16 requests.)
#include "protocol_rig.h"

using namespace proto;

TEST_CASE("requester: every request of a long READ takes one of the max_rd_atomic credits",
          "[requester]") {
    Rig rig;
    QpOptions o;
    o.max_rd_atomic = 2;
    Qp& qp = rig.create_qp(o);
    const uint32_t chunk = nicsim::transport::kReadChunk * 1024; // bytes one request asks for
    std::vector<uint8_t> buf(4 * chunk + 4096);
    Mr& mr = rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);

    // One READ of four requests' worth, then a small READ.
    rig.enqueue_send(qp, rdma_wqe(1, IBV_WR_RDMA_READ, 0x100000, 0x5),
                     {sge(&buf[0], 4 * chunk, mr)});
    rig.enqueue_send(qp, rdma_wqe(2, IBV_WR_RDMA_READ, 0x900000, 0x5),
                     {sge(&buf[4 * chunk], 100, mr)});
    rig.doorbell();
    auto sent = rig.env.take();
    REQUIRE(sent.size() == 2); // two requests of the long READ: the credits are gone
    CHECK(sent[0].h.reth.va == 0x100000);
    CHECK(sent[1].h.reth.va == 0x100000 + chunk);
    CHECK(sent[1].h.psn == psn(o.sq_psn, nicsim::transport::kReadChunk));

    // The first request's responses are in: its credit goes to the next request.
    auto remote = pattern(chunk);
    for (uint32_t i = 0; i < nicsim::transport::kReadChunk; ++i) {
        uint8_t op = i == 0 ? wire::opcode::kReadResponseFirst : wire::opcode::kReadResponseMiddle;
        rig.deliver(qp, read_response(op, psn(o.sq_psn, i)), remote.data() + i * 1024, 1024);
    }
    sent = rig.env.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].h.opcode == rc(wire::opcode::kReadRequest));
    CHECK(sent[0].h.reth.va == 0x100000 + 2 * chunk);
    CHECK(rig.env.take().empty());
}

TEST_CASE("requester: a READ resumed inside a request still counts the responder's requests",
          "[requester]") {
    Rig rig;
    QpOptions o;
    o.max_rd_atomic = 2;
    Qp& qp = rig.create_qp(o);
    const uint32_t n = nicsim::transport::kReadChunk;
    std::vector<uint8_t> buf(4 * n * 1024);
    Mr& mr = rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    rig.enqueue_send(qp, rdma_wqe(1, IBV_WR_RDMA_READ, 0x100000, 0x5),
                     {sge(buf.data(), buf.size(), mr)});
    rig.doorbell();
    REQUIRE(rig.env.take().size() == 2); // requests at 0 and n

    // All of the first request's responses and 10 of the second's: the third request goes.
    auto remote = pattern(1024);
    for (uint32_t i = 0; i < n + 10; ++i) {
        uint8_t op = i == 0 ? wire::opcode::kReadResponseFirst : wire::opcode::kReadResponseMiddle;
        rig.deliver(qp, read_response(op, psn(o.sq_psn, i)), remote.data(), 1024);
    }
    auto sent = rig.env.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].h.psn == psn(o.sq_psn, 2 * n));

    // The rest is lost: the timeout resumes at n + 10, inside the responder's second request,
    // which with the third it still holds. The resumed request ends where the second ended (a
    // duplicate asks only for part of a request the responder remembers); the third is asked
    // again as it was. Nothing beyond the two credits goes.
    rig.env.advance(retransmit_timeout_us(o.timeout) + 1);
    sent = rig.env.take();
    REQUIRE(sent.size() == 2);
    CHECK(sent[0].h.psn == psn(o.sq_psn, n + 10));
    CHECK(sent[0].h.reth.va == 0x100000 + (n + 10) * 1024);
    CHECK(sent[0].h.reth.length == (n - 10) * 1024);
    CHECK(sent[1].h.psn == psn(o.sq_psn, 2 * n));
    CHECK(sent[1].h.reth.va == 0x100000 + 2 * n * 1024);
    CHECK(sent[1].h.reth.length == n * 1024);
}
