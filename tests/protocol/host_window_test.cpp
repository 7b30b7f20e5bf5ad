// The host's window (engines.h host_window_bytes): bytes in flight across all reliable QPs of a
// host, a path MTU per PSN, at every MTU: kHostWindowBytes, or half the link's receive buffer.
// Past it a QP sends only its first kMinWindowBytes, and stops only after a packet that asks for
// an ACK; what each QP sent stops counting when it is acknowledged, flushed or destroyed.
#include "protocol_rig.h"

#include <algorithm>
#include <map>

using namespace proto;
using nicsim::transport::host_window_bytes;
using nicsim::transport::kAckEvery;
using nicsim::transport::kHostWindowBytes;
using nicsim::transport::kMinWindowBytes;
using nicsim::transport::kWindow;

TEST_CASE("requester: the host's window shares the receivers' buffers among its QPs",
          "[requester]") {
    Rig rig;
    QpOptions o;
    o.mtu = GENERATE(IBV_MTU_1024, IBV_MTU_4096);
    const uint32_t mtu = 128u << o.mtu;
    CAPTURE(mtu);
    // No link (the rig's), or one whose receive buffer the kernel capped (rmem_max 208 KiB,
    // doubled).
    rig.nic.set_link_receive_buffer(GENERATE(uint64_t(0), uint64_t(425984)));
    const uint64_t window = host_window_bytes(rig.nic);
    CAPTURE(window);
    // QPs whose whole windows fill the host's: 8 at MTU 1024, 2 at 4096; 1 in a small one.
    const uint32_t full = static_cast<uint32_t>(window / (uint64_t(kWindow) * mtu));
    const uint32_t min_window = kMinWindowBytes / mtu;
    std::vector<uint8_t> buf(2 * kWindow * mtu);
    Mr& mr = rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    std::vector<Qp*> qps;
    for (uint32_t i = 0; i <= std::max(full, 2u); ++i) // the sections below use three
        qps.push_back(&rig.create_qp(o));
    // Each QP writes 2 windows' worth.
    for (Qp* qp : qps)
        rig.enqueue_send(*qp, rdma_wqe(1, IBV_WR_RDMA_WRITE, 0x100000, 0x5),
                         {sge(buf.data(), buf.size(), mr)});
    rig.doorbell();
    auto sent = rig.env.take();
    // Together they fill the host's window and pass it by less than an ACK interval each: each
    // stops at the first packet past it that asks for an ACK, which it then waits for.
    const uint64_t bound = window + qps.size() * kAckEvery * mtu;
    CHECK(rig.nic.bytes_in_flight() == sent.size() * mtu);
    CHECK(sent.size() * mtu >= window);
    CHECK(sent.size() * mtu <= bound);
    std::map<uint32_t, std::vector<wire::Headers>> by_qp;
    for (const Sent& s : sent)
        by_qp[s.from_qpn].push_back(s.h);
    uint64_t counted = 0;
    for (Qp* qp : qps) {
        const std::vector<wire::Headers>& mine = by_qp[qp->qpn];
        REQUIRE(!mine.empty());
        CHECK(mine.size() < kWindow); // none reached its own window: the host's closed first
        CHECK(mine.back().ack_req);
        CHECK(qp->req.counted_in_flight == mine.size() * mtu);
        counted += qp->req.counted_in_flight;
    }
    CHECK(counted == rig.nic.bytes_in_flight());

    SECTION("a QP that starts while the host's window is full sends kMinWindowBytes") {
        Qp& late = rig.create_qp(o);
        rig.post_send(late, rdma_wqe(2, IBV_WR_RDMA_WRITE, 0x100000, 0x5),
                      {sge(buf.data(), buf.size(), mr)});
        sent = rig.env.take();
        REQUIRE(sent.size() == min_window);
        for (uint32_t i = 0; i < min_window; ++i)
            CHECK(sent[i].h.ack_req == (i + 1 == min_window));
        CHECK(late.req.counted_in_flight == kMinWindowBytes);
        qps.push_back(&late);
    }

    // An ACK of all the first QP sent returns its share, and the others go on with it.
    const size_t first = by_qp[qps[0]->qpn].size();
    rig.deliver(*qps[0], ack(psn(o.sq_psn, static_cast<uint32_t>(first) - 1)));
    sent = rig.env.take();
    CHECK(sent.size() + kAckEvery * qps.size() >= first);
    CHECK(rig.nic.bytes_in_flight() <= bound);
    counted = 0;
    for (Qp* qp : qps)
        counted += qp->req.counted_in_flight;
    CHECK(counted == rig.nic.bytes_in_flight());

    SECTION("a destroyed QP's packets stop counting") {
        const uint64_t before = rig.nic.bytes_in_flight();
        const uint64_t held = qps[1]->req.counted_in_flight;
        REQUIRE(held > 0);
        ipc::HandleReq q{qps[1]->handle, 0};
        ipc::Empty e;
        REQUIRE(nicsim::destroy_qp(rig.ctx, q, e) == 0);
        CHECK(rig.nic.bytes_in_flight() == before - held);
    }
    SECTION("a QP in ERR holds none") {
        const uint64_t before = rig.nic.bytes_in_flight();
        const uint64_t held = qps[2]->req.counted_in_flight;
        REQUIRE(held > 0);
        nicsim::transport::to_error(rig.env, *qps[2], 0);
        CHECK(rig.nic.bytes_in_flight() == before - held);
        CHECK(qps[2]->req.counted_in_flight == 0);
    }
}

TEST_CASE("the host's window is half the link's receive buffer, at most kHostWindowBytes",
          "[requester]") {
    Rig rig;
    CHECK(host_window_bytes(rig.nic) == kHostWindowBytes); // no link
    rig.nic.set_link_receive_buffer(425984);               // rmem_max 212992, doubled
    CHECK(host_window_bytes(rig.nic) == 212992);
    rig.nic.set_link_receive_buffer(16u << 20); // the 8 MiB a NIC with CAP_NET_ADMIN asks for
    CHECK(host_window_bytes(rig.nic) == kHostWindowBytes);
}
