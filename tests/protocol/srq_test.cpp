// SRQs: receives for several QPs from one queue, and the limit event (IBA 10.2.9.2).
#include "protocol_rig.h"

using namespace proto;

namespace {
constexpr uint32_t kE = 0x500; // the responder's first expected PSN (QpOptions::rq_psn)
} // namespace

TEST_CASE("srq: SENDs to two QPs consume one SRQ, and an armed limit raises its event once",
          "[srq]") {
    Rig rig;
    nicsim::Srq& srq = rig.create_srq(8, 1, 2); // limit 2: armed
    QpOptions o;
    o.srq = srq.handle;
    Qp& a = rig.create_qp(o);
    Qp& b = rig.create_qp(o);
    std::vector<uint8_t> buf(3 * 64);
    Mr& mr = rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    for (uint64_t i = 0; i < 3; ++i)
        rig.post_srq_recv(srq, 10 + i, {sge(&buf[i * 64], 64, mr)});
    auto data = pattern(32, 3);

    rig.deliver(a, request(wire::opcode::kSendOnly, kE), data.data(), data.size());
    CHECK(rig.env.events.empty()); // 2 left: not below the limit
    rig.deliver(b, request(wire::opcode::kSendOnly, kE), data.data(), data.size());
    REQUIRE(rig.env.events.size() == 1); // 1 left: below 2
    CHECK(rig.env.events[0].type == IBV_EVENT_SRQ_LIMIT_REACHED);
    CHECK(rig.env.events[0].handle == srq.handle);
    CHECK(srq.attr.srq_limit == 0); // disarmed until the app arms it again

    rig.deliver(a, request(wire::opcode::kSendOnly, kE + 1), data.data(), data.size());
    CHECK(rig.env.events.size() == 1);
    auto wa = Rig::poll(*a.recv_cq);
    auto wb = Rig::poll(*b.recv_cq);
    REQUIRE(wa.size() == 2);
    REQUIRE(wb.size() == 1);
    CHECK(wa[0].wr_id == 10);
    CHECK(wb[0].wr_id == 11);
    CHECK(wa[1].wr_id == 12);
    CHECK(bytes_of(buf, 64, 32) == data);
}
