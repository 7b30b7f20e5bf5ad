// Two NICs over a wire that loses, duplicates and reorders packets on the test's word
// (two_nic_rig.h): go-back-N after a NAK (IBA 9.7.5.1.1), the retransmit timer when nothing
// comes back (9.7.6.1.1), duplicates acknowledged and not executed again (9.7.5.1.2), RNR waits
// (9.7.5.2.8), a lost READ response, and a long run at 5% loss both ways, every byte checked.
#include "two_nic_rig.h"

#include <random>

using namespace proto;

namespace {

constexpr uint32_t kPsn = 0x100; // both QPs' first PSN (QpOptions::sq_psn)
constexpr size_t kMtu = 1024;

bool is_ack(const wire::Headers& h) {
    return h.opcode == wire::opcode::kRcAcknowledge;
}
bool is_seq_nak(const wire::Headers& h) {
    wire::Syndrome s = wire::classify(h.aeth.syndrome);
    return is_ack(h) && s.kind == wire::SyndromeKind::Nak &&
           s.value == static_cast<uint8_t>(wire::NakCode::PsnSequenceError);
}
bool is_rnr_nak(const wire::Headers& h) {
    return is_ack(h) && wire::classify(h.aeth.syndrome).kind == wire::SyndromeKind::RnrNak;
}
auto at_psn(uint32_t p) {
    return [p](const wire::Headers& h) { return !is_ack(h) && h.psn == p; };
}

// Drops the first packet from `side` that `match` finds; delivers everything else.
TwoNicRig::FaultPlan drop_first(int side, const std::function<bool(const wire::Headers&)>& match) {
    return [side, match, done = false](int from, const Sent& s, size_t) mutable {
        if (done || from != side || !match(s.h)) return Fate::Deliver;
        done = true;
        return Fate::Drop;
    };
}

// A connected pair, a send buffer on a and a receive buffer on b, with their MRs.
struct Pair {
    explicit Pair(TwoNicRig& rig, size_t len, QpOptions o = {})
        : src(pattern(len, 3)), dst(len, 0) {
        std::tie(qa, qb) = rig.connect(o, o);
        src_mr = &rig.a.reg_mr(src.data(), len, IBV_ACCESS_LOCAL_WRITE);
        dst_mr = &rig.b.reg_mr(dst.data(), len,
                               IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                   IBV_ACCESS_REMOTE_READ);
    }
    std::vector<uint8_t> src, dst;
    Qp* qa = nullptr;
    Qp* qb = nullptr;
    Mr* src_mr = nullptr;
    Mr* dst_mr = nullptr;
};

// b posts a receive for all of dst, a SENDs all of src.
void send_all(TwoNicRig& rig, Pair& p, uint64_t wr_id = 1) {
    rig.b.post_recv(*p.qb, 100 + wr_id, {sge(p.dst.data(), p.dst.size(), *p.dst_mr)});
    rig.a.post_send(*p.qa, wqe(wr_id, IBV_WR_SEND), {sge(p.src.data(), p.src.size(), *p.src_mr)});
}

void expect_delivered(Pair& p, uint64_t wr_id = 1) {
    expect_wcs(*p.qa->send_cq, {{.wr_id = wr_id, .opcode = IBV_WC_SEND}});
    expect_wcs(*p.qb->recv_cq, {{.wr_id = 100 + wr_id,
                                 .opcode = IBV_WC_RECV,
                                 .byte_len = static_cast<uint32_t>(p.src.size())}});
    CHECK(p.dst == p.src);
}

const uint64_t kTimeoutUs = retransmit_timeout_us(QpOptions{}.timeout) + 1;

} // namespace

TEST_CASE("two NICs: a 16-packet SEND over a clean wire arrives whole, each packet once") {
    TwoNicRig rig;
    Pair p(rig, 16 * kMtu);
    send_all(rig, p);
    rig.run();
    expect_delivered(p);
    CHECK(rig.count(0, [](const wire::Headers& h) { return !is_ack(h); }) == 16);
    CHECK(rig.count(1, is_ack) >= 1);
    CHECK(p.qa->counters.retransmits == 0);
    CHECK(rig.a.env.timer(*p.qa) == 0); // all acknowledged: the retransmit timer stopped
}

TEST_CASE("two NICs: a lost middle packet draws one sequence NAK and a go-back-N from it") {
    TwoNicRig rig;
    Pair p(rig, 16 * kMtu);
    rig.plan = drop_first(0, at_psn(kPsn + 5));
    send_all(rig, p);
    rig.run();
    expect_delivered(p);
    // The responder asked for the missing PSN once (9.7.5.1.1), however many came after it.
    CHECK(rig.count(1, is_seq_nak) == 1);
    for (const Crossing& c : rig.log)
        if (c.from == 1 && is_seq_nak(c.packet.h)) CHECK(c.packet.h.psn == kPsn + 5);
    // Go-back-N: every PSN from the lost one on crossed twice, those before it once.
    for (uint32_t i = 0; i < 16; ++i) {
        INFO("psn offset " << i);
        CHECK(rig.count(0, at_psn(kPsn + i)) == (i < 5 ? 1u : 2u));
    }
    CHECK(p.qa->counters.naks_received == 1);
    CHECK(p.qb->counters.naks_sent == 1);
    CHECK(p.qb->counters.drops.out_of_sequence == 10); // PSNs 6..15, discarded
    CHECK(p.qa->counters.timeouts == 0);
}

TEST_CASE("two NICs: a lost last packet is sent again when the retransmit timer fires") {
    TwoNicRig rig;
    Pair p(rig, 16 * kMtu);
    rig.plan = drop_first(0, at_psn(kPsn + 15));
    send_all(rig, p);
    rig.run();
    // Nothing after the lost packet, so no NAK: both sides wait.
    expect_wcs(*p.qa->send_cq, {});
    expect_wcs(*p.qb->recv_cq, {});
    CHECK(rig.count(1, is_seq_nak) == 0);
    CHECK(rig.a.env.timer(*p.qa) != 0);
    rig.advance(kTimeoutUs - 2);
    CHECK(p.qa->counters.timeouts == 0); // not yet
    rig.advance(1);
    CHECK(p.qa->counters.timeouts == 1);
    expect_delivered(p);
    CHECK(rig.count(0, at_psn(kPsn + 15)) == 2);
}

TEST_CASE("two NICs: a lost ACK: the requester resends, the responder ACKs the duplicate and "
          "does not execute it again") {
    TwoNicRig rig;
    Pair p(rig, 512);
    rig.plan = drop_first(1, is_ack);
    // A second receive: a SEND executed twice would complete it.
    rig.b.post_recv(*p.qb, 200, {sge(p.dst.data(), p.dst.size(), *p.dst_mr)});
    send_all(rig, p);
    rig.run();
    expect_wcs(*p.qa->send_cq, {}); // its ACK never came
    rig.advance(kTimeoutUs);
    CHECK(p.qa->counters.timeouts == 1);
    CHECK(p.qb->counters.drops.duplicate_requests == 1);
    expect_wcs(*p.qa->send_cq, {{.wr_id = 1, .opcode = IBV_WC_SEND}});
    expect_wcs(*p.qb->recv_cq, {{.wr_id = 200, .opcode = IBV_WC_RECV, .byte_len = 512}});
    CHECK(p.dst == p.src);
}

TEST_CASE("two NICs: every request duplicated on the wire: each SEND lands once, in order") {
    TwoNicRig rig;
    Pair p(rig, 3 * 4096);
    rig.plan = [](int from, const Sent&, size_t) {
        return from == 0 ? Fate::Duplicate : Fate::Deliver;
    };
    for (uint64_t i = 0; i < 3; ++i)
        rig.b.post_recv(*p.qb, 100 + i, {sge(p.dst.data() + i * 4096, 4096, *p.dst_mr)});
    for (uint64_t i = 0; i < 3; ++i)
        rig.a.post_send(*p.qa, wqe(i, IBV_WR_SEND),
                        {sge(p.src.data() + i * 4096, 4096, *p.src_mr)});
    rig.run();
    expect_wcs(*p.qa->send_cq, {{.wr_id = 0}, {.wr_id = 1}, {.wr_id = 2}});
    expect_wcs(*p.qb->recv_cq, {{.wr_id = 100, .byte_len = 4096},
                                {.wr_id = 101, .byte_len = 4096},
                                {.wr_id = 102, .byte_len = 4096}});
    CHECK(p.dst == p.src);
    CHECK(p.qb->counters.drops.duplicate_requests == 12); // one copy of each of 12 packets
    CHECK(p.qa->counters.retransmits == 0);
}

TEST_CASE("two NICs: a packet overtaken by the next one is taken when it comes; the one it "
          "overtook is asked for again") {
    TwoNicRig rig;
    Pair p(rig, 8 * kMtu);
    rig.plan = [held = false](int from, const Sent& s, size_t) mutable {
        if (held || from != 0 || s.h.psn != kPsn + 2) return Fate::Deliver;
        held = true;
        return Fate::Hold;
    };
    send_all(rig, p);
    rig.run();
    expect_delivered(p);
    // 3 came first: a NAK for 2. Then 2 itself, the expected PSN (its NAK state ends), then 4
    // while 3 is expected: a NAK for 3.
    std::vector<uint32_t> naks;
    for (const Crossing& c : rig.log)
        if (c.from == 1 && is_seq_nak(c.packet.h)) naks.push_back(c.packet.h.psn);
    CHECK(naks == std::vector<uint32_t>{kPsn + 2, kPsn + 3});
    CHECK(p.qa->counters.naks_received == 2);
    CHECK(p.qa->counters.timeouts == 0);
}

TEST_CASE("two NICs: a SEND with no receive posted waits out RNR NAKs, then lands") {
    TwoNicRig rig;
    QpOptions o;
    o.rnr_retry = 7; // forever
    Pair p(rig, 2048, o);
    rig.a.post_send(*p.qa, wqe(1, IBV_WR_SEND), {sge(p.src.data(), p.src.size(), *p.src_mr)});
    rig.run();
    CHECK(rig.count(1, is_rnr_nak) == 1);
    CHECK(p.qb->counters.rnr_naks_sent == 1);
    CHECK(p.qa->counters.rnr_naks_received == 1);
    const uint64_t rnr_us = wire::rnr_timer_us(o.min_rnr_timer);
    rig.advance(rnr_us + 1); // still nothing posted: another RNR NAK
    CHECK(rig.count(1, is_rnr_nak) == 2);
    rig.b.post_recv(*p.qb, 101, {sge(p.dst.data(), p.dst.size(), *p.dst_mr)});
    rig.advance(rnr_us + 1);
    expect_delivered(p);
    CHECK(p.qa->counters.timeouts == 0); // RNR waits are not retransmit timeouts
}

TEST_CASE("two NICs: a lost READ response: the requester asks again from the missing PSN") {
    TwoNicRig rig;
    Pair p(rig, 8 * kMtu);
    // a reads b's buffer (dst, filled with the pattern) into its own (src, zeroed).
    std::vector<uint8_t> remote = pattern(p.dst.size(), 9);
    std::copy(remote.begin(), remote.end(), p.dst.begin());
    std::fill(p.src.begin(), p.src.end(), 0);
    Mr& landing = rig.a.reg_mr(p.src.data(), p.src.size(), IBV_ACCESS_LOCAL_WRITE);
    rig.plan = drop_first(1, [](const wire::Headers& h) { return h.psn == kPsn + 3; });
    rig.a.post_send(
        *p.qa,
        rdma_wqe(7, IBV_WR_RDMA_READ, reinterpret_cast<uint64_t>(p.dst.data()), p.dst_mr->rkey),
        {sge(p.src.data(), p.src.size(), landing)});
    rig.run();
    std::vector<ibv_wc> done = Rig::poll(*p.qa->send_cq);
    if (done.empty()) rig.advance(kTimeoutUs); // nothing came after the gap
    if (done.empty()) done = Rig::poll(*p.qa->send_cq);
    REQUIRE(done.size() == 1);
    CHECK(done[0].status == IBV_WC_SUCCESS);
    CHECK(done[0].byte_len == p.src.size());
    CHECK(p.src == p.dst);
    CHECK(rig.count(1, [](const wire::Headers& h) { return h.psn == kPsn + 3; }) == 2);
    CHECK(rig.count(0, [](const wire::Headers& h) { return !is_ack(h); }) == 2); // READ twice
}

TEST_CASE("two NICs: 5% loss both ways over 96 SENDs of 1 B to 9 KiB: every byte, in order") {
    TwoNicRig rig;
    QpOptions o;
    o.retry_cnt = 7;
    constexpr size_t kMessages = 96, kBatch = 8, kMax = 9 * 1024;
    Pair p(rig, kBatch * kMax, o);
    std::mt19937 random(7);
    std::bernoulli_distribution lose(0.05);
    size_t dropped = 0;
    rig.plan = [&](int, const Sent&, size_t) {
        if (!lose(random)) return Fate::Deliver;
        ++dropped;
        return Fate::Drop;
    };
    std::uniform_int_distribution<size_t> length(1, kMax);
    for (size_t first = 0; first < kMessages; first += kBatch) {
        std::vector<size_t> lens;
        for (size_t i = 0; i < kBatch; ++i) {
            lens.push_back(length(random));
            uint8_t* at = p.dst.data() + i * kMax;
            std::fill(at, at + kMax, 0);
            rig.b.post_recv(*p.qb, first + i, {sge(at, kMax, *p.dst_mr)});
        }
        std::vector<uint8_t> message_bytes = pattern(kBatch * kMax, static_cast<uint8_t>(first));
        std::copy(message_bytes.begin(), message_bytes.end(), p.src.begin());
        for (size_t i = 0; i < kBatch; ++i)
            rig.a.post_send(*p.qa, wqe(first + i, IBV_WR_SEND),
                            {sge(p.src.data() + i * kMax, lens[i], *p.src_mr)});
        std::vector<ibv_wc> sends, recvs;
        rig.run();
        for (int waits = 0; sends.size() < kBatch || recvs.size() < kBatch; ++waits) {
            REQUIRE(waits < 200);
            for (const ibv_wc& wc : Rig::poll(*p.qa->send_cq))
                sends.push_back(wc);
            for (const ibv_wc& wc : Rig::poll(*p.qb->recv_cq))
                recvs.push_back(wc);
            if (sends.size() < kBatch || recvs.size() < kBatch) rig.advance(kTimeoutUs);
        }
        for (size_t i = 0; i < kBatch; ++i) {
            INFO("message " << first + i << " of " << lens[i] << " B");
            CHECK(sends[i].status == IBV_WC_SUCCESS);
            CHECK(sends[i].wr_id == first + i);
            CHECK(recvs[i].status == IBV_WC_SUCCESS);
            CHECK(recvs[i].wr_id == first + i);
            CHECK(recvs[i].byte_len == lens[i]);
            CHECK(std::equal(p.src.begin() + i * kMax, p.src.begin() + i * kMax + lens[i],
                             p.dst.begin() + i * kMax));
        }
    }
    CHECK(dropped > 20);
    CHECK(p.qa->attr.qp_state == IBV_QPS_RTS);
    CHECK(p.qa->counters.retransmits > 0);
}
