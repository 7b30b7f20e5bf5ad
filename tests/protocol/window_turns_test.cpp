// The host's window in turns (engines.h wait_for_turn): a QP that finds the window full with
// nothing in flight waits in the host's queue; freed room goes to the queue's first QPs in turns
// of kTurnBytes, each sent as one burst; one QP at a time may escape past a full window with
// kMinWindowBytes; what a QP held of the window comes back when it is destroyed.
#include "protocol_rig.h"

#include <map>

using namespace proto;
using nicsim::transport::host_window_bytes;
using nicsim::transport::kMinWindowBytes;
using nicsim::transport::kTurnBytes;

namespace {

struct TurnsRig {
    Rig rig;
    QpOptions o;
    uint32_t mtu = 4096;
    std::vector<uint8_t> buf = std::vector<uint8_t>(1u << 20);
    Mr* mr = nullptr;

    TurnsRig() {
        o.mtu = IBV_MTU_4096;
        // rmem_max 212992, doubled by the kernel: a window of 208 KiB, 52 packets.
        rig.nic.set_link_receive_buffer(425984);
        mr = &rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    }
    // A WRITE of `len` bytes on `qp`, its doorbell rung.
    void write(Qp& qp, uint32_t len) {
        rig.post_send(qp, rdma_wqe(1, IBV_WR_RDMA_WRITE, 0x100000, 0x5),
                      {sge(buf.data(), len, *mr)});
    }
    std::map<uint32_t, std::vector<wire::Headers>> sent_by_qp() {
        std::map<uint32_t, std::vector<wire::Headers>> by_qp;
        for (const Sent& s : rig.env.take())
            by_qp[s.from_qpn].push_back(s.h);
        return by_qp;
    }
};

} // namespace

TEST_CASE("window turns: QPs that find the window full wait, then send in turns of kTurnBytes",
          "[requester]") {
    TurnsRig t;
    const uint64_t window = host_window_bytes(t.rig.nic);
    REQUIRE(window == 212992);
    Qp& a = t.rig.create_qp(t.o);
    t.write(a, 1u << 20); // more than the window
    auto sent = t.sent_by_qp();
    const size_t a_sent = sent[a.qpn].size();
    CHECK(a_sent * t.mtu >= window);
    CHECK(a_sent * t.mtu <= window + t.mtu); // at most one packet past it, asking for an ACK
    CHECK(sent[a.qpn].back().ack_req);

    // B, C, D come while the window is full: B escapes with kMinWindowBytes, C and D wait.
    Qp& b = t.rig.create_qp(t.o);
    Qp& c = t.rig.create_qp(t.o);
    Qp& d = t.rig.create_qp(t.o);
    for (Qp* q : {&b, &c, &d})
        t.write(*q, 128u << 10);
    sent = t.sent_by_qp();
    CHECK(sent[b.qpn].size() == kMinWindowBytes / t.mtu);
    CHECK(sent[b.qpn].back().ack_req);
    CHECK(sent[c.qpn].empty());
    CHECK(sent[d.qpn].empty());
    CHECK(t.rig.nic.window_escape_qpn() == b.qpn);
    CHECK(t.rig.nic.window_queue().size() == 2);

    // At most one packet past the window for each QP that was sending, besides the escape.
    const uint64_t bound = window + 4 * t.mtu + kMinWindowBytes;
    SECTION("A's window, acknowledged, goes to C and D first, a turn of kTurnBytes each") {
        t.rig.deliver(a, ack(psn(t.o.sq_psn, static_cast<int64_t>(a_sent) - 1)));
        const auto all = t.rig.env.take();
        // Each turn is one burst of its QP's packets (in a row), C's first: it queued first.
        const size_t turn = kTurnBytes / t.mtu;
        auto burst_of = [&](uint32_t qpn) {
            std::vector<size_t> at;
            for (size_t i = 0; i < all.size(); ++i)
                if (all[i].from_qpn == qpn) at.push_back(i);
            return at;
        };
        const std::vector<size_t> at_c = burst_of(c.qpn), at_d = burst_of(d.qpn);
        REQUIRE(at_c.size() == turn);
        REQUIRE(at_d.size() == turn);
        CHECK(at_c.back() - at_c.front() == turn - 1);
        CHECK(at_d.back() - at_d.front() == turn - 1);
        CHECK(at_c.front() < at_d.front());
        CHECK(all[at_c.back()].h.ack_req); // the turn's last packet asks for the ACK
        // A, whose ACK freed the room, sends only what the turns left of it.
        CHECK(t.rig.nic.bytes_in_flight() <= bound);
        CHECK(t.rig.nic.window_reserved() == 0); // both turns sent whole
        CHECK(t.rig.nic.window_queue().empty());
    }
    SECTION("B's escape, acknowledged, passes to the queue's first QP") {
        t.rig.deliver(b, ack(psn(t.o.sq_psn, kMinWindowBytes / t.mtu - 1)));
        sent = t.sent_by_qp();
        CHECK(sent[c.qpn].size() == kMinWindowBytes / t.mtu);
        CHECK(sent[d.qpn].empty());
        CHECK(t.rig.nic.window_escape_qpn() == c.qpn);
    }
    SECTION("a QP waiting out an RNR NAK holds neither the window nor the escape") {
        // B's peer has no receive posted (and might never have: rnr_retry 7).
        t.rig.deliver(b, ack(t.o.sq_psn, wire::aeth_rnr_nak(14)));
        CHECK(b.req.counted_in_flight == 0);
        sent = t.sent_by_qp();
        CHECK(sent[c.qpn].size() == kMinWindowBytes / t.mtu); // the escape passed on
        CHECK(t.rig.nic.window_escape_qpn() == c.qpn);
        // So does A's whole share: D gets a turn.
        t.rig.deliver(a, ack(t.o.sq_psn, wire::aeth_rnr_nak(14)));
        CHECK(a.req.counted_in_flight == 0);
        sent = t.sent_by_qp();
        CHECK(sent[d.qpn].size() >= kTurnBytes / t.mtu);
        // When B's wait ends, what it sends again counts again.
        t.rig.env.advance(t.rig.env.timer(b) - t.rig.env.now_us());
        CHECK(b.req.counted_in_flight == kMinWindowBytes);
    }
    SECTION("a destroyed QP's share of the window goes to those waiting") {
        ipc::HandleReq q{a.handle, 0};
        ipc::Empty e;
        REQUIRE(nicsim::destroy_qp(t.rig.ctx, q, e) == 0);
        t.rig.env.drain();
        sent = t.sent_by_qp();
        CHECK(sent[c.qpn].size() >= kTurnBytes / t.mtu);
        CHECK(sent[d.qpn].size() >= kTurnBytes / t.mtu);
        CHECK(t.rig.nic.bytes_in_flight() <= bound);
        CHECK(t.rig.nic.window_reserved() == 0);
        CHECK(t.rig.nic.window_queue().empty());
    }
}
