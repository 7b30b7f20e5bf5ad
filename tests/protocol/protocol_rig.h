// A test rig for the RC engines: a fake TransportEnv (recorded packets, a clock the test moves,
// recorded timers and async events, DMA within this process) and a NIC whose objects are made
// through the same verbs the daemon runs. Tests post WQEs into the shared rings as the library
// does, hand packets to transport::receive as the Engine does, and look at what went on the wire
// and what landed in the CQs.
#pragma once

#include "emu/ipc/protocol.h"
#include "emu/ipc/reasons.h"
#include "emu/ipc/rings.h"
#include "emu/verbs_names.h"
#include "emu/wire/ip_address.h"
#include "emu/wire/multicast.h"
#include "emu/wire/packet.h"
#include "emu/wire/psn.h"
#include "net/ip_fields.h"
#include "nic/nic.h"
#include "objects/session_objects.h"
#include "rig_check.h"
#include "transport/engines.h"
#include "transport/qp_scheduler.h"
#include "transport/raw.h"
#include "verbs/verbs.h"

#include <nlohmann/json.hpp>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <initializer_list>
#include <memory>
#include <optional>
#include <unistd.h>
#include <vector>

namespace proto {

namespace wire = emu::wire;
namespace ipc = emu::ipc;
using nicsim::Cq;
using nicsim::Mr;
using nicsim::Qp;

// One packet a QP transmitted, parsed back.
struct Sent {
    uint32_t from_qpn = 0;
    uint32_t dst_addr = 0;  // IPv4, network order (0 for an IPv6 destination)
    wire::IpAddress dst;    // the destination, either family
    bool multicast = false; // sent with transmit_multicast, to `mgid`
    nicsim::Mgid mgid{};
    std::vector<uint8_t> bytes; // BTH .. pad + 4 ICRC bytes, as handed to transmit()
    uint8_t tclass = 0;         // the traffic class it goes with (the IP header's TOS byte)
    wire::Headers h;
    std::vector<uint8_t> payload;
};

// DMA within this process: segment addresses are plain pointers here. `fail` makes every
// transfer fault (memory unmapped since registration). `memories` records, per segment, the
// memory the engines meant.
class FakeDma final : public nicsim::DmaEngine {
  public:
    int read(std::span<const nicsim::DmaSegment> sg, uint64_t offset, uint8_t* dst,
             size_t len) override {
        return move(
            sg, offset, len,
            [dst](uint64_t addr, size_t n, size_t at) {
                std::memcpy(dst + at, reinterpret_cast<const void*>(addr), n);
            },
            reads);
    }
    int write(std::span<const nicsim::DmaSegment> sg, uint64_t offset, const uint8_t* src,
              size_t len) override {
        return move(
            sg, offset, len,
            [src](uint64_t addr, size_t n, size_t at) {
                std::memcpy(reinterpret_cast<void*>(addr), src + at, n);
            },
            writes);
    }
    bool fail = false;
    int reads = 0, writes = 0;
    std::vector<const nicsim::Memory*> memories;

  private:
    template <typename Copy>
    int move(std::span<const nicsim::DmaSegment> sg, uint64_t offset, size_t len, Copy copy,
             int& count) {
        if (fail) return EFAULT;
        int err = nicsim::for_each_piece(
            sg, offset, len, [&](const nicsim::DmaSegment& s, uint64_t addr, size_t n, size_t at) {
                memories.push_back(s.memory.get());
                copy(addr, n, at);
                return 0;
            });
        RIG_CHECK(err == 0); // the engines pass lists that cover the transfer
        if (err == 0) ++count;
        return err;
    }
};

// Process `pid` hands the session its memory, as the library does with its first request
// (here it is this process's own).
inline nicsim::Memory& bind_memory(nicsim::SessionObjects& objects, pid_t pid) {
    return *objects.memories.bind(pid, nicsim::UniqueFd(::open("/proc/self/mem", O_RDWR)));
}

struct AsyncEvent {
    int fd;
    ibv_event_type type;
    uint32_t handle;
    uint32_t reason = 0;
};

class FakeEnv final : public nicsim::TransportEnv {
  public:
    explicit FakeEnv(nicsim::Nic& nic)
        : nic_(nic), log_("protocol", std::make_shared<spdlog::sinks::null_sink_mt>()) {}

    uint64_t now_us() override { return now; }
    uint8_t* packet_buffer() override { return scratch_; }
    void transmit_multicast(Qp& qp, const uint8_t* mgid, uint8_t* packet, size_t len,
                            uint8_t tclass) override {
        // The rig's hosts are IPv4: the group's IP destination is its IPv4 address.
        transmit(qp, wire::multicast_group_address(mgid, false), packet, len, tclass);
        sent.back().multicast = true;
        std::memcpy(sent.back().mgid.data(), mgid, 16);
    }
    void transmit(Qp& qp, const wire::IpAddress& dst_addr, uint8_t* packet, size_t len,
                  uint8_t tclass) override {
        Sent s;
        s.from_qpn = qp.qpn;
        s.dst = dst_addr;
        if (dst_addr.is_ipv4()) s.dst_addr = dst_addr.ipv4();
        s.tclass = tclass;
        s.bytes.assign(packet, packet + len);
        const uint8_t* payload = nullptr;
        size_t payload_len = 0;
        wire::ParseResult r = wire::parse(packet, len, s.h, &payload, &payload_len);
        RIG_INFO("transmitted packet does not parse: " << wire::describe(r));
        RIG_REQUIRE(r == wire::ParseResult::Ok);
        s.payload.assign(payload, payload + payload_len);
        sent.push_back(std::move(s));
    }
    void schedule(Qp& qp) override { scheduler_.schedule(qp); }
    void set_timer(Qp& qp, uint64_t at_us) override { scheduler_.set_timer(qp, at_us); }
    nicsim::DmaEngine& dma() override { return fake_dma; }
    nicsim::Nic& nic() override { return nic_; }
    void async_event(int async_fd, ibv_event_type type, uint32_t handle, uint32_t reason) override {
        events.push_back({async_fd, type, handle, reason});
    }
    // What responders told requesters' NICs, by (peer address, requester QPN, PSN): one map for
    // both ends of the rig's QP pairs, as the NICs of one machine.
    void tell_peer(const wire::IpAddress& peer_addr, const nicsim::PeerReason& r) override {
        told.push_back({peer_addr, r});
    }
    std::optional<nicsim::PeerReason> peer_reason(const wire::IpAddress&, uint32_t qpn,
                                                  uint32_t psn) override {
        for (const auto& [addr, r] : (peer ? peer->told : told))
            if (r.requester_qpn == qpn && r.psn == psn) return r;
        return std::nullopt;
    }
    spdlog::logger& log() override { return log_; }

    // The Engine's run queue: each scheduled QP runs with a budget until none has work left.
    void drain(int budget = nicsim::QpScheduler::kBudgetPerTurn) {
        scheduler_.run(*this, 100000, budget);
        RIG_REQUIRE(!scheduler_.runnable()); // a QP that never runs out of work
    }

    // The QP's transport deadline: its RNR wait, else its retransmit timer (0: none).
    uint64_t timer(const Qp& qp) const {
        return qp.req.rnr_until_us ? qp.req.rnr_until_us : qp.req.timer_at_us;
    }

    // Moves the clock by `us`, then fires every deadline that has passed (as the Engine's timer
    // does) and runs what that made runnable.
    void advance(uint64_t us) {
        now += us;
        for (int rounds = 0; scheduler_.fire_due(*this, now); ++rounds) {
            RIG_REQUIRE(rounds < 1000);
            drain();
        }
        drain();
    }

    // The packets sent since the last call.
    std::vector<Sent> take() {
        std::vector<Sent> out = std::move(sent);
        sent.clear();
        return out;
    }

    uint64_t now = 1'000'000; // not 0: 0 means "no deadline" to the engines
    std::vector<Sent> sent;
    std::vector<AsyncEvent> events;
    std::vector<std::pair<wire::IpAddress, nicsim::PeerReason>> told;
    FakeEnv* peer = nullptr; // the other NIC's, when the rig has two (two_nic_rig.h)
    FakeDma fake_dma;
    alignas(8) uint8_t scratch_[nicsim::transport::kMaxPacket];

  private:
    nicsim::Nic& nic_;
    spdlog::logger log_;
    nicsim::QpScheduler scheduler_{nic_};
};

// What the Engine does for the control path: modify_qp tells the transport.
class FakeDataPath final : public nicsim::DataPath {
  public:
    explicit FakeDataPath(FakeEnv& env) : env_(env) {}
    void qp_modified(Qp& qp, ibv_qp_state from) override {
        nicsim::transport::modified(env_, qp, from);
    }
    void qp_destroying(Qp& qp) override {
        qp.scheduled = false;
        nicsim::transport::serve_window_queue(env_);
    }
    void send_posted(Qp& qp) override {
        while (nicsim::transport::run(env_, qp, 64)) {
        }
    }
    void wq_error(nicsim::Wq& wq) override { nicsim::raw::flush_wq(env_, wq); }
    void complete(Cq& cq, const ibv_wc& wc) override {
        nicsim::transport::post_completion(env_, cq, wc, false);
    }
    // Every QP of the session, as the Engine serves a kDoorbellAll bit.
    void doorbell(nicsim::SessionObjects& objects) override {
        objects.qps.for_each([this](Qp& qp) { nicsim::transport::doorbell(env_, qp); });
    }
    nicsim::Json counters_json() const override { return nicsim::Json::object(); }

  private:
    FakeEnv& env_;
};

inline constexpr uint32_t kPeerQpn = 0x123;
inline constexpr const char* kPeerAddress = "127.0.0.2";

struct QpOptions {
    uint32_t sq_psn = 0x100;
    uint32_t rq_psn = 0x500;
    ibv_mtu mtu = IBV_MTU_1024;
    uint8_t timeout = 14; // 4.096 us * 2^14 = 67 ms
    uint8_t retry_cnt = 3;
    uint8_t rnr_retry = 3;
    uint8_t min_rnr_timer = 12;
    uint8_t max_rd_atomic = 4;
    uint8_t max_dest_rd_atomic = 4;
    uint32_t access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
    uint32_t max_send_wr = 64;
    uint32_t max_recv_wr = 16;
    uint32_t max_sge = 4;
    uint32_t max_inline = 64;
    bool sq_sig_all = false;
    int cqe = 512;                // of each of its CQs
    uint32_t srq = 0;             // receive from this SRQ (its handle) when not 0
    uint32_t dest_qpn = kPeerQpn; // the peer QP (another QP of the rig, to connect two)
    const char* peer_address = kPeerAddress;
    ibv_qp_state state = IBV_QPS_RTS; // where create_qp leaves it: INIT, RTR or RTS
};

inline constexpr const char* kRigAddress = "127.0.0.1";

inline nicsim::Config rig_config(const char* address) {
    nicsim::Config c;
    c.address = *wire::IpAddress::parse(address);
    return c;
}

// One NIC with one session's objects, made as the daemon makes them.
class Rig {
  public:
    explicit Rig(const char* address = kRigAddress)
        : nic(rig_config(address)),
          log_("rig", std::make_shared<spdlog::sinks::null_sink_mt>()), ctx{nic,        objects,
                                                                            log_,       "session#1",
                                                                            ::getpid(), {}},
          env(nic), data_path_(env) {
        bind_memory(objects, ::getpid());
        objects.async_fd = kAsyncFd;
        objects.label = "session#1";
        objects.uid = ::getuid();
        objects.reasons = &reasons;
        nic.set_data_path(&data_path_);
        ipc::HandleReply r{};
        RIG_REQUIRE(nicsim::alloc_pd(ctx, ipc::Empty{}, r) == 0);
        pd = r.handle;
    }

    static constexpr int kAsyncFd = 42;

    // `iova`: the address the peer uses (ibv_reg_mr_iova); the buffer's own address if 0.
    Mr& reg_mr(const void* addr, size_t len, uint32_t access, uint64_t iova = 0) {
        ipc::RegMrReq q{};
        q.pd = pd;
        q.access = access;
        q.addr = reinterpret_cast<uint64_t>(addr);
        q.length = len;
        q.iova = iova ? iova : q.addr;
        ipc::RegMrReply r{};
        RIG_REQUIRE(nicsim::reg_mr(ctx, q, r) == 0);
        return *objects.mrs.get(r.handle);
    }

    // Device memory (ibv_alloc_dm) and a zero-based MR on it (ibv_reg_dm_mr).
    nicsim::Dm& alloc_dm(uint64_t len) {
        ipc::AllocDmReq q{len, 0, 0};
        ipc::AllocDmReply r{};
        RIG_REQUIRE(nicsim::alloc_dm(ctx, q, r) == 0);
        ctx.pass_fds.clear(); // the memfd the library would map
        return *objects.dms.get(r.handle);
    }
    Mr& reg_dm_mr(const nicsim::Dm& dm, uint64_t offset, uint64_t len, uint32_t access) {
        ipc::RegDmMrReq q{pd, dm.handle, access | IBV_ACCESS_ZERO_BASED, 0, offset, len};
        ipc::RegMrReply r{};
        RIG_REQUIRE(nicsim::reg_dm_mr(ctx, q, r) == 0);
        return *objects.mrs.get(r.handle);
    }

    Cq& create_cq(int cqe = 512) {
        ipc::CreateCqReq q{};
        q.cqe = cqe;
        ipc::CreateCqReply r{};
        RIG_REQUIRE(nicsim::create_cq(ctx, q, r) == 0);
        return *objects.cqs.get(r.handle);
    }

    // An RC QP with its own send and receive CQs, taken RESET -> INIT -> RTR -> RTS with the
    // masks an application gives (up to o.state), connected to o.dest_qpn at o.peer_address.
    Qp& create_qp(const QpOptions& o = {}) {
        Cq& scq = create_cq(o.cqe);
        Cq& rcq = create_cq(o.cqe);
        ipc::CreateQpReq q{};
        q.pd = pd;
        q.send_cq = scq.handle;
        q.recv_cq = rcq.handle;
        q.qp_type = IBV_QPT_RC;
        q.srq = o.srq;
        q.sq_sig_all = o.sq_sig_all;
        q.cap.max_send_wr = o.max_send_wr;
        q.cap.max_recv_wr = o.max_recv_wr;
        q.cap.max_send_sge = o.max_sge;
        q.cap.max_recv_sge = o.max_sge;
        q.cap.max_inline_data = o.max_inline;
        ipc::CreateQpReply r{};
        RIG_REQUIRE(nicsim::create_qp(ctx, q, r) == 0);
        Qp& qp = *objects.qps.get(r.handle);

        ipc::ModifyQpReq m{};
        m.qp = qp.handle;
        m.attr.qp_state = IBV_QPS_INIT;
        m.attr.port_num = 1;
        m.attr.pkey_index = 0;
        m.attr.qp_access_flags = o.access;
        m.mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
        ipc::Empty e;
        RIG_REQUIRE(nicsim::modify_qp(ctx, m, e) == 0);
        if (o.state == IBV_QPS_INIT) return qp;
        to_rtr(qp, o);
        if (o.state == IBV_QPS_RTR) return qp;
        to_rts(qp, o);
        return qp;
    }

    // INIT -> RTR with the responder's attributes and the path to the peer.
    void to_rtr(Qp& qp, const QpOptions& o) {
        ipc::ModifyQpReq m{};
        ipc::Empty e;
        m.qp = qp.handle;
        m.attr.qp_state = IBV_QPS_RTR;
        m.attr.path_mtu = o.mtu;
        m.attr.dest_qp_num = o.dest_qpn;
        m.attr.rq_psn = o.rq_psn;
        m.attr.max_dest_rd_atomic = o.max_dest_rd_atomic;
        m.attr.min_rnr_timer = o.min_rnr_timer;
        m.attr.ah_attr.is_global = 1;
        m.attr.ah_attr.port_num = 1;
        m.attr.ah_attr.grh.sgid_index = 0;
        m.attr.ah_attr.grh.hop_limit = 64;
        // RoCE v2: the peer's GID is its address (IPv4-mapped for IPv4).
        std::memcpy(m.attr.ah_attr.grh.dgid.raw, wire::IpAddress::parse(o.peer_address)->data(),
                    16);
        m.mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
        RIG_REQUIRE(nicsim::modify_qp(ctx, m, e) == 0);
    }

    // RTR -> RTS with the requester's attributes.
    void to_rts(Qp& qp, const QpOptions& o) {
        ipc::ModifyQpReq m{};
        ipc::Empty e;
        m.qp = qp.handle;
        m.attr.qp_state = IBV_QPS_RTS;
        m.attr.sq_psn = o.sq_psn;
        m.attr.timeout = o.timeout;
        m.attr.retry_cnt = o.retry_cnt;
        m.attr.rnr_retry = o.rnr_retry;
        m.attr.max_rd_atomic = o.max_rd_atomic;
        m.mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                 IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
        RIG_REQUIRE(nicsim::modify_qp(ctx, m, e) == 0);
        RIG_REQUIRE(qp.attr.qp_state == IBV_QPS_RTS);
        env.drain();
    }

    // Writes a send WQE (with its SGEs) into the next SQ slot and publishes it, as
    // ibv_post_send does; nothing runs until doorbell().
    void enqueue_send(Qp& qp, const ipc::SendWqe& w, std::initializer_list<ipc::Sge> sges = {}) {
        uint32_t index = qp.sq.header->producer.load();
        char* slot = qp.sq.slot(index);
        ipc::SendWqe copy = w;
        copy.num_sge = static_cast<uint32_t>(sges.size());
        std::memcpy(slot, &copy, sizeof copy);
        size_t at = sizeof copy;
        for (const ipc::Sge& s : sges) {
            std::memcpy(slot + at, &s, sizeof s);
            at += sizeof s;
        }
        qp.sq.header->producer.store(index + 1);
    }
    // The same with IBV_SEND_INLINE: the data is copied into the slot.
    void enqueue_send_inline(Qp& qp, ipc::SendWqe w, const void* data, uint32_t len) {
        uint32_t index = qp.sq.header->producer.load();
        char* slot = qp.sq.slot(index);
        w.send_flags |= IBV_SEND_INLINE;
        w.num_sge = 0;
        w.inline_len = len;
        std::memcpy(slot, &w, sizeof w);
        std::memcpy(slot + sizeof w, data, len);
        qp.sq.header->producer.store(index + 1);
    }
    // The doorbell kick: the NIC looks at its QPs and runs what became runnable.
    void doorbell() {
        nic.data_path()->doorbell(objects);
        env.drain();
    }
    void post_send(Qp& qp, const ipc::SendWqe& w, std::initializer_list<ipc::Sge> sges = {}) {
        enqueue_send(qp, w, sges);
        doorbell();
    }

    nicsim::Srq& create_srq(uint32_t max_wr, uint32_t max_sge, uint32_t limit) {
        ipc::CreateSrqReq q{};
        q.pd = pd;
        q.attr = {max_wr, max_sge, limit};
        ipc::CreateSrqReply r{};
        RIG_REQUIRE(nicsim::create_srq(ctx, q, r) == 0);
        return *objects.srqs.get(r.handle);
    }

    void post_srq_recv(nicsim::Srq& srq, uint64_t wr_id, std::initializer_list<ipc::Sge> sges) {
        post_to(srq.ring, wr_id, sges);
    }

    void post_recv(Qp& qp, uint64_t wr_id, std::initializer_list<ipc::Sge> sges) {
        post_to(qp.rq, wr_id, sges);
    }

    void post_to(nicsim::Ring& ring, uint64_t wr_id, std::initializer_list<ipc::Sge> sges) {
        uint32_t index = ring.header->producer.load();
        char* slot = ring.slot(index);
        ipc::RecvWqe w{};
        w.wr_id = wr_id;
        w.num_sge = static_cast<uint32_t>(sges.size());
        std::memcpy(slot, &w, sizeof w);
        size_t at = sizeof w;
        for (const ipc::Sge& s : sges) {
            std::memcpy(slot + at, &s, sizeof s);
            at += sizeof s;
        }
        ring.header->producer.store(index + 1);
        doorbell();
    }

    // Completions written since the last poll (ibv_poll_cq). A CQ slot (ipc::Cqe) starts with
    // the ibv_wc.
    static std::vector<ibv_wc> poll(Cq& cq) {
        std::vector<ibv_wc> out;
        ipc::RingHeader* h = cq.ring.header;
        uint32_t c = h->consumer.load();
        uint32_t p = h->producer.load();
        for (; c != p; ++c) {
            ibv_wc wc;
            std::memcpy(&wc, cq.ring.slot(c), sizeof wc);
            out.push_back(wc);
        }
        h->consumer.store(c);
        return out;
    }

    // The reason ids of the completions written since the last poll, with their texts.
    std::vector<std::pair<ibv_wc, std::string>> poll_with_reasons(Cq& cq) {
        std::vector<std::pair<ibv_wc, std::string>> out;
        ipc::RingHeader* h = cq.ring.header;
        uint32_t c = h->consumer.load();
        uint32_t p = h->producer.load();
        for (; c != p; ++c) {
            ipc::Cqe cqe;
            std::memcpy(&cqe, cq.ring.slot(c), sizeof cqe);
            out.push_back({cqe.wc, reason_text(cqe.reason)});
        }
        h->consumer.store(c);
        return out;
    }
    // The text of reason `id` in the session's ring; "" when there is none.
    std::string reason_text(uint32_t id) const {
        ipc::Reason r;
        return ipc::read_reason(reasons, id, &r) ? r.text : std::string();
    }
    // The newest entry of the host's recent errors ("" when none).
    std::string last_error() const {
        const auto& e = nic.errors().entries();
        return e.empty() ? std::string() : e.back().text;
    }

    // Hands a packet from the peer to the QP as the Engine does (built, then parsed back);
    // `run` lets the Engine's run queue go afterwards.
    void deliver(Qp& qp, wire::Headers h, const void* payload = nullptr, size_t len = 0,
                 bool run = true) {
        h.dest_qpn = qp.qpn;
        h.pkey = wire::kDefaultPkey;
        std::vector<uint8_t> buf(wire::packet_length(h.opcode, len));
        RIG_REQUIRE(!buf.empty());
        RIG_REQUIRE(wire::build(h, static_cast<const uint8_t*>(payload), len, buf.data()) ==
                    buf.size());
        wire::Headers parsed;
        const uint8_t* p = nullptr;
        size_t plen = 0;
        RIG_REQUIRE(wire::parse(buf.data(), buf.size(), parsed, &p, &plen) ==
                    wire::ParseResult::Ok);
        RIG_REQUIRE(plen == len);
        nicsim::transport::receive(env, qp, parsed, p, plen);
        if (run) env.drain();
    }

    nicsim::Nic nic;
    nicsim::SessionObjects objects;
    ipc::ReasonRing reasons{};

  private:
    spdlog::logger log_;

  public:
    nicsim::VerbContext ctx;
    FakeEnv env;
    uint32_t pd = 0;

  private:
    FakeDataPath data_path_;
};

// --- building blocks for tests ---

// A UD QP of `rig` in RTS with CQs of its own, Q_Key `qkey` (perftest's by default) and send PSN
// `sq_psn`.
inline Qp& ud_qp(Rig& rig, uint32_t qkey = 0x11111111, uint32_t sq_psn = 0x100) {
    Cq& scq = rig.create_cq();
    Cq& rcq = rig.create_cq();
    ipc::CreateQpReq q{};
    q.pd = rig.pd;
    q.send_cq = scq.handle;
    q.recv_cq = rcq.handle;
    q.qp_type = IBV_QPT_UD;
    q.cap = {16, 16, 4, 4, 64};
    ipc::CreateQpReply r{};
    RIG_REQUIRE(nicsim::create_qp(rig.ctx, q, r) == 0);
    rig.ctx.pass_fds.clear();
    Qp& qp = *rig.objects.qps.get(r.handle);
    ipc::ModifyQpReq m{};
    ipc::Empty e;
    m.qp = qp.handle;
    m.attr.qp_state = IBV_QPS_INIT;
    m.attr.port_num = 1;
    m.attr.qkey = qkey;
    m.mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
    RIG_REQUIRE(nicsim::modify_qp(rig.ctx, m, e) == 0);
    m.attr = {};
    m.attr.qp_state = IBV_QPS_RTR;
    m.mask = IBV_QP_STATE;
    RIG_REQUIRE(nicsim::modify_qp(rig.ctx, m, e) == 0);
    m.attr.qp_state = IBV_QPS_RTS;
    m.attr.sq_psn = sq_psn;
    m.mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
    RIG_REQUIRE(nicsim::modify_qp(rig.ctx, m, e) == 0);
    return qp;
}

inline ipc::Sge sge(const void* addr, size_t len, const Mr& mr) {
    return {reinterpret_cast<uint64_t>(addr), static_cast<uint32_t>(len), mr.lkey};
}

inline ipc::SendWqe wqe(uint64_t wr_id, ibv_wr_opcode opcode, uint32_t flags = IBV_SEND_SIGNALED) {
    ipc::SendWqe w{};
    w.wr_id = wr_id;
    w.opcode = opcode;
    w.send_flags = flags;
    return w;
}

inline ipc::SendWqe rdma_wqe(uint64_t wr_id, ibv_wr_opcode opcode, uint64_t remote_addr,
                             uint32_t rkey, uint32_t flags = IBV_SEND_SIGNALED) {
    ipc::SendWqe w = wqe(wr_id, opcode, flags);
    w.remote_addr = remote_addr;
    w.rkey = rkey;
    return w;
}

// n bytes of a pattern that differs per seed and per offset.
inline std::vector<uint8_t> pattern(size_t n, uint8_t seed = 1) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = static_cast<uint8_t>(seed * 31 + i * 7 + (i >> 8));
    return v;
}

inline std::vector<uint8_t> bytes_of(const std::vector<uint8_t>& v, size_t from, size_t n) {
    return {v.begin() + static_cast<ptrdiff_t>(from), v.begin() + static_cast<ptrdiff_t>(from + n)};
}

// A request packet from the peer.
inline wire::Headers request(uint8_t rc_op, uint32_t psn, bool ack_req = true) {
    wire::Headers h;
    h.opcode = wire::opcode::make(wire::Transport::RC, rc_op);
    h.psn = psn & wire::kPsnMask;
    h.ack_req = ack_req;
    return h;
}

// An ACKNOWLEDGE (or NAK, RNR NAK) from the peer.
inline wire::Headers ack(uint32_t psn, uint8_t syndrome = wire::aeth_ack(), uint32_t msn = 0) {
    wire::Headers h;
    h.opcode = wire::opcode::kRcAcknowledge;
    h.psn = psn & wire::kPsnMask;
    h.aeth = {syndrome, msn};
    return h;
}

inline wire::Headers read_response(uint8_t rc_op, uint32_t psn, uint32_t msn = 1) {
    wire::Headers h;
    h.opcode = wire::opcode::make(wire::Transport::RC, rc_op);
    h.psn = psn & wire::kPsnMask;
    h.aeth = {wire::aeth_ack(), msn};
    return h;
}

inline uint8_t rc(uint8_t op) {
    return wire::opcode::make(wire::Transport::RC, op);
}

inline uint32_t psn(uint32_t base, int64_t n) {
    return wire::psn_add(base, n);
}

inline uint32_t ipv4(const char* text) {
    in_addr a{};
    ::inet_pton(AF_INET, text, &a);
    return a.s_addr;
}

// An address as the NIC names it (its GID form).
inline wire::IpAddress address(const char* text) {
    return *wire::IpAddress::parse(text);
}

// The IP header's fields of a received packet with traffic class `tos`.
inline nicsim::IpFields tos_fields(uint8_t tos) {
    nicsim::IpFields ip;
    ip.tos = tos;
    return ip;
}

inline uint32_t sq_consumer(const Qp& qp) {
    return qp.sq.header->consumer.load();
}
inline uint32_t rq_consumer(const Qp& qp) {
    return qp.rq.header->consumer.load();
}

// 4.096 us * 2^timeout, in whole microseconds.
inline uint64_t retransmit_timeout_us(uint8_t timeout) {
    return (4096ull << timeout) / 1000;
}

// What a test expects of one completion; the fields left unset are not checked.
struct ExpectWc {
    std::optional<uint64_t> wr_id;
    ibv_wc_status status = IBV_WC_SUCCESS;
    std::optional<ibv_wc_opcode> opcode;
    std::optional<uint32_t> byte_len;
};

// Polls `cq` and checks that it held exactly `want`, in order. Returns the completions for the
// test's further checks (imm_data, flags, ...).
inline std::vector<ibv_wc> expect_wcs(Cq& cq, std::initializer_list<ExpectWc> want) {
    std::vector<ibv_wc> got = Rig::poll(cq);
    RIG_INFO("completions: " << got.size() << ", expected " << want.size());
    RIG_REQUIRE(got.size() == want.size());
    size_t i = 0;
    for (const ExpectWc& w : want) {
        const ibv_wc& wc = got[i];
        RIG_INFO("completion " << i << ": wr_id " << wc.wr_id << ", status "
                               << emu::names::wc_status(wc.status) << ", opcode "
                               << emu::names::wc_opcode(wc.opcode) << ", byte_len " << wc.byte_len);
        if (w.wr_id) RIG_CHECK(wc.wr_id == *w.wr_id);
        RIG_CHECK(wc.status == w.status);
        if (w.opcode) RIG_CHECK(wc.opcode == *w.opcode);
        if (w.byte_len) RIG_CHECK(wc.byte_len == *w.byte_len);
        ++i;
    }
    return got;
}

} // namespace proto
