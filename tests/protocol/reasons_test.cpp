// Why: each refused request and failed WR says which rule, which key, which range, in the NIC's
// log and status (the host's recent errors), in the owning session's reason ring (what the app
// prints with RDMAEMU_EXPLAIN), and across the wire to the requester's NIC.
#include "protocol_rig.h"

#include <spdlog/fmt/fmt.h>

using namespace proto;

namespace {

std::string hex(uint64_t v) {
    return fmt::format("{:#x}", v);
}

// The rig's two QPs connected to each other: `a` requests, `b` responds.
struct Pair {
    Rig& rig;
    Qp& a;
    Qp& b;
    // Carries what `from` sent to `to` (ACKs, NAKs, requests alike).
    void carry(Qp& from, Qp& to) {
        for (const Sent& s : rig.env.take()) {
            if (s.from_qpn != from.qpn) continue;
            rig.deliver(to, s.h, s.payload.data(), s.payload.size());
        }
    }
};

Pair connect(Rig& rig, QpOptions o = {}) {
    Qp& a = rig.create_qp(o);
    o.dest_qpn = a.qpn;
    o.rq_psn = o.sq_psn; // b expects what a sends
    Qp& b = rig.create_qp(o);
    o.dest_qpn = b.qpn;
    a.attr.dest_qp_num = b.qpn;
    a.resp.epsn = b.attr.sq_psn;
    return {rig, a, b};
}

} // namespace

TEST_CASE("reasons: a WRITE with a wrong rkey names the rkeys of the responder's PD, nearest first",
          "[reasons]") {
    Rig rig;
    Pair p = connect(rig);
    std::vector<uint8_t> src(64, 1), target(4096, 0xEE);
    Mr& smr = rig.reg_mr(src.data(), src.size(), IBV_ACCESS_LOCAL_WRITE);
    Mr& tmr =
        rig.reg_mr(target.data(), target.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    const uint64_t va = reinterpret_cast<uint64_t>(target.data());
    const uint32_t wrong = tmr.rkey ^ 0x100;
    rig.post_send(p.a, rdma_wqe(7, IBV_WR_RDMA_WRITE, va, wrong), {sge(src.data(), 64, smr)});
    p.carry(p.a, p.b);

    // The responder's own words: the log and status, and its app's async event.
    std::string keys = fmt::format("the QP's PD has rkeys {} (mr#{}, 4096 bytes at {}), {} (mr#{}, "
                                   "64 bytes at {})",
                                   hex(tmr.rkey), tmr.handle, hex(va), hex(smr.rkey), smr.handle,
                                   hex(reinterpret_cast<uint64_t>(src.data())));
    std::string why = fmt::format("rkey {} names no MR; ", hex(wrong));
    CHECK(rig.last_error() ==
          fmt::format("RC_RDMA_WRITE_ONLY psn 0x100 from 127.0.0.2 qp {} refused (NAK remote "
                      "access error; QP to ERR): ",
                      hex(p.a.qpn)) +
              why + keys);
    REQUIRE(!rig.env.events.empty());
    CHECK(rig.env.events.back().type == IBV_EVENT_QP_ACCESS_ERR);
    CHECK(rig.reason_text(rig.env.events.back().reason) == why + keys);

    // The requester's: what the responder refused, said by the responder's NIC.
    p.carry(p.b, p.a);
    auto wcs = rig.poll_with_reasons(*p.a.send_cq);
    REQUIRE(wcs.size() == 1);
    CHECK(wcs[0].first.status == IBV_WC_REM_ACCESS_ERR);
    CHECK(wcs[0].second == "the responder refused the WRITE: " + why + keys);
    CHECK(rig.nic.hw().get(nicsim::HwCounter::RequestsRefused) == 1);
    CHECK(rig.nic.hw().get(nicsim::HwCounter::NaksSent) == 1);
    CHECK(rig.nic.hw().get(nicsim::HwCounter::NaksReceived) == 1);
}

TEST_CASE("reasons: a requester whose responder said nothing says what the NAK code means",
          "[reasons]") {
    Rig rig;
    Pair p = connect(rig);
    std::vector<uint8_t> src(64, 1), target(4096, 0xEE);
    Mr& smr = rig.reg_mr(src.data(), src.size(), IBV_ACCESS_LOCAL_WRITE);
    Mr& tmr = rig.reg_mr(target.data(), target.size(), IBV_ACCESS_LOCAL_WRITE);
    rig.post_send(
        p.a, rdma_wqe(7, IBV_WR_RDMA_WRITE, reinterpret_cast<uint64_t>(target.data()), tmr.rkey),
        {sge(src.data(), 64, smr)});
    p.carry(p.a, p.b);
    SECTION("no word from the responder's NIC (another machine, a real NIC)") {
        rig.env.told.clear();
        p.carry(p.b, p.a);
        auto wcs = rig.poll_with_reasons(*p.a.send_cq);
        REQUIRE(wcs.size() == 1);
        CHECK(wcs[0].second ==
              fmt::format("the responder (127.0.0.2 qp {}) refused the WRITE with NAK remote "
                          "access error: its rkey, the range against its MR or the MR's rights "
                          "do not allow the access",
                          hex(p.b.qpn)));
    }
    SECTION("the responder's QP is another user's: its rule, not its keys") {
        rig.env.told.back().second.owner_uid += 1;
        p.carry(p.b, p.a);
        auto wcs = rig.poll_with_reasons(*p.a.send_cq);
        REQUIRE(wcs.size() == 1);
        CHECK(wcs[0].second ==
              fmt::format("the responder refused the WRITE: mr#{} (rkey {}, 4096 bytes at {}) "
                          "does not allow IBV_ACCESS_REMOTE_WRITE: it was registered with "
                          "IBV_ACCESS_LOCAL_WRITE",
                          tmr.handle, hex(tmr.rkey),
                          hex(reinterpret_cast<uint64_t>(target.data()))));
    }
}

TEST_CASE("reasons: a WRITE past the MR's end gives both ranges", "[reasons]") {
    Rig rig;
    Qp& qp = rig.create_qp();
    std::vector<uint8_t> target(4096, 0xEE);
    Mr& mr =
        rig.reg_mr(target.data(), target.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    const uint64_t va = reinterpret_cast<uint64_t>(target.data());
    wire::Headers h = request(wire::opcode::kWriteOnly, 0x500);
    h.reth = {va + 4096 - 199, mr.rkey, 200};
    auto data = pattern(200);
    rig.deliver(qp, h, data.data(), 200);
    CHECK(rig.reason_text(rig.env.events.back().reason) ==
          fmt::format("the WRITE of 200 bytes at {} is not inside mr#{} (rkey {}, 4096 bytes at "
                      "{}): it ends 1 byte past the MR's end",
                      hex(va + 4096 - 199), mr.handle, hex(mr.rkey), hex(va)));
    SECTION("and one that starts before it") {
        Qp& qp2 = rig.create_qp();
        h.reth.va = va - 8;
        rig.deliver(qp2, h, data.data(), 200);
        CHECK(rig.reason_text(rig.env.events.back().reason) ==
              fmt::format("the WRITE of 200 bytes at {} is not inside mr#{} (rkey {}, 4096 bytes "
                          "at {}): it starts 8 bytes before the MR's start",
                          hex(va - 8), mr.handle, hex(mr.rkey), hex(va)));
    }
}

TEST_CASE("reasons: a QP without remote write access says which flag it lacks", "[reasons]") {
    Rig rig;
    QpOptions o;
    o.access = IBV_ACCESS_REMOTE_READ;
    Qp& qp = rig.create_qp(o);
    std::vector<uint8_t> target(256);
    Mr& mr =
        rig.reg_mr(target.data(), target.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    wire::Headers h = request(wire::opcode::kWriteOnly, 0x500);
    h.reth = {reinterpret_cast<uint64_t>(target.data()), mr.rkey, 16};
    auto data = pattern(16);
    rig.deliver(qp, h, data.data(), 16);
    CHECK(rig.reason_text(rig.env.events.back().reason) ==
          "the QP does not allow IBV_ACCESS_REMOTE_WRITE: its qp_access_flags are "
          "IBV_ACCESS_REMOTE_READ (set them at RESET->INIT)");
}

TEST_CASE("reasons: a bad lkey fails the WR locally, naming the lkeys of the QP's PD",
          "[reasons]") {
    Rig rig;
    Qp& qp = rig.create_qp();
    std::vector<uint8_t> src(512, 1);
    Mr& mr = rig.reg_mr(src.data(), src.size(), IBV_ACCESS_LOCAL_WRITE);
    ipc::Sge bad = sge(src.data(), 64, mr);
    bad.lkey ^= 0x8;
    rig.post_send(qp, wqe(9, IBV_WR_SEND), {bad});
    auto wcs = rig.poll_with_reasons(*qp.send_cq);
    REQUIRE(wcs.size() == 1);
    CHECK(wcs[0].first.status == IBV_WC_LOC_PROT_ERR);
    CHECK(wcs[0].second ==
          fmt::format("sge[0] lkey {} names no MR; the QP's PD has lkeys {} (mr#{}, 512 bytes at "
                      "{})",
                      hex(bad.lkey), hex(mr.lkey), mr.handle,
                      hex(reinterpret_cast<uint64_t>(src.data()))));
    CHECK(rig.last_error() == "IBV_WC_LOC_PROT_ERR for wr_id 9 (IBV_WR_SEND): " + wcs[0].second);
    SECTION("a WR posted to the QP in ERR is flushed with the same cause") {
        rig.post_send(qp, wqe(10, IBV_WR_SEND), {sge(src.data(), 64, mr)});
        auto flushed = rig.poll_with_reasons(*qp.send_cq);
        REQUIRE(flushed.size() == 1);
        CHECK(flushed[0].first.status == IBV_WC_WR_FLUSH_ERR);
        CHECK(flushed[0].second == wcs[0].second);
    }
}

TEST_CASE("reasons: RNR NAKs without end are noticed at 1, 10, 100, ... at most once a second",
          "[reasons]") {
    Rig rig;
    QpOptions o;
    o.rnr_retry = 7;
    Qp& qp = rig.create_qp(o);
    std::vector<uint8_t> src(64, 1);
    Mr& mr = rig.reg_mr(src.data(), src.size(), IBV_ACCESS_LOCAL_WRITE);
    rig.post_send(qp, wqe(1, IBV_WR_SEND), {sge(src.data(), 64, mr)});
    rig.env.take();
    auto notices = [&rig] {
        std::vector<std::string> out;
        for (const auto& e : rig.nic.errors().entries())
            if (e.kind == ipc::ReasonKind::Notice) out.push_back(e.text);
        return out;
    };
    for (int i = 1; i <= 10; ++i) {
        rig.deliver(qp, ack(0x100, wire::aeth_rnr_nak(1)));
        rig.env.advance(150'000);
        rig.env.take();
    }
    std::vector<std::string> n = notices();
    REQUIRE(n.size() == 2);
    CHECK(n[0] == "the peer (127.0.0.2 qp 0x123) has no receive posted for the SEND wr_id 1 (1 RNR "
                  "NAK so far); rnr_retry 7 retries forever");
    CHECK(n[1] == "the peer (127.0.0.2 qp 0x123) has no receive posted for the SEND wr_id 1 (10 "
                  "RNR NAKs so far); rnr_retry 7 retries forever");
    // The app finds them as notices in its ring.
    ipc::Reason r;
    REQUIRE(ipc::read_reason(rig.reasons, rig.reasons.last.load(), &r));
    CHECK(r.kind == ipc::ReasonKind::Notice);
    CHECK(r.qpn == qp.qpn);
    CHECK(rig.nic.hw().get(nicsim::HwCounter::RcvdRnrErr) == 10);
}

TEST_CASE("reasons: RNR and transport retries used up say how many and with what settings",
          "[reasons]") {
    Rig rig;
    QpOptions o;
    std::vector<uint8_t> src(64, 1);
    SECTION("rnr_retry 0") {
        o.rnr_retry = 0;
        Qp& qp = rig.create_qp(o);
        Mr& mr = rig.reg_mr(src.data(), src.size(), IBV_ACCESS_LOCAL_WRITE);
        rig.post_send(qp, wqe(1, IBV_WR_SEND), {sge(src.data(), 64, mr)});
        rig.deliver(qp, ack(0x100, wire::aeth_rnr_nak(1)));
        auto wcs = rig.poll_with_reasons(*qp.send_cq);
        REQUIRE(wcs.size() == 1);
        CHECK(wcs[0].first.status == IBV_WC_RNR_RETRY_EXC_ERR);
        CHECK(wcs[0].second == "the peer (127.0.0.2 qp 0x123) has no receive posted: 1 RNR NAK, "
                               "and rnr_retry 0 allows no more retries");
        CHECK(rig.nic.hw().get(nicsim::HwCounter::RetryRnrExceededErr) == 1);
    }
    SECTION("retry_cnt 1, timeout 10") {
        o.retry_cnt = 1;
        o.timeout = 10;
        Qp& qp = rig.create_qp(o);
        Mr& mr = rig.reg_mr(src.data(), src.size(), IBV_ACCESS_LOCAL_WRITE);
        rig.post_send(qp, wqe(1, IBV_WR_SEND), {sge(src.data(), 64, mr)});
        for (int i = 0; i < 3; ++i)
            rig.env.advance(10'000);
        auto wcs = rig.poll_with_reasons(*qp.send_cq);
        REQUIRE(wcs.size() == 1);
        CHECK(wcs[0].first.status == IBV_WC_RETRY_EXC_ERR);
        CHECK(wcs[0].second ==
              "no response from the peer (127.0.0.2 qp 0x123) for psn 0x100: sent 2 times, 4.2 ms "
              "apart (timeout 10, retry_cnt 1); its NIC or QP is gone, is not in RTR, or the path "
              "drops every packet");
        CHECK(rig.nic.hw().get(nicsim::HwCounter::RetryExceededErr) == 1);
        CHECK(rig.nic.hw().get(nicsim::HwCounter::Timeouts) == 2);
    }
}

TEST_CASE("reasons: ibv_modify_qp refusals name the attribute and the rule", "[reasons]") {
    Rig rig;
    Qp& qp = rig.create_qp(QpOptions{.state = IBV_QPS_RTR});
    Qp& fresh = [&rig]() -> Qp& {
        ipc::CreateQpReq q{};
        q.pd = rig.pd;
        q.send_cq = rig.create_cq().handle;
        q.recv_cq = q.send_cq;
        q.qp_type = IBV_QPT_RC;
        q.cap = {4, 4, 1, 1, 0};
        ipc::CreateQpReply r{};
        REQUIRE(nicsim::create_qp(rig.ctx, q, r) == 0);
        return *rig.objects.qps.get(r.handle);
    }();
    ipc::Empty e;
    ipc::ModifyQpReq m{};
    m.qp = fresh.handle;
    m.attr.qp_state = IBV_QPS_INIT;
    m.attr.port_num = 1;
    m.mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
    REQUIRE(nicsim::modify_qp(rig.ctx, m, e) == 0);
    m.attr.qp_state = IBV_QPS_RTR;
    m.attr.path_mtu = IBV_MTU_1024;
    m.mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_RQ_PSN |
             IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    m.attr.ah_attr.is_global = 1;
    m.attr.ah_attr.port_num = 1;
    SECTION("a required attribute missing") {
        CHECK(nicsim::modify_qp(rig.ctx, m, e) == EINVAL);
        CHECK(rig.ctx.reason == "IBV_QP_DEST_QPN missing for INIT->RTR on RC");
        CHECK(rig.ctx.reason_qpn == fresh.qpn);
    }
    SECTION("no GRH on a RoCE port") {
        m.mask |= IBV_QP_DEST_QPN;
        m.attr.ah_attr.is_global = 0;
        CHECK(nicsim::modify_qp(rig.ctx, m, e) == EINVAL);
        CHECK(rig.ctx.reason == "RoCE needs a GRH (set ah_attr.is_global, -g in the pingpongs)");
    }
    SECTION("a path MTU that is none") {
        m.mask |= IBV_QP_DEST_QPN;
        m.attr.path_mtu = static_cast<ibv_mtu>(9);
        CHECK(nicsim::modify_qp(rig.ctx, m, e) == EINVAL);
        CHECK(rig.ctx.reason == "path_mtu 9 is not an enum ibv_mtu (IBV_MTU_256 .. IBV_MTU_4096)");
    }
    SECTION("a transition that does not exist") {
        ipc::ModifyQpReq back{};
        back.qp = qp.handle;
        back.attr.qp_state = IBV_QPS_INIT;
        back.mask = IBV_QP_STATE;
        CHECK(nicsim::modify_qp(rig.ctx, back, e) == EINVAL);
        CHECK(rig.ctx.reason == "RTR->INIT is not a legal transition on RC (IBA 11.2.1: "
                                "RESET->INIT->RTR->RTS; any state ->RESET, ->ERR)");
    }
}
