// The CM agent (nicsim/cm) on a fake wire: two hosts whose agents the test connects by handing
// each one the MADs the other sent, a clock the test moves, and hand-made MADs for what a
// broken or hostile peer would send. No sockets but the event channels', no daemon.
#include "cm/cm_agent.h"
#include "emu/wire/cm_mad.h"
#include "emu/wire/ip_cm.h"

#include <catch2/catch.hpp>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <arpa/inet.h>

#include <cstring>
#include <deque>
#include <memory>
#include <random>
#include <set>
#include <vector>

namespace {

namespace ipc = emu::ipc;
namespace mad = emu::wire::cm;
namespace ipcm = emu::wire::ipcm;
using nicsim::cm::CmAgent;
using nicsim::cm::CmClient;
using nicsim::cm::CmConfig;
using Bytes = std::vector<uint8_t>;

struct Sent {
    uint32_t dst;
    Bytes mad;
    uint16_t attr() const { return static_cast<uint16_t>(mad[16] << 8 | mad[17]); }
};

using Address = emu::wire::IpAddress;

// The hosts here are IPv4 (network order); the agent names them by their GIDs.
Address v4(uint32_t addr) {
    return Address::from_ipv4(addr);
}

class FakeEnv final : public nicsim::cm::CmEnv {
  public:
    uint64_t now_ms() override { return now; }
    void send_mad(const Address& dst, const uint8_t* m) override {
        sent.push_back({dst.ipv4(), Bytes(m, m + mad::kMadSize)});
    }
    void wake_at(uint64_t at) override { wake = at; }
    uint32_t random32() override { return seed = seed * 1103515245u + 12345u; }
    bool routable(const Address&, const Address& dst) override {
        return dst.is_ipv4() && routes.count(dst.ipv4()) != 0;
    }

    uint64_t now = 1'000'000;
    uint64_t wake = 0;
    uint32_t seed;
    std::deque<Sent> sent;
    std::set<uint32_t> routes; // what the host's network reaches

    explicit FakeEnv(uint32_t s) : seed(s) {}
};

std::shared_ptr<spdlog::logger> quiet() {
    static auto log = std::make_shared<spdlog::logger>(
        "cm-test", std::make_shared<spdlog::sinks::null_sink_mt>());
    return log;
}

uint32_t ip(const char* a) {
    return inet_addr(a);
}

const uint32_t kA = ip("127.0.9.1");
const uint32_t kB = ip("127.0.9.2");

CmConfig config_for(uint32_t self) {
    CmConfig c;
    c.local_addr = v4(self);
    c.hosts = {v4(kA), v4(kB)};
    c.node_guid = self == kA ? htobe64(0x0252007f00090100ull) : htobe64(0x0252007f00090200ull);
    c.response_timeout = 14; // 64 ms: tests wait for timeouts by moving the clock
    c.max_retries = 3;
    return c;
}

ipc::CmAddr sin(uint32_t addr, uint16_t port) {
    ipc::CmAddr a{};
    sockaddr_in s{};
    s.sin_family = AF_INET;
    s.sin_addr.s_addr = addr;
    s.sin_port = htons(port);
    std::memcpy(&a.sa, &s, sizeof s);
    return a;
}

// One emulated host: its agent, and one app (a CM session with one channel).
struct Host {
    uint32_t addr;
    FakeEnv env;
    CmAgent agent;
    CmClient client{1};
    uint32_t channel = 0;
    nicsim::UniqueFd app_end;

    explicit Host(uint32_t a) : addr(a), env(a), agent(env, config_for(a), *quiet()) {
        REQUIRE(client.create_channel(channel, app_end) == 0);
    }

    uint32_t id(uint32_t ps = RDMA_PS_TCP, uint32_t qp_type = IBV_QPT_RC) {
        uint32_t h = 0;
        REQUIRE(agent.create_id(client, {channel, ps, qp_type, 0}, h) == 0);
        return h;
    }
    uint32_t listener(uint16_t port, uint32_t ps = RDMA_PS_TCP, uint32_t qp_type = IBV_QPT_RC,
                      int backlog = 0) {
        uint32_t h = id(ps, qp_type);
        ipc::CmIdInfo info{};
        REQUIRE(agent.bind(client, {h, 0, sin(0, port)}, info) == 0);
        REQUIRE(agent.listen(client, {h, backlog}, info) == 0);
        return h;
    }
    // An ID resolved to `dst`:`port`, its events (address, route) read.
    uint32_t resolved(uint32_t dst, uint16_t port, uint32_t ps = RDMA_PS_TCP,
                      uint32_t qp_type = IBV_QPT_RC) {
        uint32_t h = id(ps, qp_type);
        ipc::CmResolveAddrReq r{};
        r.id = h;
        r.timeout_ms = 2000;
        r.dst = sin(dst, port);
        REQUIRE(agent.resolve_addr(client, r) == 0);
        REQUIRE(event().event == RDMA_CM_EVENT_ADDR_RESOLVED);
        REQUIRE(agent.resolve_route(client, {h, 2000}) == 0);
        REQUIRE(event().event == RDMA_CM_EVENT_ROUTE_RESOLVED);
        return h;
    }
    ipc::CmEventRecord event() {
        ipc::CmEventRecord e{};
        if (!agent.get_event(client, channel, e)) e.event = 0xFFFF; // none
        return e;
    }
    bool no_event() {
        ipc::CmEventRecord e{};
        return !agent.get_event(client, channel, e);
    }
    void advance(uint64_t ms) {
        env.now += ms;
        agent.on_timer();
    }
};

constexpr uint16_t kNoEvent = 0xFFFF;

// Hands every MAD `from` sent to `to` (those for other addresses are dropped, a dead host).
size_t deliver(Host& from, Host& to) {
    size_t n = 0;
    while (!from.env.sent.empty()) {
        Sent s = from.env.sent.front();
        from.env.sent.pop_front();
        if (s.dst != to.addr) continue;
        to.agent.receive(v4(from.addr), s.mad.data(), s.mad.size());
        ++n;
    }
    return n;
}

ipc::CmConnParam params(uint32_t qpn, const char* data = nullptr) {
    ipc::CmConnParam p{};
    p.qp_num = qpn;
    p.responder_resources = 1;
    p.initiator_depth = 1;
    p.retry_count = 7;
    p.rnr_retry_count = 7;
    if (data) {
        p.private_data_len = static_cast<uint8_t>(std::strlen(data));
        std::memcpy(p.private_data, data, p.private_data_len);
    }
    return p;
}

// A and B with B listening on `port` and A's ID resolved to it.
struct Pair {
    Host a{kA};
    Host b{kB};
    uint32_t listener;
    uint32_t active;
    explicit Pair(uint16_t port = 7174)
        : listener(b.listener(port)), active(a.resolved(kB, port)) {}
};

} // namespace

TEST_CASE("cm: REQ, REP and RTU connect two QPs; DREQ and DREP end it; time wait exits") {
    Pair p;
    REQUIRE(p.a.agent.connect(p.a.client, {p.active, 0, params(0x111111, "hello")}) == 0);
    REQUIRE(p.a.env.sent.size() == 1);
    const Sent req = p.a.env.sent.front();
    CHECK(req.dst == kB);
    CHECK(req.attr() == static_cast<uint16_t>(mad::Attr::Req));
    const mad::Req r = mad::decode<mad::Req>(req.mad.data());
    CHECK(r.service_id == 0x0000000001061c06ull); // the TCP port space, port 7174
    CHECK(r.local_qpn == 0x111111);
    CHECK(r.primary.local_lid == 0xFFFF);
    ipcm::Header h;
    REQUIRE(ipcm::decode(r.private_data.bytes.data(), h) == ipcm::HeaderCheck::Ok);
    CHECK(ipcm::to_ipv4(h.src) == kA);
    CHECK(ipcm::to_ipv4(h.dst) == kB);
    CHECK(std::memcmp(r.private_data.bytes.data() + ipcm::kHeaderSize, "hello", 5) == 0);

    REQUIRE(deliver(p.a, p.b) == 1);
    ipc::CmEventRecord e = p.b.event();
    REQUIRE(e.event == RDMA_CM_EVENT_CONNECT_REQUEST);
    CHECK(e.listen_id == p.listener);
    CHECK(e.conn.qp_num == 0x111111);
    CHECK(e.conn.private_data_len == 56); // 92 bytes of REQ private data less the IP CM header
    CHECK(std::memcmp(e.conn.private_data, "hello", 5) == 0);
    sockaddr_in peer;
    std::memcpy(&peer, &e.info.dst.sa, sizeof peer);
    CHECK(peer.sin_addr.s_addr == kA);
    const uint32_t passive = e.id;

    REQUIRE(p.b.agent.accept(p.b.client, {passive, 0, params(0x222222, "welcome")}) == 0);
    REQUIRE(deliver(p.b, p.a) == 1);
    e = p.a.event();
    REQUIRE(e.event == RDMA_CM_EVENT_CONNECT_RESPONSE);
    CHECK(e.conn.qp_num == 0x222222);
    CHECK(e.conn.private_data_len == 196);
    CHECK(std::memcmp(e.conn.private_data, "welcome", 7) == 0);

    // The QP attributes each side gets: each one's RQ starts at its own PSN, its SQ at the
    // other's; the destination is the other's QP.
    ipc::CmInitQpAttrReply ar{}, br{};
    REQUIRE(p.a.agent.init_qp_attr(p.a.client, {p.active, IBV_QPS_RTR}, ar) == 0);
    REQUIRE(p.b.agent.init_qp_attr(p.b.client, {passive, IBV_QPS_RTR}, br) == 0);
    CHECK(ar.attr.dest_qp_num == 0x222222);
    CHECK(br.attr.dest_qp_num == 0x111111);
    CHECK(ar.attr.ah_attr.is_global == 1);
    CHECK(ar.attr.ah_attr.grh.dgid.raw[15] == 2); // ::ffff:127.0.9.2
    const uint32_t a_rq = ar.attr.rq_psn, b_rq = br.attr.rq_psn;
    REQUIRE(p.a.agent.init_qp_attr(p.a.client, {p.active, IBV_QPS_RTS}, ar) == 0);
    REQUIRE(p.b.agent.init_qp_attr(p.b.client, {passive, IBV_QPS_RTS}, br) == 0);
    CHECK(ar.attr.sq_psn == b_rq);
    CHECK(br.attr.sq_psn == a_rq);
    CHECK(ar.attr.timeout == 17); // cm_ack_timeout(ack delay 15, packet lifetime 16)

    REQUIRE(p.a.agent.establish(p.a.client, p.active) == 0);
    REQUIRE(deliver(p.a, p.b) == 1); // the RTU
    CHECK(p.b.event().event == RDMA_CM_EVENT_ESTABLISHED);
    CHECK(p.a.agent.counters().connections == 1);
    CHECK(p.b.agent.counters().connections == 1);

    REQUIRE(p.a.agent.disconnect(p.a.client, p.active) == 0);
    REQUIRE(deliver(p.a, p.b) == 1); // DREQ
    CHECK(p.b.event().event == RDMA_CM_EVENT_DISCONNECTED);
    CHECK(p.b.env.sent.empty()); // the DREP waits for the app's rdma_disconnect
    REQUIRE(p.b.agent.disconnect(p.b.client, passive) == 0);
    REQUIRE(deliver(p.b, p.a) == 1); // DREP
    CHECK(p.a.event().event == RDMA_CM_EVENT_DISCONNECTED);
    CHECK(p.a.no_event());
    p.a.advance(511);
    CHECK(p.a.no_event());
    p.a.advance(1); // time wait: 4.096 us * 2^17 (cm_convert_to_ms: 512 ms)
    CHECK(p.a.event().event == RDMA_CM_EVENT_TIMEWAIT_EXIT);
    p.b.advance(512);
    CHECK(p.b.event().event == RDMA_CM_EVENT_TIMEWAIT_EXIT);
}

TEST_CASE("cm: XRC: the REQ says transport 3 extended 1 and the REP names the target as EECN") {
    Host a{kA};
    Host b{kB};
    const uint32_t listener = b.listener(7471, RDMA_PS_IB, IBV_QPT_XRC_RECV);
    const uint32_t active = a.resolved(kB, 7471, RDMA_PS_IB, IBV_QPT_XRC_SEND);
    REQUIRE(a.agent.connect(a.client, {active, 0, params(0x111111)}) == 0);
    REQUIRE(a.env.sent.size() == 1);
    const mad::Req r = mad::decode<mad::Req>(a.env.sent.front().mad.data());
    CHECK(r.service_id == 0x00000000013f1d2full); // the IB port space, port 7471
    CHECK(r.transport_type == 3);
    CHECK(r.extended_transport_type == 1);
    CHECK(r.local_qpn == 0x111111);
    // cm.c's cm_format_req leaves these 0 for an XRC initiator.
    CHECK(r.responder_resources == 0);
    CHECK(r.retry_count == 0);
    CHECK(r.rnr_retry_count == 0);
    CHECK_FALSE(r.srq);
    CHECK(r.initiator_depth == 1);

    REQUIRE(deliver(a, b) == 1);
    ipc::CmEventRecord e = b.event();
    REQUIRE(e.event == RDMA_CM_EVENT_CONNECT_REQUEST);
    CHECK(e.listen_id == listener);
    CHECK(e.qp_type == IBV_QPT_XRC_RECV);
    CHECK(e.conn.qp_num == 0x111111);
    const uint32_t passive = e.id;

    REQUIRE(b.agent.accept(b.client, {passive, 0, params(0x222222, "srqn")}) == 0);
    REQUIRE(b.env.sent.size() == 1);
    const mad::Rep rep = mad::decode<mad::Rep>(b.env.sent.front().mad.data());
    CHECK(rep.local_eecn == 0x222222); // cm.c's cm_format_rep for an XRC target
    CHECK(rep.local_qpn == 0);
    CHECK(rep.srq);
    CHECK(rep.initiator_depth == 0);
    REQUIRE(deliver(b, a) == 1);
    e = a.event();
    REQUIRE(e.event == RDMA_CM_EVENT_CONNECT_RESPONSE);
    CHECK(e.conn.qp_num == 0x222222);
    CHECK(std::memcmp(e.conn.private_data, "srqn", 4) == 0);

    // The initiator's RTR names the target's QP and sets no responder; its RTS is a reliable
    // requester's. The target's RTR sets the responder; its RTS only the PSN and the timeout.
    ipc::CmInitQpAttrReply ar{}, br{};
    REQUIRE(a.agent.init_qp_attr(a.client, {active, IBV_QPS_RTR}, ar) == 0);
    CHECK(ar.attr.dest_qp_num == 0x222222);
    CHECK((ar.mask & (IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) == 0);
    REQUIRE(b.agent.init_qp_attr(b.client, {passive, IBV_QPS_RTR}, br) == 0);
    CHECK(br.attr.dest_qp_num == 0x111111);
    CHECK((br.mask & IBV_QP_MAX_DEST_RD_ATOMIC) != 0);
    const uint32_t a_rq = ar.attr.rq_psn, b_rq = br.attr.rq_psn;
    REQUIRE(a.agent.init_qp_attr(a.client, {active, IBV_QPS_RTS}, ar) == 0);
    CHECK(ar.mask == (IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                      IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_TIMEOUT));
    CHECK(ar.attr.sq_psn == b_rq);
    REQUIRE(b.agent.init_qp_attr(b.client, {passive, IBV_QPS_RTS}, br) == 0);
    CHECK(br.mask == (IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT));
    CHECK(br.attr.sq_psn == a_rq);

    REQUIRE(a.agent.establish(a.client, active) == 0);
    REQUIRE(deliver(a, b) == 1); // the RTU
    CHECK(b.event().event == RDMA_CM_EVENT_ESTABLISHED);
    // The DREQ names the target's QP, which the target checks against its own.
    REQUIRE(a.agent.disconnect(a.client, active) == 0);
    const mad::Dreq dreq = mad::decode<mad::Dreq>(a.env.sent.front().mad.data());
    CHECK(dreq.remote_qpn == 0x222222);
    REQUIRE(deliver(a, b) == 1);
    CHECK(b.event().event == RDMA_CM_EVENT_DISCONNECTED);
}

TEST_CASE(
    "cm: a REQ of a transport its listener does not take is REJ 28 and an unknown one REJ 9") {
    Host a{kA};
    Host b{kB};
    b.listener(7471, RDMA_PS_IB, IBV_QPT_XRC_RECV);
    b.listener(7472, RDMA_PS_IB, IBV_QPT_RC);
    // RC to the XRC listener, XRC to the RC one: the listener's app cannot take it (28).
    const uint32_t rc = a.resolved(kB, 7471, RDMA_PS_IB, IBV_QPT_RC);
    const uint32_t xrc = a.resolved(kB, 7472, RDMA_PS_IB, IBV_QPT_XRC_SEND);
    for (uint32_t id : {rc, xrc}) {
        REQUIRE(a.agent.connect(a.client, {id, 0, params(0x333333)}) == 0);
        REQUIRE(deliver(a, b) == 1);
        CHECK(b.no_event());
        REQUIRE(deliver(b, a) == 1);
        const ipc::CmEventRecord e = a.event();
        CHECK(e.event == RDMA_CM_EVENT_REJECTED);
        CHECK(e.status == 28);
    }
    // Transport 3 with an extended type other than XRC's: invalid transport type (9).
    mad::Req req;
    req.local_comm_id = 0x4444;
    req.service_id = ipcm::service_id(RDMA_PS_IB, 7471);
    req.transport_type = 3;
    req.extended_transport_type = 2;
    Bytes m(mad::kMadSize);
    mad::encode(req, 5, m.data());
    b.agent.receive(v4(kA), m.data(), m.size());
    REQUIRE(b.env.sent.size() == 1);
    const mad::Rej rej = mad::decode<mad::Rej>(b.env.sent.front().mad.data());
    CHECK(rej.reason == 9);
    CHECK(rej.remote_comm_id == 0x4444);
    CHECK(b.no_event());
}

TEST_CASE("cm: a REQ for a port nobody listens on is rejected: invalid service ID (8)") {
    Pair p;
    uint32_t other = p.a.resolved(kB, 9999);
    REQUIRE(p.a.agent.connect(p.a.client, {other, 0, params(0x333333)}) == 0);
    deliver(p.a, p.b);
    CHECK(p.b.no_event());
    CHECK(p.b.agent.counters().req_no_listener == 1);
    REQUIRE(deliver(p.b, p.a) == 1);
    ipc::CmEventRecord e = p.a.event();
    CHECK(e.event == RDMA_CM_EVENT_REJECTED);
    CHECK(e.status == 8);
    p.a.advance(10'000); // and nothing is retried
    CHECK(p.a.env.sent.empty());
}

TEST_CASE("cm: an app's reject reaches the other side with its reason and private data") {
    Pair p;
    REQUIRE(p.a.agent.connect(p.a.client, {p.active, 0, params(0x111111)}) == 0);
    deliver(p.a, p.b);
    const uint32_t passive = p.b.event().id;
    ipc::CmRejectReq rej{};
    rej.id = passive;
    rej.private_data_len = 9;
    std::memcpy(rej.private_data, "go away!", 9);
    REQUIRE(p.b.agent.reject(p.b.client, rej) == 0);
    REQUIRE(deliver(p.b, p.a) == 1);
    ipc::CmEventRecord e = p.a.event();
    CHECK(e.event == RDMA_CM_EVENT_REJECTED);
    CHECK(e.status == 28); // consumer defined
    CHECK(e.conn.private_data_len == 148);
    CHECK(std::string(reinterpret_cast<char*>(e.conn.private_data)) == "go away!");
    rej.reason = 7; // only 28 and 35 are an app's to give
    CHECK(p.b.agent.reject(p.b.client, rej) == EINVAL);
}

TEST_CASE("cm: a REQ nobody answers is sent max_retries + 1 times, then UNREACHABLE ETIMEDOUT") {
    Host a{kA};
    Host b{kB}; // its agent never sees what a sends: a dead daemon
    uint32_t id = a.resolved(kB, 7174);
    REQUIRE(a.agent.connect(a.client, {id, 0, params(1)}) == 0);
    // 2 * 4.096 us * 2^16 (the path) + 4.096 us * 2^14 (the response): 512 + 64 ms
    size_t sends = a.env.sent.size();
    for (int i = 0; i < 3; ++i) {
        a.advance(575);
        CHECK(a.env.sent.size() == sends);
        a.advance(1);
        CHECK(a.env.sent.size() == ++sends);
    }
    CHECK(a.agent.counters().retransmits == 3);
    CHECK(a.no_event());
    a.advance(576);
    ipc::CmEventRecord e = a.event();
    CHECK(e.event == RDMA_CM_EVENT_UNREACHABLE);
    CHECK(e.status == -ETIMEDOUT);
    CHECK(a.agent.counters().timeouts == 1);
}

TEST_CASE("cm: a REQ sent again gets an MRA, which makes the active side wait longer") {
    Pair p;
    REQUIRE(p.a.agent.connect(p.a.client, {p.active, 0, params(1)}) == 0);
    const Bytes req = p.a.env.sent.front().mad;
    deliver(p.a, p.b);
    REQUIRE(p.b.event().event == RDMA_CM_EVENT_CONNECT_REQUEST);
    CHECK(p.b.env.sent.empty()); // the MRA waits for a duplicate (CMA_CM_MRA_SETTING)
    p.b.agent.receive(v4(kA), req.data(), req.size());
    CHECK(p.b.agent.counters().rx_duplicates == 1);
    CHECK(p.b.no_event());
    REQUIRE(p.b.env.sent.size() == 1);
    CHECK(p.b.env.sent.front().attr() == static_cast<uint16_t>(mad::Attr::Mra));
    deliver(p.b, p.a);
    p.a.advance(60'000); // 4.096 us * 2^24 is about 68 s: no retry, no timeout yet
    CHECK(p.a.env.sent.empty());
    CHECK(p.a.no_event());
}

TEST_CASE("cm: an address no host has fails after the app's timeout with ADDR_ERROR ETIMEDOUT") {
    Host a{kA};
    uint32_t id = a.id();
    ipc::CmResolveAddrReq r{};
    r.id = id;
    r.timeout_ms = 2000;
    r.dst = sin(ip("127.0.9.77"), 7174);
    REQUIRE(a.agent.resolve_addr(a.client, r) == 0);
    CHECK(a.no_event());
    a.advance(1999);
    CHECK(a.no_event());
    a.advance(1);
    ipc::CmEventRecord e = a.event();
    CHECK(e.event == RDMA_CM_EVENT_ADDR_ERROR);
    CHECK(e.status == -ETIMEDOUT);
    CHECK(a.agent.resolve_route(a.client, {id, 2000}) == EINVAL);
    // Binding to an address of another host is refused, as for one no interface holds.
    uint32_t other = a.id();
    ipc::CmIdInfo info{};
    CHECK(a.agent.bind(a.client, {other, 0, sin(kB, 1)}, info) == EADDRNOTAVAIL);
    CHECK(a.agent.bind(a.client, {other, 0, sin(kA, 7174)}, info) == 0);
    uint32_t third = a.id();
    CHECK(a.agent.bind(a.client, {third, 0, sin(kA, 7174)}, info) == EADDRINUSE);
    CHECK(a.agent.bind(a.client, {third, 0, sin(0, 7174)}, info) == EADDRNOTAVAIL);
}

TEST_CASE("cm: a host on a real interface reaches RoCE peers beyond the set that its network "
          "routes to; a set on loopback only its own hosts") {
    const uint32_t self = ip("10.214.0.2"), rxe = ip("10.214.0.1");
    auto resolve = [](Host& h, uint32_t dst) -> uint32_t {
        ipc::CmResolveAddrReq r{};
        r.id = h.id();
        r.timeout_ms = 100;
        r.dst = sin(dst, 7174);
        REQUIRE(h.agent.resolve_addr(h.client, r) == 0);
        uint32_t e = h.event().event;
        if (e != kNoEvent) return e;
        h.advance(100); // the resolution's timeout
        return h.event().event;
    };
    Host real{self};
    real.env.routes = {rxe};
    CHECK(resolve(real, rxe) == RDMA_CM_EVENT_ADDR_RESOLVED);
    CHECK(resolve(real, ip("10.99.0.1")) == RDMA_CM_EVENT_ADDR_ERROR); // no route
    CHECK(resolve(real, ip("127.0.9.77")) == RDMA_CM_EVENT_ADDR_ERROR);
    // Connecting sends the REQ to the peer's QP1.
    uint32_t active = real.resolved(rxe, 7174);
    real.env.sent.clear();
    REQUIRE(real.agent.connect(real.client, {active, 0, params(0x123)}) == 0);
    REQUIRE(real.env.sent.size() == 1);
    CHECK(real.env.sent.front().dst == rxe);
    CHECK(real.env.sent.front().attr() == static_cast<uint16_t>(mad::Attr::Req));

    Host loop{kA};
    loop.env.routes = {rxe};
    CHECK(resolve(loop, rxe) == RDMA_CM_EVENT_ADDR_ERROR);
}

TEST_CASE("cm: malformed, foreign and unknown MADs and messages for no connection are counted") {
    Pair p;
    mad::Rtu rtu;
    rtu.local_comm_id = 0x1234;
    rtu.remote_comm_id = 0x5678; // no connection of B has it
    Bytes m(mad::kMadSize);
    mad::encode(rtu, 1, m.data());
    p.b.agent.receive(v4(kA), m.data(), m.size());
    CHECK(p.b.agent.counters().rx_unmatched == 1);
    p.b.agent.receive(v4(kA), m.data(), 255); // truncated
    CHECK(p.b.agent.counters().rx_malformed == 1);
    Bytes other = m;
    other[1] = 0x03; // another management class
    p.b.agent.receive(v4(kA), other.data(), other.size());
    other = m;
    other[2] = 1; // CM class version 1
    p.b.agent.receive(v4(kA), other.data(), other.size());
    CHECK(p.b.agent.counters().rx_not_cm == 2);
    other = m;
    other[17] = 0x77;
    p.b.agent.receive(v4(kA), other.data(), other.size());
    CHECK(p.b.agent.counters().rx_unknown_attr == 1);
    other[17] = 0x19; // LAP
    p.b.agent.receive(v4(kA), other.data(), other.size());
    CHECK(p.b.agent.counters().rx_unsupported == 1);
    // A DREQ for no connection is answered with a DREP (the sender may be waiting for it).
    mad::Dreq dreq;
    dreq.local_comm_id = 9;
    dreq.remote_comm_id = 10;
    mad::encode(dreq, 2, m.data());
    p.b.agent.receive(v4(kA), m.data(), m.size());
    REQUIRE(p.b.env.sent.size() == 1);
    CHECK(p.b.env.sent.front().attr() == static_cast<uint16_t>(mad::Attr::Drep));
    CHECK(p.b.no_event());
    CHECK(p.b.agent.counters().rx_mads == 7);

    // A REP from a host the REQ did not go to, naming the connection: dropped.
    REQUIRE(p.a.agent.connect(p.a.client, {p.active, 0, params(1)}) == 0);
    const mad::Req req = mad::decode<mad::Req>(p.a.env.sent.front().mad.data());
    mad::Rep forged;
    forged.remote_comm_id = req.local_comm_id;
    forged.local_comm_id = 77;
    mad::encode(forged, 3, m.data());
    p.a.agent.receive(v4(ip("127.0.9.66")), m.data(), m.size());
    CHECK(p.a.no_event());
    CHECK(p.a.agent.counters().rx_bad_state == 1);
}

TEST_CASE("cm: REQs beyond a listener's backlog are dropped until its app reads the requests") {
    Host a{kA};
    Host b{kB};
    b.listener(7174, RDMA_PS_TCP, IBV_QPT_RC, 2);
    for (int i = 0; i < 5; ++i) {
        uint32_t id = a.resolved(kB, 7174);
        REQUIRE(a.agent.connect(a.client, {id, 0, params(static_cast<uint32_t>(i + 1))}) == 0);
    }
    deliver(a, b);
    CHECK(b.agent.counters().req_backlog_drops == 3);
    CHECK(b.env.sent.empty()); // no REJ: the active sides will try again
    CHECK(b.event().event == RDMA_CM_EVENT_CONNECT_REQUEST);
    CHECK(b.event().event == RDMA_CM_EVENT_CONNECT_REQUEST);
    CHECK(b.no_event());
    a.advance(576); // the REQs go again; two of the dropped ones find room now
    deliver(a, b);
    CHECK(b.event().event == RDMA_CM_EVENT_CONNECT_REQUEST);
    CHECK(b.event().event == RDMA_CM_EVENT_CONNECT_REQUEST);
    CHECK(b.agent.counters().rx_duplicates == 2); // the two that were delivered before
}

TEST_CASE("cm: SIDR resolves a UD service to the listener's QPN and Q_Key") {
    Host a{kA};
    Host b{kB};
    b.listener(4711, RDMA_PS_UDP, IBV_QPT_UD);
    uint32_t id = a.resolved(kB, 4711, RDMA_PS_UDP, IBV_QPT_UD);
    REQUIRE(a.agent.connect(a.client, {id, 0, params(0x444444, "ud?")}) == 0);
    CHECK(a.env.sent.front().attr() == static_cast<uint16_t>(mad::Attr::SidrReq));
    deliver(a, b);
    ipc::CmEventRecord e = b.event();
    REQUIRE(e.event == RDMA_CM_EVENT_CONNECT_REQUEST);
    CHECK(e.qp_type == IBV_QPT_UD);
    CHECK(e.conn.private_data_len == 180);
    CHECK(std::memcmp(e.conn.private_data, "ud?", 3) == 0);
    REQUIRE(b.agent.accept(b.client, {e.id, 0, params(0x555555)}) == 0);
    deliver(b, a);
    e = a.event();
    REQUIRE(e.event == RDMA_CM_EVENT_ESTABLISHED);
    CHECK(e.ud_qp_num == 0x555555);
    CHECK(e.ud_qkey == RDMA_UDP_QKEY);
    CHECK(e.ah.is_global == 1);
    CHECK(e.ah.grh.dgid.raw[15] == 2);

    uint32_t none = a.resolved(kB, 4712, RDMA_PS_UDP, IBV_QPT_UD);
    REQUIRE(a.agent.connect(a.client, {none, 0, params(1)}) == 0);
    deliver(a, b);
    deliver(b, a);
    e = a.event();
    CHECK(e.event == RDMA_CM_EVENT_UNREACHABLE);
    CHECK(e.status == 1); // SIDR status: service ID not supported
}

TEST_CASE("cm: destroying an ID tells the peer: REJ during the handshake, DREQ once connected") {
    Pair p;
    REQUIRE(p.a.agent.connect(p.a.client, {p.active, 0, params(1)}) == 0);
    deliver(p.a, p.b);
    uint32_t passive = p.b.event().id;
    uint32_t reported = 0;
    REQUIRE(p.b.agent.destroy_id(p.b.client, passive, reported) == 0);
    deliver(p.b, p.a);
    ipc::CmEventRecord e = p.a.event();
    CHECK(e.event == RDMA_CM_EVENT_REJECTED);
    CHECK(e.status == 28);

    // A connected ID whose app goes (a killed process): the peer is disconnected.
    uint32_t again = p.a.resolved(kB, 7174);
    REQUIRE(p.a.agent.connect(p.a.client, {again, 0, params(2)}) == 0);
    deliver(p.a, p.b);
    passive = p.b.event().id;
    REQUIRE(p.b.agent.accept(p.b.client, {passive, 0, params(3)}) == 0);
    deliver(p.b, p.a);
    REQUIRE(p.a.event().event == RDMA_CM_EVENT_CONNECT_RESPONSE);
    REQUIRE(p.a.agent.establish(p.a.client, again) == 0);
    deliver(p.a, p.b);
    REQUIRE(p.b.event().event == RDMA_CM_EVENT_ESTABLISHED);
    p.b.agent.drop_client(p.b.client);
    CHECK(p.b.agent.id_count() == 0);
    deliver(p.b, p.a);
    CHECK(p.a.event().event == RDMA_CM_EVENT_DISCONNECTED);
    // The peer's answer finds nobody and is dropped.
    REQUIRE(p.a.agent.disconnect(p.a.client, again) == 0);
    deliver(p.a, p.b);
}

TEST_CASE("cm: a destroyed listener's unread requests are refused, its events taken back") {
    Pair p;
    REQUIRE(p.a.agent.connect(p.a.client, {p.active, 0, params(1)}) == 0);
    deliver(p.a, p.b);
    CHECK(p.b.client.queued(p.b.channel) == 1);
    uint32_t reported = 0;
    REQUIRE(p.b.agent.destroy_id(p.b.client, p.listener, reported) == 0);
    CHECK(reported == 0);
    CHECK(p.b.client.queued(p.b.channel) == 0);
    CHECK(p.b.agent.id_count() == 0);
    deliver(p.b, p.a);
    ipc::CmEventRecord e = p.a.event();
    CHECK(e.event == RDMA_CM_EVENT_REJECTED);
    CHECK(e.status == 28);
}

TEST_CASE("cm: a multicast join hands out the group's IPv4-mapped MGID and the UDP Q_Key") {
    Host a{kA};
    uint32_t id = a.id(RDMA_PS_UDP, IBV_QPT_UD);
    ipc::CmIdInfo info{};
    REQUIRE(a.agent.bind(a.client, {id, 0, sin(kA, 0)}, info) == 0);
    ipc::CmJoinMcastReq j{};
    j.id = id;
    j.addr = sin(ip("224.0.0.7"), 0);
    uint32_t mc = 0;
    REQUIRE(a.agent.join_mcast(a.client, j, mc) == 0);
    ipc::CmEventRecord e = a.event();
    REQUIRE(e.event == RDMA_CM_EVENT_MULTICAST_JOIN);
    CHECK(e.mc == mc);
    CHECK(e.ud_qp_num == 0xFFFFFF);
    CHECK(e.ud_qkey == RDMA_UDP_QKEY);
    const uint8_t mgid[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 224, 0, 0, 7};
    CHECK(std::memcmp(e.ah.grh.dgid.raw, mgid, 16) == 0);
    uint32_t reported = 0;
    REQUIRE(a.agent.leave_mcast(a.client, {id, mc}, reported) == 0);
    CHECK(reported == 1);
    CHECK(a.agent.leave_mcast(a.client, {id, mc}, reported) == EADDRNOTAVAIL);
    j.addr = sin(ip("10.0.0.1"), 0); // not a group
    CHECK(a.agent.join_mcast(a.client, j, mc) == EINVAL);
}

namespace {

// A and B connected (A active): the handles of both ends. The RTU is left on A's wire when
// `deliver_rtu` is false.
std::pair<uint32_t, uint32_t> connect_pair(Pair& p, bool deliver_rtu = true) {
    REQUIRE(p.a.agent.connect(p.a.client, {p.active, 0, params(0x111111)}) == 0);
    deliver(p.a, p.b);
    const uint32_t passive = p.b.event().id;
    REQUIRE(p.b.agent.accept(p.b.client, {passive, 0, params(0x222222)}) == 0);
    deliver(p.b, p.a);
    REQUIRE(p.a.event().event == RDMA_CM_EVENT_CONNECT_RESPONSE);
    REQUIRE(p.a.agent.establish(p.a.client, p.active) == 0);
    if (deliver_rtu) {
        deliver(p.a, p.b);
        REQUIRE(p.b.event().event == RDMA_CM_EVENT_ESTABLISHED);
    }
    return {p.active, passive};
}

} // namespace

TEST_CASE("cm: a lost RTU is sent again when the REP comes again; an unanswered REP fails") {
    Pair p;
    auto [active, passive] = connect_pair(p, false);
    p.a.env.sent.clear(); // the RTU is lost
    // The passive side waits 4.096 us * 2^14 (the REQ's local response timeout), then sends the
    // REP again; the active side, established already, answers it with the RTU again.
    p.b.advance(64);
    REQUIRE(p.b.env.sent.size() == 1);
    CHECK(p.b.env.sent.front().attr() == static_cast<uint16_t>(mad::Attr::Rep));
    deliver(p.b, p.a);
    CHECK(p.a.agent.counters().rx_duplicates == 1);
    REQUIRE(p.a.env.sent.size() == 1);
    CHECK(p.a.env.sent.front().attr() == static_cast<uint16_t>(mad::Attr::Rtu));
    deliver(p.a, p.b);
    CHECK(p.b.event().event == RDMA_CM_EVENT_ESTABLISHED);
    (void)active;
    (void)passive;

    // Another connection whose active side is gone: the REP goes 1 + 3 times, then the
    // passive side is UNREACHABLE.
    uint32_t again = p.a.resolved(kB, 7174);
    REQUIRE(p.a.agent.connect(p.a.client, {again, 0, params(3)}) == 0);
    deliver(p.a, p.b);
    const uint32_t orphan = p.b.event().id;
    REQUIRE(p.b.agent.accept(p.b.client, {orphan, 0, params(4)}) == 0);
    for (int i = 0; i < 4; ++i)
        p.b.advance(64);
    ipc::CmEventRecord e = p.b.event();
    CHECK(e.event == RDMA_CM_EVENT_UNREACHABLE);
    CHECK(e.status == -ETIMEDOUT);
    CHECK(e.id == orphan);
}

TEST_CASE("cm: a DREQ nobody answers ends in DISCONNECTED ETIMEDOUT; a lost DREP comes again") {
    Pair p;
    auto [active, passive] = connect_pair(p);
    REQUIRE(p.a.agent.disconnect(p.a.client, active) == 0);
    deliver(p.a, p.b);
    REQUIRE(p.b.event().event == RDMA_CM_EVENT_DISCONNECTED);
    REQUIRE(p.b.agent.disconnect(p.b.client, passive) == 0);
    p.b.env.sent.clear(); // the DREP is lost
    p.a.advance(576);     // the DREQ goes again ...
    deliver(p.a, p.b);    // ... and B, in time wait, answers it again
    CHECK(p.b.agent.counters().rx_duplicates == 1);
    deliver(p.b, p.a);
    CHECK(p.a.event().event == RDMA_CM_EVENT_DISCONNECTED);

    Pair q(7175);
    auto [a2, b2] = connect_pair(q);
    (void)b2;
    REQUIRE(q.a.agent.disconnect(q.a.client, a2) == 0);
    for (int i = 0; i < 4; ++i) // B never answers: 1 + 3 DREQs
        q.a.advance(576);
    ipc::CmEventRecord e = q.a.event();
    CHECK(e.event == RDMA_CM_EVENT_DISCONNECTED);
    CHECK(e.status == -ETIMEDOUT);
    q.a.advance(512);
    CHECK(q.a.event().event == RDMA_CM_EVENT_TIMEWAIT_EXIT);
}

TEST_CASE("cm: rdma_notify(COMM_EST) establishes a passive side that got data before the RTU") {
    Pair p;
    auto [active, passive] = connect_pair(p, false);
    (void)active;
    CHECK(p.b.agent.notify(p.b.client, {passive, IBV_EVENT_PATH_MIG}) == EINVAL);
    REQUIRE(p.b.agent.notify(p.b.client, {passive, IBV_EVENT_COMM_EST}) == 0);
    CHECK(p.b.event().event == RDMA_CM_EVENT_ESTABLISHED);
    CHECK(p.b.agent.notify(p.b.client, {passive, IBV_EVENT_COMM_EST}) == EISCONN);
    deliver(p.a, p.b); // the RTU, late: nothing more happens
    CHECK(p.b.no_event());
    p.b.advance(10'000);
    CHECK(p.b.env.sent.empty()); // and the REP is not retried
}

TEST_CASE("cm: random MADs, valid headers or not, are all counted and break nothing") {
    Pair p;
    auto [active, passive] = connect_pair(p);
    std::mt19937 rng(5);
    Bytes m(mad::kMadSize);
    for (int i = 0; i < 20000; ++i) {
        for (auto& b : m)
            b = static_cast<uint8_t>(rng());
        if (i % 2) { // mostly a CM header with a real attribute: the decoders and lookups run
            m[0] = mad::kBaseVersion;
            m[1] = mad::kClassCm;
            m[2] = mad::kClassVersion;
            m[3] = mad::kMethodSend;
            m[16] = 0;
            m[17] = static_cast<uint8_t>(0x10 + rng() % 9);
        }
        const size_t len = i % 7 ? m.size() : rng() % m.size();
        p.b.agent.receive(v4(i % 3 ? kA : ip("127.0.9.50")), m.data(), len);
    }
    const auto& c = p.b.agent.counters();
    const uint64_t counted = c.rx_malformed + c.rx_not_cm + c.rx_unknown_attr + c.rx_unsupported +
                             c.rx_duplicates + c.rx_unmatched + c.rx_bad_state + c.req_no_listener +
                             c.req_rejected + c.req_backlog_drops;
    CHECK(c.rx_mads == 20000 + 2); // and the REQ and RTU of the connection
    CHECK(counted + c.connections >= 20000);
    // The connection is still there and still ends as it should.
    REQUIRE(p.a.agent.disconnect(p.a.client, active) == 0);
    p.b.env.sent.clear();
    deliver(p.a, p.b);
    ipc::CmEventRecord e{};
    do {
        e = p.b.event();
    } while (e.event != kNoEvent && e.id != passive);
    CHECK(e.event == RDMA_CM_EVENT_DISCONNECTED);
}
