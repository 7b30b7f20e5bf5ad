// Tag matching on an IBV_SRQT_TM SRQ: tag operations (ibv_post_srq_ops), EAGER messages into
// matching tags, unexpected and NO_TAG messages into ordinary receives, the unexpected count
// and its sync, RNDV as a READ the NIC issues followed by a FIN, and malformed TMHs.
#include "protocol_rig.h"

#include <infiniband/tm_types.h>

#include <endian.h>

using namespace proto;

namespace {

constexpr uint32_t kE = 0x500; // the responder's first expected PSN (QpOptions::rq_psn)

struct TmRig {
    Rig rig;
    Cq& cq = rig.create_cq(); // where the SRQ's tag operations complete
    nicsim::Srq& srq = make_srq();
    Qp& qp = make_qp();

    nicsim::Srq& make_srq() {
        ipc::CreateSrqExReq q{};
        q.pd = rig.pd;
        q.srq_type = IBV_SRQT_TM;
        q.cq = cq.handle;
        q.attr = {16, 1, 0};
        q.max_num_tags = 4;
        q.max_ops = 4;
        ipc::CreateSrqReply r{};
        REQUIRE(nicsim::create_srq_ex(rig.ctx, q, r) == 0);
        return *rig.objects.srqs.get(r.handle);
    }
    Qp& make_qp() {
        QpOptions o;
        o.srq = srq.handle;
        return rig.create_qp(o);
    }

    int op(ipc::SrqOpReq q, uint32_t* handle = nullptr) {
        q.srq = srq.handle;
        ipc::SrqOpReply r{};
        int err = nicsim::srq_ops(rig.ctx, q, r);
        if (handle) *handle = r.handle;
        return err;
    }
    uint32_t add(uint64_t tag, uint64_t recv_wr_id, const ipc::Sge& s, uint32_t flags = 0) {
        ipc::SrqOpReq q{};
        q.opcode = IBV_WR_TAG_ADD;
        q.flags = flags;
        q.wr_id = 100 + recv_wr_id;
        q.tag = tag;
        q.mask = 0xffff;
        q.recv_wr_id = recv_wr_id;
        q.num_sge = 1;
        q.sge = {s.addr, s.length, s.lkey};
        uint32_t handle = 0;
        REQUIRE(op(q, &handle) == 0);
        return handle;
    }
    void sync(uint32_t unexpected_cnt) {
        ipc::SrqOpReq q{};
        q.opcode = IBV_WR_TAG_SYNC;
        q.flags = IBV_OPS_SIGNALED | IBV_OPS_TM_SYNC;
        q.unexpected_cnt = unexpected_cnt;
        REQUIRE(op(q) == 0);
    }
};

// The completions written since the last poll, with their tags.
std::vector<ipc::Cqe> poll_cqes(Cq& cq) {
    std::vector<ipc::Cqe> out;
    ipc::RingHeader* h = cq.ring.header;
    uint32_t c = h->consumer.load();
    for (; c != h->producer.load(); ++c) {
        ipc::Cqe e;
        std::memcpy(&e, cq.ring.slot(c), sizeof e);
        out.push_back(e);
    }
    h->consumer.store(c);
    return out;
}

// A message: TMH (opcode, tag), then for RNDV the RVH, then `data`.
std::vector<uint8_t> message(uint8_t tm_op, uint64_t tag, const std::vector<uint8_t>& data,
                             const ibv_rvh* rvh = nullptr) {
    ibv_tmh tmh{};
    tmh.opcode = tm_op;
    tmh.tag = htobe64(tag);
    size_t head = sizeof tmh + (rvh ? sizeof *rvh : 0);
    std::vector<uint8_t> m(head + data.size());
    std::memcpy(m.data(), &tmh, sizeof tmh);
    if (rvh) std::memcpy(m.data() + sizeof tmh, rvh, sizeof *rvh);
    if (!data.empty()) std::memcpy(m.data() + head, data.data(), data.size());
    return m;
}

} // namespace

TEST_CASE("tm: an EAGER message lands after its TMH in the first tag that matches", "[tm]") {
    TmRig t;
    std::vector<uint8_t> buf(2 * 256);
    Mr& mr = t.rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    uint32_t h1 = t.add(0x10001, 1, sge(&buf[0], 256, mr), IBV_OPS_SIGNALED);
    uint32_t h2 = t.add(0x20002, 2, sge(&buf[256], 256, mr), IBV_OPS_SIGNALED);
    CHECK(h1 != h2);
    auto ops = poll_cqes(t.cq);
    REQUIRE(ops.size() == 2);
    CHECK(ops[0].wc.opcode == IBV_WC_TM_ADD);
    CHECK(ops[0].wc.wr_id == 101);
    CHECK(ops[1].wc.wr_id == 102);

    auto data = pattern(100, 5);
    auto m = message(IBV_TMH_EAGER, 0x30002, data); // matches tag 2 under mask 0xffff
    t.rig.deliver(t.qp, request(wire::opcode::kSendOnly, kE), m.data(), m.size());
    auto wcs = poll_cqes(*t.qp.recv_cq);
    REQUIRE(wcs.size() == 1);
    CHECK(wcs[0].wc.status == IBV_WC_SUCCESS);
    CHECK(wcs[0].wc.opcode == IBV_WC_TM_RECV);
    CHECK(wcs[0].wc.wc_flags == (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID));
    CHECK(wcs[0].wc.wr_id == 2);
    CHECK(wcs[0].wc.byte_len == 100);
    CHECK(wcs[0].tm_tag == 0x30002);
    CHECK(bytes_of(buf, 256, 100) == data);
    CHECK(t.srq.tm->tags.size() == 1); // tag 2 consumed
    CHECK(t.srq.tm->unexpected == 0);

    // DEL of the consumed tag fails in its completion; of the live one succeeds.
    ipc::SrqOpReq del{};
    del.opcode = IBV_WR_TAG_DEL;
    del.flags = IBV_OPS_SIGNALED;
    del.handle = h2;
    CHECK(t.op(del) == 0);
    del.handle = h1;
    CHECK(t.op(del) == 0);
    ops = poll_cqes(t.cq);
    REQUIRE(ops.size() == 2);
    CHECK(ops[0].wc.opcode == IBV_WC_TM_DEL);
    CHECK(ops[0].wc.status == IBV_WC_TM_ERR);
    CHECK(ops[1].wc.status == IBV_WC_SUCCESS);
    CHECK(t.srq.tm->tags.empty());
}

TEST_CASE("tm: unexpected messages go whole to ordinary receives until the app syncs", "[tm]") {
    TmRig t;
    std::vector<uint8_t> buf(4 * 256);
    Mr& mr = t.rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    t.rig.post_srq_recv(t.srq, 7, {sge(&buf[0], 256, mr)});
    t.rig.post_srq_recv(t.srq, 8, {sge(&buf[256], 256, mr)});

    auto m = message(IBV_TMH_EAGER, 0x1234, pattern(40, 1));
    t.rig.deliver(t.qp, request(wire::opcode::kSendOnly, kE), m.data(), m.size());
    auto wcs = poll_cqes(*t.qp.recv_cq);
    REQUIRE(wcs.size() == 1);
    CHECK(wcs[0].wc.opcode == IBV_WC_TM_RECV);
    CHECK(wcs[0].wc.wc_flags == 0);
    CHECK(wcs[0].wc.wr_id == 7);
    CHECK(wcs[0].wc.byte_len == m.size());
    CHECK(wcs[0].tm_tag == 0);
    CHECK(bytes_of(buf, 0, m.size()) == m);
    CHECK(t.srq.tm->unexpected == 1);

    // Out of sync: a tag added now does not match yet.
    t.add(0x1234, 3, sge(&buf[512], 256, mr));
    m = message(IBV_TMH_EAGER, 0x1234, pattern(40, 2));
    t.rig.deliver(t.qp, request(wire::opcode::kSendOnly, kE + 1), m.data(), m.size());
    wcs = poll_cqes(*t.qp.recv_cq);
    REQUIRE(wcs.size() == 1);
    CHECK(wcs[0].wc.wr_id == 8);
    CHECK(t.srq.tm->unexpected == 2);

    // The app reports both: the tag is live.
    t.sync(2);
    auto ops = poll_cqes(t.cq);
    REQUIRE(ops.size() == 1);
    CHECK(ops[0].wc.opcode == IBV_WC_TM_SYNC);
    auto data = pattern(40, 3);
    m = message(IBV_TMH_EAGER, 0x1234, data);
    t.rig.deliver(t.qp, request(wire::opcode::kSendOnly, kE + 2), m.data(), m.size());
    wcs = poll_cqes(*t.qp.recv_cq);
    REQUIRE(wcs.size() == 1);
    CHECK(wcs[0].wc.wr_id == 3);
    CHECK(wcs[0].wc.wc_flags == (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID));
    CHECK(bytes_of(buf, 512, 40) == data);

    // No ordinary receive left for an unexpected message: RNR NAK, nothing counted.
    t.rig.env.take();
    m = message(IBV_TMH_EAGER, 0x9999, pattern(8, 4));
    t.rig.deliver(t.qp, request(wire::opcode::kSendOnly, kE + 3), m.data(), m.size());
    auto sent = t.rig.env.take();
    REQUIRE(sent.size() == 1);
    CHECK(wire::classify(sent[0].h.aeth.syndrome).kind == wire::SyndromeKind::RnrNak);
    CHECK(t.srq.tm->unexpected == 2);
}

TEST_CASE("tm: NO_TAG messages complete as IBV_WC_TM_NO_TAG in ordinary receives", "[tm]") {
    TmRig t;
    std::vector<uint8_t> buf(256);
    Mr& mr = t.rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    t.add(0x55, 1, sge(&buf[0], 128, mr)); // would match, but NO_TAG never looks
    t.rig.post_srq_recv(t.srq, 9, {sge(&buf[128], 128, mr)});
    auto m = message(IBV_TMH_NO_TAG, 0x55, pattern(30, 6));
    t.rig.deliver(t.qp, request(wire::opcode::kSendOnly, kE), m.data(), m.size());
    auto wcs = poll_cqes(*t.qp.recv_cq);
    REQUIRE(wcs.size() == 1);
    CHECK(wcs[0].wc.opcode == IBV_WC_TM_NO_TAG);
    CHECK(wcs[0].wc.wc_flags == 0);
    CHECK(wcs[0].wc.wr_id == 9);
    CHECK(bytes_of(buf, 128, m.size()) == m);
    CHECK(t.srq.tm->tags.size() == 1);
    CHECK(t.srq.tm->unexpected == 0);
}

TEST_CASE("tm: RNDV reports the match, READs the sender's buffer, then DATA_VALID and a FIN",
          "[tm]") {
    TmRig t;
    std::vector<uint8_t> buf(256);
    Mr& mr = t.rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    t.add(0x42, 4, sge(buf.data(), 256, mr));
    ibv_rvh rvh{htobe64(0xabc000), htobe32(0x777), htobe32(200)};
    auto m = message(IBV_TMH_RNDV, 0x42, pattern(16, 7), &rvh); // with a user header
    t.rig.deliver(t.qp, request(wire::opcode::kSendOnly, kE), m.data(), m.size());
    auto wcs = poll_cqes(*t.qp.recv_cq);
    REQUIRE(wcs.size() == 1);
    CHECK(wcs[0].wc.opcode == IBV_WC_TM_RECV);
    CHECK(wcs[0].wc.wc_flags == IBV_WC_TM_MATCH);
    CHECK(wcs[0].wc.wr_id == 4);
    CHECK(wcs[0].tm_tag == 0x42);
    auto sent = t.rig.env.take(); // the SEND's ACK, then the READ request
    REQUIRE(sent.size() == 2);
    CHECK(sent[0].h.opcode == wire::opcode::kRcAcknowledge);
    CHECK(sent[1].h.opcode == rc(wire::opcode::kReadRequest));
    CHECK(sent[1].h.reth.va == 0xabc000);
    CHECK(sent[1].h.reth.rkey == 0x777);
    CHECK(sent[1].h.reth.length == 200);
    uint32_t read_psn = sent[1].h.psn;

    auto data = pattern(200, 8);
    t.rig.deliver(t.qp, read_response(wire::opcode::kReadResponseOnly, read_psn), data.data(),
                  data.size());
    CHECK(bytes_of(buf, 0, 200) == data);
    wcs = poll_cqes(*t.qp.recv_cq);
    REQUIRE(wcs.size() == 1);
    CHECK(wcs[0].wc.opcode == IBV_WC_TM_RECV);
    CHECK(wcs[0].wc.wc_flags == IBV_WC_TM_DATA_VALID);
    CHECK(wcs[0].wc.wr_id == 4);
    CHECK(wcs[0].wc.byte_len == 200);
    sent = t.rig.env.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].h.opcode == wire::opcode::kRcSendOnly);
    CHECK(sent[0].h.psn == psn(read_psn, 1));
    REQUIRE(sent[0].payload.size() >= sizeof(ibv_tmh));
    ibv_tmh fin;
    std::memcpy(&fin, sent[0].payload.data(), sizeof fin);
    CHECK(fin.opcode == IBV_TMH_FIN);
    CHECK(be64toh(fin.tag) == 0x42);
    // The peer ACKs the FIN: nothing reaches the (empty) send CQ.
    t.rig.deliver(t.qp, ack(psn(read_psn, 1)));
    CHECK(poll_cqes(*t.qp.send_cq).empty());
    CHECK(t.qp.req.ops.empty());
    CHECK(sq_consumer(t.qp) == 0);
}

TEST_CASE("tm: a RNDV larger than its tag's buffer fails that tag alone", "[tm]") {
    TmRig t;
    std::vector<uint8_t> buf(64);
    Mr& mr = t.rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    t.add(0x42, 4, sge(buf.data(), 64, mr));
    ibv_rvh rvh{htobe64(0xabc000), htobe32(0x777), htobe32(65)};
    auto m = message(IBV_TMH_RNDV, 0x42, {}, &rvh);
    t.rig.deliver(t.qp, request(wire::opcode::kSendOnly, kE), m.data(), m.size());
    auto wcs = poll_cqes(*t.qp.recv_cq);
    REQUIRE(wcs.size() == 2);
    CHECK(wcs[0].wc.wc_flags == IBV_WC_TM_MATCH);
    CHECK(wcs[1].wc.status == IBV_WC_LOC_LEN_ERR);
    CHECK(wcs[1].wc.wr_id == 4);
    CHECK(t.qp.attr.qp_state == IBV_QPS_RTS);
    auto sent = t.rig.env.take();
    REQUIRE(sent.size() == 1); // the ACK; no READ
    CHECK(sent[0].h.opcode == wire::opcode::kRcAcknowledge);
}

TEST_CASE("tm: malformed TMHs are counted and refused with a NAK, never delivered", "[tm]") {
    for (int variant = 0; variant < 3; ++variant) {
        TmRig t;
        std::vector<uint8_t> buf(256);
        Mr& mr = t.rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
        t.rig.post_srq_recv(t.srq, 1, {sge(buf.data(), 256, mr)});
        std::vector<uint8_t> m;
        if (variant == 0) m = pattern(8, 1);                           // shorter than a TMH
        if (variant == 1) m = message(IBV_TMH_FIN, 1, pattern(8, 1));  // FIN into a TM SRQ
        if (variant == 2) m = message(IBV_TMH_RNDV, 1, pattern(8, 1)); // RNDV without its RVH
        t.rig.deliver(t.qp, request(wire::opcode::kSendOnly, kE), m.data(), m.size());
        auto sent = t.rig.env.take();
        REQUIRE(sent.size() == 1);
        CHECK(sent[0].h.aeth.syndrome == wire::aeth_nak(wire::NakCode::InvalidRequest));
        CHECK(t.srq.tm->malformed == 1);
        CHECK(t.qp.counters.tm_malformed == 1);
        CHECK(t.qp.attr.qp_state == IBV_QPS_ERR);
    }
}

TEST_CASE("tm: tag operations refuse what mlx5 refuses", "[tm]") {
    TmRig t;
    std::vector<uint8_t> buf(64);
    Mr& mr = t.rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    ipc::SrqOpReq q{};
    q.opcode = 77;
    CHECK(t.op(q) == EINVAL);
    q.opcode = IBV_WR_TAG_ADD;
    q.flags = 1u << 7;
    CHECK(t.op(q) == EINVAL);
    q.flags = 0;
    q.num_sge = 2;
    CHECK(t.op(q) == EINVAL);
    q.num_sge = 1;
    q.sge = {reinterpret_cast<uint64_t>(buf.data()), 64, mr.lkey + 1};
    CHECK(t.op(q) == EINVAL); // no such lkey
    for (int i = 0; i < 4; ++i)
        t.add(i, i, sge(buf.data(), 64, mr));
    q.sge = {reinterpret_cast<uint64_t>(buf.data()), 64, mr.lkey};
    CHECK(t.op(q) == ENOMEM); // max_num_tags
    CHECK(poll_cqes(t.cq).empty());

    // Not a TM SRQ.
    nicsim::Srq& basic = t.rig.create_srq(4, 1, 0);
    ipc::SrqOpReply r{};
    q.srq = basic.handle;
    CHECK(nicsim::srq_ops(t.rig.ctx, q, r) == EINVAL);
    // Too many tags asked for at creation.
    ipc::CreateSrqExReq c{};
    c.pd = t.rig.pd;
    c.srq_type = IBV_SRQT_TM;
    c.cq = t.cq.handle;
    c.attr = {16, 1, 0};
    c.max_num_tags = ipc::kTmMaxNumTags + 1;
    ipc::CreateSrqReply cr{};
    CHECK(nicsim::create_srq_ex(t.rig.ctx, c, cr) == EINVAL);
}
