// The stream rsocket protocol (emu/wire/rsocket.h) and its flow control (rdmacm_api's
// StreamFlow): the connect header and immediates byte for byte as rdma-core 44 lays them out,
// and two flows driven against each other through a loopback "QP" that executes each RDMA
// WRITE when the test delivers it (so a sender that reuses its send ring too early is caught),
// holds writes WITH IMMEDIATE while the receiver has no receive WR (as RNR would), and checks
// every write lands inside memory the peer registered, with its key.
#include "emu/wire/rsocket.h"
#include "rsocket_flow.h"

#include <catch2/catch.hpp>

#include <endian.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <memory>
#include <random>
#include <vector>

namespace wire = emu::wire::rsocket;
using rdmacm::rs::FlowBuffers;
using rdmacm::rs::FlowLimits;
using rdmacm::rs::Gather;
using rdmacm::rs::kCtrlBufSize;
using rdmacm::rs::kCtrlSlots;
using rdmacm::rs::Link;
using rdmacm::rs::QpPort;
using rdmacm::rs::Scatter;
using rdmacm::rs::StreamFlow;

namespace {

struct Posted {
    ibv_wr_opcode opcode;
    uint64_t wr_id;
    bool has_imm;
    uint32_t imm; // host order
    uint64_t remote_addr;
    uint32_t rkey;
    uint32_t length;
    bool is_inline;
    std::vector<ibv_sge> sges;
    std::vector<uint8_t> inline_bytes;
};

struct Side : QpPort {
    std::vector<uint8_t> send, recv, target;
    uint32_t send_lkey, recv_rkey, target_rkey;
    std::unique_ptr<StreamFlow> flow;
    Side* peer = nullptr;
    std::deque<Posted> wire; // posted, not delivered yet
    std::vector<Posted> log; // everything posted
    std::deque<ibv_wc> cq;
    uint32_t recvs = 0; // receive WRs posted and not consumed
    int rnr_waits = 0;
    bool fail_next_send = false;

    int post_send(ibv_send_wr& wr) override {
        Posted p{};
        p.opcode = wr.opcode;
        p.wr_id = wr.wr_id;
        p.has_imm = wr.opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
        p.imm = be32toh(wr.imm_data);
        p.remote_addr = wr.wr.rdma.remote_addr;
        p.rkey = wr.wr.rdma.rkey;
        p.is_inline = wr.send_flags & IBV_SEND_INLINE;
        for (int i = 0; i < wr.num_sge; ++i) {
            p.sges.push_back(wr.sg_list[i]);
            p.length += wr.sg_list[i].length;
            if (p.is_inline) { // the data is taken now
                const auto* b = reinterpret_cast<const uint8_t*>(wr.sg_list[i].addr);
                p.inline_bytes.insert(p.inline_bytes.end(), b, b + wr.sg_list[i].length);
            }
        }
        log.push_back(p);
        wire.push_back(p);
        return 0;
    }
    int post_recv(ibv_recv_wr& wr) override {
        REQUIRE(wr.num_sge == 0);
        ++recvs;
        return 0;
    }

    // The bytes a write carries, read from the send ring now (not inline) or at post (inline).
    std::vector<uint8_t> payload(const Posted& p) const {
        if (p.is_inline) return p.inline_bytes;
        std::vector<uint8_t> out;
        for (const ibv_sge& s : p.sges) {
            REQUIRE(s.lkey == send_lkey);
            const auto* b = reinterpret_cast<const uint8_t*>(s.addr);
            REQUIRE(b >= send.data());
            REQUIRE(b + s.length <= send.data() + send.size());
            out.insert(out.end(), b, b + s.length);
        }
        return out;
    }

    // Where the peer's RDMA write goes: inside a buffer of ours whose key it names.
    uint8_t* landing(uint64_t addr, uint32_t rkey, uint32_t len) {
        auto* p = reinterpret_cast<uint8_t*>(addr);
        std::vector<uint8_t>& region = rkey == recv_rkey ? recv : target;
        REQUIRE((rkey == recv_rkey || rkey == target_rkey));
        REQUIRE(p >= region.data());
        REQUIRE(p + len <= region.data() + region.size());
        return p;
    }

    // One posted write arrives at the peer: false when there was none, or it must wait for a
    // receive WR.
    bool deliver_one() {
        if (wire.empty()) return false;
        const Posted w = wire.front();
        if (w.has_imm && !peer->recvs) {
            ++rnr_waits;
            return false;
        }
        wire.pop_front();
        const std::vector<uint8_t> bytes = payload(w);
        if (!bytes.empty())
            std::memcpy(peer->landing(w.remote_addr, w.rkey, w.length), bytes.data(), bytes.size());
        if (w.has_imm) {
            --peer->recvs;
            ibv_wc rc{};
            rc.wr_id = rdmacm::rs::kRecvWrId;
            rc.status = IBV_WC_SUCCESS;
            rc.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
            rc.wc_flags = IBV_WC_WITH_IMM;
            rc.imm_data = htobe32(w.imm);
            rc.byte_len = w.length;
            peer->cq.push_back(rc);
        }
        ibv_wc sc{};
        sc.wr_id = w.wr_id;
        sc.status = fail_next_send ? IBV_WC_RETRY_EXC_ERR : IBV_WC_SUCCESS;
        fail_next_send = false;
        sc.opcode = IBV_WC_RDMA_WRITE;
        cq.push_back(sc);
        return true;
    }

    bool poll() {
        const bool any = !cq.empty();
        while (!cq.empty()) {
            flow->on_completion(cq.front());
            cq.pop_front();
        }
        REQUIRE(flow->after_poll() == 0);
        flow->update_credits();
        return any;
    }
};

struct Config {
    uint32_t sbuf = 8192;
    uint32_t rbuf = 8192;
    uint32_t sq = 32;
    uint32_t rq = 16;
    uint32_t inline_size = 64;
    uint32_t iomap = 0;
};

void build(Side& s, const Config& c, uint32_t keys) {
    s.send.assign(c.sbuf + kCtrlSlots * kCtrlBufSize, 0);
    s.recv.assign(c.rbuf, 0);
    s.target.assign(wire::kTargetSglEntries * sizeof(wire::Sge) + c.iomap * sizeof(wire::IoMap), 0);
    s.send_lkey = keys + 1;
    s.recv_rkey = keys + 2;
    s.target_rkey = keys + 3;
    FlowBuffers b;
    b.send = s.send.data();
    b.send_size = c.sbuf;
    b.send_lkey = s.send_lkey;
    b.recv = s.recv.data();
    b.recv_size = c.rbuf;
    b.recv_rkey = s.recv_rkey;
    b.target = s.target.data();
    b.target_rkey = s.target_rkey;
    b.iomap_entries = c.iomap;
    s.flow = std::make_unique<StreamFlow>(s, FlowLimits{c.sq, c.rq, c.inline_size}, b);
}

struct Pair {
    Side a, b;
    explicit Pair(const Config& c = {}, const Config* cb = nullptr) {
        build(a, c, 0x100);
        build(b, cb ? *cb : c, 0x200);
        a.peer = &b;
        b.peer = &a;
        REQUIRE(a.flow->post_initial_recvs() == 0);
        REQUIRE(b.flow->post_initial_recvs() == 0);
        REQUIRE(a.flow->start(b.flow->local_conn_data()));
        REQUIRE(b.flow->start(a.flow->local_conn_data()));
    }
    // Delivers and polls until nothing moves.
    void pump() {
        for (int i = 0; i < 100000; ++i) {
            bool moved = false;
            while (a.deliver_one())
                moved = true;
            while (b.deliver_one())
                moved = true;
            moved |= a.poll();
            moved |= b.poll();
            if (!moved && (a.wire.empty() || !b.recvs) && (b.wire.empty() || !a.recvs)) return;
        }
        FAIL("the flows never settle");
    }
    // Delivers a few writes each way (some stay in flight, their send ring bytes too), then
    // polls what completed.
    void step(std::mt19937& rng) {
        for (unsigned n = rng() % 4; n-- && a.deliver_one();) {
        }
        for (unsigned n = rng() % 4; n-- && b.deliver_one();) {
        }
        if (rng() % 2) a.poll();
        if (rng() % 2) b.poll();
    }
};

size_t send_bytes(StreamFlow& f, const uint8_t* data, size_t len, uint32_t& chunk) {
    iovec v{const_cast<uint8_t*>(data), len};
    Gather g(&v, 1);
    while (g.remaining() && f.can_send())
        REQUIRE(f.send_chunk(g, chunk) > 0);
    return len - g.remaining();
}

size_t recv_bytes(StreamFlow& f, uint8_t* data, size_t len, bool peek = false) {
    iovec v{data, len};
    Scatter s(&v, 1);
    return f.receive(s, peek);
}

} // namespace

TEST_CASE("the rsocket connect header is rdma-core's rs_conn_data, big-endian, 40 bytes") {
    wire::ConnData c;
    c.flags = wire::kFlagIomap;
    c.credits = 384;
    c.target_iomap_size = wire::to_scale(1);
    c.target_sgl = {0x00007f0012345000ull, 0x11223344, 2};
    c.data_buf = {0x00007f00abcde000ull, 0x55667788, 0x10000};
    uint8_t b[wire::kConnDataSize];
    wire::encode(c, b);
    const uint8_t expect[wire::kConnDataSize] = {
        1,    0x02, 0x01, 0x80, 0,    0,    0,    1, // version, flags, credits, rsvd, iomap
        0,    0,    0x7f, 0,    0x12, 0x34, 0x50, 0, // target_sgl.addr
        0x11, 0x22, 0x33, 0x44, 0,    0,    0,    2, // .key, .length
        0,    0,    0x7f, 0,    0xab, 0xcd, 0xe0, 0, // data_buf.addr
        0x55, 0x66, 0x77, 0x88, 0,    0x01, 0,    0, // .key, .length
    };
    CHECK(std::memcmp(b, expect, sizeof b) == 0);
    wire::ConnData d;
    REQUIRE(wire::decode(b, sizeof b, d));
    CHECK(d.credits == 384);
    CHECK(d.target_sgl.addr == c.target_sgl.addr);
    CHECK(d.target_sgl.key == c.target_sgl.key);
    CHECK(d.data_buf.length == 0x10000);
    CHECK_FALSE(wire::decode(b, sizeof b - 1, d)); // short
    b[0] = 2;
    CHECK_FALSE(wire::decode(b, sizeof b, d)); // another version
}

TEST_CASE("rsocket immediates: operation in the top 3 bits, its argument in the low 29") {
    CHECK(wire::imm(wire::Op::Data, 4096) == 0x00001000u);
    CHECK(wire::imm(wire::Op::Sgl, 384 + 7) == 0x80000187u);
    CHECK(wire::imm(wire::Op::IomapSgl, 3) == 0xC0000003u);
    CHECK(wire::imm(wire::Op::Ctrl, uint32_t(wire::Ctrl::Disconnect)) == 0xE0000000u);
    CHECK(wire::imm(wire::Op::Ctrl, uint32_t(wire::Ctrl::Shutdown)) == 0xE0000002u);
    CHECK(wire::op_bits(0xE0000002u) == 7);
    CHECK(wire::data_of(0xE0000002u) == 2);
}

TEST_CASE("rsocket sizes: exact up to 128, then multiples of 256 (rs_value_to_scale)") {
    CHECK(wire::to_scale(0) == 0);
    CHECK(wire::to_scale(128) == 128);
    CHECK(wire::from_scale(wire::to_scale(128)) == 128);
    CHECK(wire::to_scale(256) == 0x81);
    CHECK(wire::from_scale(0x81) == 256);
    CHECK(wire::from_scale(wire::to_scale(1000)) == 768);
}

TEST_CASE("the first grant hands the peer the second half of the receive ring at once") {
    Pair p;
    const auto& la = p.a.log;
    REQUIRE(la.empty());
    p.a.flow->update_credits();
    REQUIRE(la.size() == 1);
    const Posted& g = la[0];
    CHECK(g.opcode == IBV_WR_RDMA_WRITE_WITH_IMM);
    CHECK(g.imm == wire::imm(wire::Op::Sgl, 16)); // messages read (0) + receive queue
    CHECK(g.rkey == p.b.target_rkey);
    CHECK(g.remote_addr == reinterpret_cast<uintptr_t>(p.b.target.data()) + sizeof(wire::Sge));
    CHECK(g.is_inline);
    p.pump();
    wire::Sge second;
    std::memcpy(&second, p.b.target.data() + sizeof(wire::Sge), sizeof second);
    CHECK(second.addr == reinterpret_cast<uintptr_t>(p.a.recv.data()) + 4096);
    CHECK(second.length == 4096);
    CHECK(second.key == p.a.recv_rkey);
}

TEST_CASE("data goes as RDMA WRITE WITH IMMEDIATE of its length, chunks doubling from 2 KiB") {
    Config c;
    c.sbuf = 1 << 20;
    c.rbuf = 1 << 21;
    Pair p(c);
    p.pump(); // the grants
    std::vector<uint8_t> data(300000);
    for (size_t i = 0; i < data.size(); ++i)
        data[i] = static_cast<uint8_t>(i * 13);
    uint32_t chunk = rdmacm::rs::kFirstChunk;
    const size_t before = p.a.log.size();
    REQUIRE(send_bytes(*p.a.flow, data.data(), data.size(), chunk) == data.size());
    std::vector<uint32_t> sizes;
    for (size_t i = before; i < p.a.log.size(); ++i) {
        const Posted& w = p.a.log[i];
        REQUIRE(w.opcode == IBV_WR_RDMA_WRITE_WITH_IMM);
        CHECK(w.imm == wire::imm(wire::Op::Data, w.length));
        CHECK(w.rkey == p.b.recv_rkey);
        sizes.push_back(w.length);
    }
    const std::vector<uint32_t> expect = {2048,  4096,  8192,  16384, 32768,
                                          65536, 65536, 65536, 39904};
    CHECK(sizes == expect);
    p.pump();
    std::vector<uint8_t> got(data.size());
    CHECK(recv_bytes(*p.b.flow, got.data(), got.size()) == data.size());
    CHECK(got == data);
}

TEST_CASE("a stream crosses small rings byte for byte, with the sender held by credits") {
    std::mt19937 rng(7);
    Config c; // a send ring smaller than the peer's receive ring, 16 receive credits
    c.sbuf = 6144;
    c.rbuf = 16384;
    Pair p(c);
    std::vector<uint8_t> data(2'000'003);
    for (auto& b : data)
        b = static_cast<uint8_t>(rng());
    std::vector<uint8_t> got;
    size_t sent = 0;
    int rounds = 0;
    while (got.size() < data.size()) {
        REQUIRE(++rounds < 1'000'000);
        if (sent < data.size()) {
            uint32_t chunk = rdmacm::rs::kFirstChunk;
            const size_t want = std::min<size_t>(data.size() - sent, 1 + rng() % 20000);
            sent += send_bytes(*p.a.flow, data.data() + sent, want, chunk);
        }
        p.step(rng);
        std::vector<uint8_t> buf(1 + rng() % 7000);
        const bool peek = rng() % 5 == 0;
        const size_t n = recv_bytes(*p.b.flow, buf.data(), buf.size(), peek);
        if (peek) {
            std::vector<uint8_t> again(n);
            REQUIRE(recv_bytes(*p.b.flow, again.data(), n) == n);
            REQUIRE(std::equal(again.begin(), again.end(), buf.begin()));
        }
        REQUIRE(std::equal(buf.begin(), buf.begin() + static_cast<long>(n),
                           data.begin() + static_cast<long>(got.size())));
        got.insert(got.end(), buf.begin(), buf.begin() + static_cast<long>(n));
        p.b.flow->update_credits();
    }
    CHECK(got == data);
    // Never more Data messages outstanding than the receiver had receive WRs for.
    CHECK(p.a.rnr_waits == 0);
}

TEST_CASE("a sender whose peer reads nothing stops at the granted ring, then resumes") {
    Pair p;
    p.pump();
    std::vector<uint8_t> data(100000, 0x5A);
    uint32_t chunk = rdmacm::rs::kFirstChunk;
    size_t sent = send_bytes(*p.a.flow, data.data(), data.size(), chunk);
    p.pump();
    sent += send_bytes(*p.a.flow, data.data() + sent, data.size() - sent, chunk);
    p.pump();
    CHECK(sent == 8192); // the two halves the receiver granted
    CHECK_FALSE(p.a.flow->can_send());
    std::vector<uint8_t> buf(5000);
    CHECK(recv_bytes(*p.b.flow, buf.data(), buf.size()) == 5000);
    p.b.flow->update_credits(); // half the ring is free again: granted
    p.pump();
    CHECK(p.a.flow->can_send());
}

TEST_CASE("SHUT_WR's Shutdown leaves the peer able to send; Disconnect closes after the data") {
    Pair p;
    p.pump();
    const uint8_t hello[] = "hello";
    uint32_t chunk = rdmacm::rs::kFirstChunk;
    REQUIRE(send_bytes(*p.a.flow, hello, sizeof hello, chunk) == sizeof hello);
    p.a.flow->shut_write();
    REQUIRE(p.a.flow->ctrl_slot_free());
    REQUIRE(p.a.flow->send_ctrl(wire::Ctrl::Shutdown) == 0);
    CHECK(p.a.log.back().imm == 0xE0000002u);
    CHECK(p.a.log.back().length == 0);
    p.pump();
    CHECK_FALSE(p.b.flow->readable());
    CHECK(p.b.flow->writable());
    CHECK(p.b.flow->link() == Link::Up);
    uint8_t buf[16];
    CHECK(recv_bytes(*p.b.flow, buf, sizeof buf) == sizeof hello);
    REQUIRE(send_bytes(*p.b.flow, hello, sizeof hello, chunk) == sizeof hello);
    REQUIRE(p.b.flow->send_ctrl(wire::Ctrl::Disconnect) == 0);
    p.pump();
    CHECK(p.b.flow->link() == Link::Closed); // its Disconnect completed
    CHECK(p.a.flow->link() == Link::Closed);
    CHECK(p.a.flow->has_data()); // what came before the Disconnect is still there
    CHECK(recv_bytes(*p.a.flow, buf, sizeof buf) == sizeof hello);
    CHECK(p.a.flow->all_sends_done());
}

TEST_CASE("a peer of the other byte order gets its grants and iomap entries swapped") {
    Config c;
    c.iomap = 1;
    Pair p(c);
    wire::ConnData bc = p.b.flow->local_conn_data();
    bc.flags |= wire::kFlagNetOrder; // as a big-endian peer would say
    REQUIRE(p.a.flow->start(bc));
    CHECK(p.a.flow->swap());
    p.a.log.clear();
    p.a.flow->update_credits();
    REQUIRE(p.a.log.size() == 1);
    wire::Sge sent;
    std::memcpy(&sent, p.a.log[0].inline_bytes.data(), sizeof sent);
    CHECK(be32toh(sent.length) == 4096);
    CHECK(be64toh(sent.addr) == reinterpret_cast<uintptr_t>(p.a.recv.data()) + 4096);
    p.pump();
    const wire::IoMap entry{0x1000, {0x00007f0000001000ull, 0x42, 512}};
    REQUIRE(p.a.flow->can_send());
    REQUIRE(p.a.flow->send_iomap(0, entry) == 0);
    wire::IoMap out;
    REQUIRE(p.a.log.back().inline_bytes.size() == sizeof out);
    std::memcpy(&out, p.a.log.back().inline_bytes.data(), sizeof out);
    CHECK(be64toh(out.offset) == 0x1000);
    CHECK(be64toh(out.sge.addr) == entry.sge.addr);
    CHECK(be32toh(out.sge.key) == 0x42);
    CHECK(be32toh(out.sge.length) == 512);
}

TEST_CASE("riomap's entry lands in the peer's iomap table; riowrite is a plain RDMA WRITE") {
    Config c;
    c.iomap = 2;
    Pair p(c);
    p.pump();
    REQUIRE(p.a.flow->peer_iomap_entries() == 2);
    std::vector<uint8_t> mapped(1000, 0);
    const wire::IoMap entry{0, {reinterpret_cast<uintptr_t>(mapped.data()), 0x777, 1000}};
    REQUIRE(p.a.flow->can_send());
    REQUIRE(p.a.flow->send_iomap(1, entry) == 0);
    const Posted& w = p.a.log.back();
    CHECK(w.imm == wire::imm(wire::Op::IomapSgl, 1));
    CHECK(w.length == sizeof(wire::IoMap));
    CHECK(w.remote_addr == reinterpret_cast<uintptr_t>(p.b.target.data()) + 2 * sizeof(wire::Sge) +
                               sizeof(wire::IoMap));
    p.pump();
    const wire::IoMap seen = p.b.flow->target_iomap(1);
    CHECK(seen.offset == 0);
    CHECK(seen.sge.addr == entry.sge.addr);
    CHECK(seen.sge.key == 0x777);
    CHECK(seen.sge.length == 1000);
    CHECK(p.b.flow->target_iomap(0).sge.length == 0);
    CHECK_FALSE(p.b.flow->has_data()); // an iomap update is no data

    // riowrite's write names the mapping's key: check it, then let it land by hand.
    const uint32_t recvs_before = p.a.recvs;
    const uint8_t bytes[3] = {1, 2, 3};
    iovec v{const_cast<uint8_t*>(bytes), sizeof bytes};
    Gather g(&v, 1);
    REQUIRE(p.b.flow->write_direct(g, 3, seen.sge.addr + 10, seen.sge.key) == 3);
    const Posted d = p.b.wire.back();
    CHECK(d.opcode == IBV_WR_RDMA_WRITE);
    CHECK(d.rkey == 0x777);
    CHECK(d.remote_addr == entry.sge.addr + 10);
    p.b.wire.pop_back();
    const std::vector<uint8_t> payload = p.b.payload(d);
    std::memcpy(reinterpret_cast<void*>(d.remote_addr), payload.data(), payload.size());
    CHECK(mapped[10] == 1);
    CHECK(mapped[12] == 3);
    CHECK(p.a.recvs == recvs_before); // consumed no receive of the peer
}

TEST_CASE("a failed send ends the link with EIO; a keepalive is a zero-length plain write") {
    Pair p;
    p.pump();
    REQUIRE(p.a.flow->send_keepalive() == 0);
    const Posted k = p.a.log.back();
    CHECK(k.opcode == IBV_WR_RDMA_WRITE);
    CHECK(k.length == 0);
    p.a.fail_next_send = true;
    p.pump();
    CHECK(p.a.flow->link() == Link::Failed);
    CHECK(p.a.flow->error() == EIO);
    CHECK_FALSE(p.a.flow->readable());
    CHECK(p.a.flow->all_sends_done());
}

TEST_CASE("writes of at most the inline size go inline, larger ones from the send ring") {
    Config c;
    c.inline_size = 100;
    c.sbuf = 1 << 16;
    c.rbuf = 1 << 16;
    Pair p(c);
    p.pump();
    std::vector<uint8_t> data(100, 1);
    uint32_t chunk = rdmacm::rs::kFirstChunk;
    REQUIRE(send_bytes(*p.a.flow, data.data(), 100, chunk) == 100);
    CHECK(p.a.log.back().is_inline);
    data.assign(101, 2);
    chunk = rdmacm::rs::kFirstChunk;
    REQUIRE(send_bytes(*p.a.flow, data.data(), 101, chunk) == 101);
    CHECK_FALSE(p.a.log.back().is_inline);
    p.pump();
    std::vector<uint8_t> got(201);
    REQUIRE(recv_bytes(*p.b.flow, got.data(), got.size()) == 201);
    CHECK(got[99] == 1);
    CHECK(got[100] == 2);
}
