// A QP's rings: one memfd with the SQ ring and the RQ ring on the next cache line after it, so a
// small SQ's header and the RQ's share the one page an idle QP's rings cost the NIC.
#include "protocol_rig.h"

#include <cstring>

using namespace proto;

namespace {

ipc::CreateQpReply make_qp(Rig& rig, uint32_t send_wr, uint32_t recv_wr, uint32_t srq = 0) {
    Cq& cq = rig.create_cq();
    ipc::CreateQpReq q{};
    q.pd = rig.pd;
    q.send_cq = q.recv_cq = cq.handle;
    q.qp_type = IBV_QPT_RC;
    q.srq = srq;
    q.cap.max_send_wr = send_wr;
    q.cap.max_recv_wr = recv_wr;
    q.cap.max_send_sge = q.cap.max_recv_sge = 1;
    ipc::CreateQpReply r{};
    RIG_REQUIRE(nicsim::create_qp(rig.ctx, q, r) == 0);
    rig.ctx.pass_fds.clear();
    return r;
}

} // namespace

TEST_CASE("qp rings: perftest's idle caps put both ring headers on one page", "[qp_rings]") {
    Rig rig;
    ipc::CreateQpReply r = make_qp(rig, 1, 500);
    CHECK(r.sq_entries == 1);
    CHECK(r.rq_entries == 512);
    CHECK(r.rq_offset == ipc::ring_span(r.sq_entries, r.sq_wqe_size));
    CHECK(r.rq_offset % 64 == 0);
    CHECK(r.rq_offset < 4096);
    CHECK(r.ring_bytes == ipc::pages_for(r.rq_offset + ipc::ring_span(512, r.rq_wqe_size)));
}

TEST_CASE("qp rings: a full SQ never reaches the RQ's header or slots", "[qp_rings]") {
    Rig rig;
    ipc::CreateQpReply r = make_qp(rig, 100, 16);
    REQUIRE(r.sq_entries == 128);
    CHECK(r.rq_offset >= ipc::kRingDataOffset + size_t(r.sq_entries) * r.sq_wqe_size);
    CHECK(r.rq_offset % 64 == 0);
    Qp& qp = *rig.objects.qps.get(r.handle);
    char* base = static_cast<char*>(qp.memory.data());
    REQUIRE(reinterpret_cast<char*>(qp.rq.header) == base + r.rq_offset);
    for (uint32_t i = 0; i < r.sq_entries; ++i)
        std::memset(ipc::ring_slot(qp.sq.header, i, r.sq_entries, r.sq_wqe_size), 0xAA,
                    r.sq_wqe_size);
    CHECK(qp.rq.header->entries == r.rq_entries);
    CHECK(qp.rq.header->entry_size == r.rq_wqe_size);
    CHECK(qp.rq.header->producer.load() == 0);
    char* last_rq = ipc::ring_slot(qp.rq.header, r.rq_entries - 1, r.rq_entries, r.rq_wqe_size);
    CHECK(last_rq + r.rq_wqe_size <= base + r.ring_bytes);
}

TEST_CASE("qp rings: a QP with an SRQ has the SQ ring alone", "[qp_rings]") {
    Rig rig;
    uint32_t srq = rig.create_srq(16, 1, 0).handle;
    ipc::CreateQpReply r = make_qp(rig, 1, 0, srq);
    CHECK(r.rq_entries == 0);
    CHECK(r.ring_bytes == ipc::ring_bytes(r.sq_entries, r.sq_wqe_size));
}
