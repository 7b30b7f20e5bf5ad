// The rdma_cm side of the agent: CM IDs, addresses and ports, route resolution, listening,
// options, destruction and the timers (cma.c's part, with cm.c's time wait and timeouts).
#include "cm_agent.h"

#include "emu/wire/ip_cm.h"

#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>

namespace nicsim::cm {

namespace {

constexpr uint16_t kEphemeralLow = 32768; // Linux's default ip_local_port_range
constexpr uint16_t kEphemeralHigh = 60999;
constexpr uint8_t kHopLimit = 64; // RoCE v2: the route's TTL or hop limit (dev_addr.hoplimit)

// An app's sockaddr as an endpoint: AF_INET, or AF_INET6 (::, ::ffff:a.b.c.d or IPv6).
int endpoint_of(const ipc::CmAddr& a, Endpoint& ep) {
    ep.family = a.sa.sin6_family;
    if (ep.family == AF_INET) {
        sockaddr_in sin;
        std::memcpy(&sin, &a.sa, sizeof sin);
        ep.addr = sin.sin_addr.s_addr ? emu::wire::IpAddress::from_ipv4(sin.sin_addr.s_addr)
                                      : emu::wire::IpAddress{};
        ep.port = ntohs(sin.sin_port);
        return 0;
    }
    if (ep.family != AF_INET6) return EAFNOSUPPORT;
    ep.addr = emu::wire::IpAddress::from_in6(a.sa.sin6_addr);
    if (ep.addr.is_unspecified()) ep.addr = {};
    ep.port = ntohs(a.sa.sin6_port);
    return 0;
}

// An ID's endpoint as the app sees it: in the family it spoke, or AF_INET6 for an IPv6 address
// (an ID bound to 0.0.0.0 that resolved an IPv6 peer).
ipc::CmAddr addr_of(const Endpoint& ep) {
    ipc::CmAddr a{};
    const bool v6_address = !ep.addr.is_unspecified() && !ep.addr.is_ipv4();
    if (ep.family == AF_INET6 || v6_address) {
        a.sa.sin6_family = AF_INET6;
        a.sa.sin6_port = htons(ep.port);
        if (!ep.addr.is_unspecified()) a.sa.sin6_addr = ep.addr.in6();
    } else if (ep.family == AF_INET) {
        sockaddr_in sin{};
        sin.sin_family = AF_INET;
        sin.sin_port = htons(ep.port);
        sin.sin_addr.s_addr = ep.addr.is_unspecified() ? 0 : ep.addr.ipv4();
        std::memcpy(&a.sa, &sin, sizeof sin);
    }
    return a;
}

// "10.0.0.1:7471", "[fd00::1]:7471", "0.0.0.0:7471" for the wildcard.
std::string endpoint_text(const Endpoint& e) {
    if (e.addr.is_unspecified())
        return (e.family == AF_INET6 ? "[::]:" : "0.0.0.0:") + std::to_string(e.port);
    if (e.addr.is_ipv4()) return e.addr.text() + ":" + std::to_string(e.port);
    return "[" + e.addr.text() + "]:" + std::to_string(e.port);
}

const char* version(const emu::wire::IpAddress& a) {
    return a.is_ipv4() ? "IPv4" : "IPv6";
}

bool valid_port_space(uint32_t ps) {
    return ps == RDMA_PS_TCP || ps == RDMA_PS_UDP || ps == RDMA_PS_IB || ps == RDMA_PS_IPOIB;
}

} // namespace

uint8_t ack_timeout(uint8_t ack_delay, uint8_t packet_life_time) {
    int t = packet_life_time + 1;
    if (t >= ack_delay)
        t += (ack_delay >= t - 1);
    else
        t = ack_delay + (t >= ack_delay - 1);
    return static_cast<uint8_t>(t < 31 ? t : 31);
}

const char* name(RdmaState s) {
    static constexpr const char* kNames[] = {"idle",        "addr_query",     "addr_resolved",
                                             "route_query", "route_resolved", "connect",
                                             "disconnect",  "addr_bound",     "listen"};
    return kNames[static_cast<size_t>(s)];
}

const char* name(CmState s) {
    static constexpr const char* kNames[] = {
        "idle",      "req_sent",     "mra_req_rcvd", "req_rcvd",      "mra_req_sent",
        "rep_sent",  "mra_rep_rcvd", "rep_rcvd",     "mra_rep_sent",  "established",
        "dreq_sent", "dreq_rcvd",    "timewait",     "sidr_req_sent", "sidr_req_rcvd"};
    return kNames[static_cast<size_t>(s)];
}

CmAgent::CmAgent(CmEnv& env, CmConfig config, spdlog::logger& log)
    : env_(env), config_(std::move(config)), log_(log), hi_tid_(env.random32()) {}

CmAgent::~CmAgent() = default;

CmId* CmAgent::by_handle(uint32_t handle) {
    auto it = ids_.find(handle);
    return it == ids_.end() ? nullptr : it->second.get();
}

// A session names only its own IDs.
CmId* CmAgent::find(CmClient& c, uint32_t handle) {
    CmId* id = by_handle(handle);
    return id && id->owner == &c ? id : nullptr;
}

CmId* CmAgent::by_comm_id(uint32_t local_comm_id, uint32_t remote_comm_id) {
    auto it = by_local_comm_.find(local_comm_id);
    if (it == by_local_comm_.end()) return nullptr;
    return it->second->remote_comm_id == remote_comm_id ? it->second : nullptr;
}

uint32_t CmAgent::new_comm_id() {
    for (;;) {
        uint32_t v = env_.random32();
        if (v && !by_local_comm_.count(v)) return v;
    }
}

bool CmAgent::known_host(const Address& addr) const {
    if (addr == config_.local_addr) return true;
    for (const Address& h : config_.hosts)
        if (h == addr) return true;
    return false;
}

// A set on loopback (127.0.S.i) has its own hosts alone; a host on a real interface (rdmaemu up
// --address) may reach RoCE hosts beyond the set, as a NIC reaches its neighbours: whatever the
// kernel routes to from our address, except loopback.
bool CmAgent::outside_peer(const Address& addr) const {
    return !config_.local_addr.is_loopback() && !addr.is_loopback() &&
           env_.routable(config_.local_addr, addr);
}

// RoCE v2: a host's GID is its address (IPv4-mapped for IPv4).
mad::Gid CmAgent::gid_of(const Address& addr) {
    mad::Gid g{};
    std::memcpy(g.data(), addr.data(), 16);
    return g;
}

int CmAgent::create_id(CmClient& c, const ipc::CmCreateIdReq& req, uint32_t& handle) {
    if (!c.has_channel(req.channel)) return EINVAL;
    if (!valid_port_space(req.port_space)) return EPROTONOSUPPORT;
    if (req.qp_type != IBV_QPT_RC && req.qp_type != IBV_QPT_UC && req.qp_type != IBV_QPT_UD &&
        req.qp_type != IBV_QPT_XRC_SEND && req.qp_type != IBV_QPT_XRC_RECV)
        return EINVAL;
    auto id = std::make_unique<CmId>();
    id->handle = handle = ++last_handle_;
    id->owner = &c;
    id->channel = req.channel;
    id->ps = static_cast<uint16_t>(req.port_space);
    id->qp_type = static_cast<ibv_qp_type>(req.qp_type);
    ids_[handle] = std::move(id);
    return 0;
}

ipc::CmIdInfo CmAgent::info_of(const CmId& id) const {
    ipc::CmIdInfo info{};
    Endpoint src = id.local;
    if (!src.family) src.family = static_cast<uint16_t>(config_.local_addr.family());
    info.src = addr_of(src);
    info.dst = addr_of(id.remote);
    if (id.on_device) {
        info.node_guid = config_.node_guid;
        info.port_num = 1;
    }
    if (id.has_route) {
        info.has_route = 1;
        ipc::CmPath& p = info.path;
        std::memcpy(p.sgid, gid_of(id.local.addr).data(), 16);
        std::memcpy(p.dgid, gid_of(id.remote.addr).data(), 16);
        p.pkey = 0xFFFF;
        p.mtu = static_cast<uint8_t>(config_.mtu);
        p.hop_limit = kHopLimit;
        p.traffic_class = id.tos;
        p.rate = static_cast<uint8_t>(config_.rate);
        p.packet_life_time = config_.packet_life_time;
    }
    return info;
}

// cma.c's cma_check_port: another ID bound to the port conflicts unless both allow reuse and it
// is not listening; with either on the wildcard address that is EADDRNOTAVAIL, on the same
// address EADDRINUSE.
int CmAgent::check_port(const CmId& id, bool reuse) const {
    for (const auto& [h, other] : ids_) {
        if (other.get() == &id || !other->owns_port || other->ps != id.ps ||
            other->local.port != id.local.port)
            continue;
        if (reuse && other->reuseaddr && other->state != RdmaState::Listen) continue;
        if (id.local.addr.is_unspecified() || other->local.addr.is_unspecified())
            return EADDRNOTAVAIL;
        if (id.local.addr == other->local.addr) return EADDRINUSE;
    }
    return 0;
}

uint16_t CmAgent::free_port(uint16_t ps) {
    const uint32_t range = kEphemeralHigh - kEphemeralLow + 1;
    const uint32_t start = env_.random32() % range;
    for (uint32_t i = 0; i < range; ++i) {
        auto port = static_cast<uint16_t>(kEphemeralLow + (start + i) % range);
        bool taken = false;
        for (const auto& [h, other] : ids_)
            if (other->owns_port && other->ps == ps && other->local.port == port) taken = true;
        if (!taken) return port;
    }
    return 0;
}

// Binding: the wildcard or this host's own address (another one is EADDRNOTAVAIL, as for an
// address no interface of the machine holds); port 0 picks a free one.
int CmAgent::bind_endpoint(CmId& id, const Endpoint& ep) {
    if (!ep.addr.is_unspecified() && ep.addr != config_.local_addr) return EADDRNOTAVAIL;
    id.local = ep;
    if (!ep.port) {
        id.local.port = free_port(id.ps);
        if (!id.local.port) return EADDRINUSE;
    } else if (int err = check_port(id, id.reuseaddr)) {
        id.local = {};
        return err;
    }
    id.owns_port = true;
    id.on_device = !ep.addr.is_unspecified();
    id.state = RdmaState::AddrBound;
    return 0;
}

int CmAgent::bind(CmClient& c, const ipc::CmBindReq& req, ipc::CmIdInfo& info) {
    CmId* id = find(c, req.id);
    if (!id || id->state != RdmaState::Idle) return EINVAL;
    Endpoint ep;
    if (int err = endpoint_of(req.addr, ep)) return err;
    if (int err = bind_endpoint(*id, ep)) return err;
    info = info_of(*id);
    return 0;
}

int CmAgent::resolve_addr(CmClient& c, const ipc::CmResolveAddrReq& req) {
    CmId* id = find(c, req.id);
    if (!id) return EINVAL;
    Endpoint dst;
    if (int err = endpoint_of(req.dst, dst)) return err;
    // A host speaks one IP version (its socket's): an address of the other is no neighbour of
    // its, now or later.
    if (!dst.addr.is_unspecified() && dst.addr.is_ipv4() != config_.local_addr.is_ipv4()) {
        log_.info("cm#{}: cannot resolve {}: an {} address, and this host ({}) is {}", id->handle,
                  dst.addr.text(), version(dst.addr), config_.local_addr.text(),
                  version(config_.local_addr));
        return EAFNOSUPPORT;
    }
    if (id->state == RdmaState::Idle) {
        Endpoint src{{}, 0, dst.family};
        if (req.has_src)
            if (int err = endpoint_of(req.src, src)) return err;
        if (int err = bind_endpoint(*id, src)) return err;
    }
    if (id->state != RdmaState::AddrBound) return EINVAL;
    if (dst.addr.is_unspecified()) dst.addr = config_.local_addr; // the wildcard: this host
    id->remote = dst;
    id->local.addr = config_.local_addr;
    id->on_device = true;
    id->state = RdmaState::AddrQuery;
    // A group (224.0.0.0/4, ff00::/8) needs no neighbour: the ID then joins it
    // (rdma_join_multicast).
    const bool group = dst.addr.is_multicast();
    if (known_host(dst.addr) || group || outside_peer(dst.addr)) {
        id->state = RdmaState::AddrResolved;
        ipc::CmEventRecord e = event(*id, RDMA_CM_EVENT_ADDR_RESOLVED);
        deliver(*id, e);
        return 0;
    }
    // No host of the set holds it: like a neighbour that never answers ARP, the resolution
    // fails with ETIMEDOUT once the app's timeout has passed.
    log_.debug("cm#{}: no host has {}; address error in {} ms", id->handle, dst.addr.text(),
               req.timeout_ms);
    arm(*id, Timer::AddrResolution, req.timeout_ms > 0 ? static_cast<uint64_t>(req.timeout_ms) : 0);
    return 0;
}

int CmAgent::resolve_route(CmClient& c, const ipc::CmResolveRouteReq& req) {
    CmId* id = find(c, req.id);
    if (!id || id->state != RdmaState::AddrResolved) return EINVAL;
    // RoCE: the route is the address pair; no subnet administrator to ask.
    id->has_route = true;
    id->state = RdmaState::RouteResolved;
    deliver(*id, event(*id, RDMA_CM_EVENT_ROUTE_RESOLVED));
    return 0;
}

int CmAgent::query(CmClient& c, uint32_t handle, ipc::CmIdInfo& info) {
    CmId* id = find(c, handle);
    if (!id) return EINVAL;
    info = info_of(*id);
    return 0;
}

int CmAgent::listen(CmClient& c, const ipc::CmListenReq& req, ipc::CmIdInfo& info) {
    CmId* id = find(c, req.id);
    if (!id) return EINVAL;
    if (id->state == RdmaState::Idle)
        if (int err = bind_endpoint(*id, Endpoint{{}, 0, AF_INET})) return err;
    if (id->state != RdmaState::AddrBound) return EINVAL;
    if (id->reuseaddr)
        if (int err = check_port(*id, false)) return err;
    id->backlog =
        req.backlog > 0 && req.backlog < config_.max_backlog ? req.backlog : config_.max_backlog;
    id->state = RdmaState::Listen;
    log_.debug("cm#{}: listening on {}", id->handle, endpoint_text(id->local));
    info = info_of(*id);
    return 0;
}

int CmAgent::set_option(CmClient& c, const ipc::CmSetOptionReq& req) {
    CmId* id = find(c, req.id);
    if (!id) return EINVAL;
    if (req.optlen > sizeof req.optval) return EINVAL;
    auto as_int = [&](int& v) {
        if (req.optlen != sizeof(int)) return false;
        std::memcpy(&v, req.optval, sizeof v);
        return true;
    };
    int v = 0;
    if (req.level == RDMA_OPTION_ID) {
        switch (req.optname) {
        case RDMA_OPTION_ID_TOS:
            if (req.optlen != 1) return EINVAL;
            id->tos = req.optval[0];
            return 0;
        case RDMA_OPTION_ID_REUSEADDR:
            if (!as_int(v)) return EINVAL;
            if (id->state != RdmaState::Idle && v) return EINVAL; // before binding only
            id->reuseaddr = v != 0;
            return 0;
        case RDMA_OPTION_ID_AFONLY:
            if (!as_int(v) || id->state != RdmaState::Idle) return EINVAL;
            id->afonly = v != 0;
            return 0;
        case RDMA_OPTION_ID_ACK_TIMEOUT:
            if (req.optlen != 1) return EINVAL;
            id->ack_timeout_set = true;
            id->ack_timeout = req.optval[0] & 0x1F;
            return 0;
        default:
            return ENOSYS;
        }
    }
    if (req.level == RDMA_OPTION_IB && req.optname == RDMA_OPTION_IB_PATH) {
        // A path given by the app (rdma_create_ep with ai_route): on RoCE it is the address
        // pair the ID resolved, so it completes route resolution as resolve_route does.
        if (req.optlen == 0 || req.optlen % sizeof(ibv_path_data)) return EINVAL;
        if (id->state != RdmaState::AddrResolved) return EINVAL;
        id->has_route = true;
        id->state = RdmaState::RouteResolved;
        deliver(*id, event(*id, RDMA_CM_EVENT_ROUTE_RESOLVED));
        return 0;
    }
    return ENOSYS;
}

int CmAgent::migrate_id(CmClient& c, const ipc::CmMigrateReq& req, uint32_t& events_reported) {
    CmId* id = find(c, req.id);
    if (!id || !c.has_channel(req.channel)) return EINVAL;
    id->channel = req.channel;
    c.move_events(id->handle, req.channel);
    events_reported = id->events_reported;
    return 0;
}

ipc::CmEventRecord CmAgent::event(const CmId& id, rdma_cm_event_type type, int status) const {
    ipc::CmEventRecord e{};
    e.event = type;
    e.status = status;
    e.id = id.handle;
    e.qp_type = id.qp_type;
    e.has_info = 1;
    e.info = info_of(id);
    return e;
}

void CmAgent::deliver(CmId& id, const ipc::CmEventRecord& e) {
    log_.debug("cm#{}: {} status {}", id.handle, ipc::cm_event_name(e.event), e.status);
    id.owner->queue(id.channel, e);
}

bool CmAgent::get_event(CmClient& c, uint32_t channel, ipc::CmEventRecord& out) {
    if (!c.take(channel, out)) return false;
    // A connection request counts as the listener's event (ucma.c: its context reported it).
    const bool request = out.event == RDMA_CM_EVENT_CONNECT_REQUEST;
    if (CmId* l = request ? find(c, out.listen_id) : nullptr) ++l->events_reported;
    if (CmId* id = find(c, out.id)) {
        if (!request) ++id->events_reported;
        for (Multicast& m : id->groups)
            if (out.mc && m.handle == out.mc) ++m.events_reported;
        if (out.event == RDMA_CM_EVENT_CONNECT_REQUEST && id->listener) {
            // The request is the app's now: its listener has room for another.
            if (CmId* l = find(c, id->listener)) --l->pending_requests;
            id->listener = 0;
            --pending_requests_;
        }
    }
    return true;
}

int CmAgent::destroy_id(CmClient& c, uint32_t handle, uint32_t& events_reported) {
    CmId* id = find(c, handle);
    if (!id) return EINVAL;
    events_reported = id->events_reported;
    destroy(*id);
    return 0;
}

// cm.c's cm_destroy_id: the peer learns what became of the connection; then the ID, its events
// not yet read and, for a listener, the requests its app never saw, go.
void CmAgent::destroy(CmId& id) {
    switch (id.cm) {
    case CmState::ReqSent:
    case CmState::MraReqRcvd: {
        uint8_t guid[8];
        std::memcpy(guid, &config_.node_guid, 8);
        send_rej(id, mad::RejReason::Timeout, guid, sizeof guid, nullptr, 0);
        break;
    }
    case CmState::ReqRcvd:
    case CmState::MraReqSent:
    case CmState::RepSent:
    case CmState::MraRepRcvd:
    case CmState::RepRcvd:
    case CmState::MraRepSent:
        send_rej(id, mad::RejReason::ConsumerDefined, nullptr, 0, nullptr, 0);
        break;
    case CmState::Established:
        send_dreq(id); // once: nobody is left to wait for the DREP
        break;
    case CmState::DreqRcvd:
        send_drep(id);
        break;
    case CmState::SidrReqRcvd:
        send_sidr_rep(id, mad::SidrStatus::Reject, 0, 0, nullptr, 0);
        break;
    default:
        break;
    }
    const uint32_t handle = id.handle;
    std::vector<uint32_t> unread_requests;
    id.owner->drop_events_if([&](const ipc::CmEventRecord& e) {
        if (e.id == handle) return true;
        if (e.event != RDMA_CM_EVENT_CONNECT_REQUEST || e.listen_id != handle) return false;
        unread_requests.push_back(e.id);
        return true;
    });
    if (id.listener) {
        if (CmId* l = by_handle(id.listener)) --l->pending_requests;
        --pending_requests_;
    }
    if (auto it = by_local_comm_.find(id.local_comm_id);
        it != by_local_comm_.end() && it->second == &id)
        by_local_comm_.erase(it);
    std::erase_if(by_remote_, [handle](const auto& kv) { return kv.second == handle; });
    std::erase_if(sidr_by_remote_, [handle](const auto& kv) { return kv.second == handle; });
    ids_.erase(handle);
    for (uint32_t child : unread_requests)
        if (CmId* ch = by_handle(child)) destroy(*ch);
}

void CmAgent::destroy_channel(CmClient& c, uint32_t channel) {
    std::vector<uint32_t> on_channel;
    for (const auto& [h, id] : ids_)
        if (id->owner == &c && id->channel == channel) on_channel.push_back(h);
    for (uint32_t h : on_channel)
        if (CmId* id = by_handle(h)) destroy(*id);
    c.destroy_channel(channel);
}

void CmAgent::drop_client(CmClient& c) {
    std::vector<uint32_t> owned;
    for (const auto& [h, id] : ids_)
        if (id->owner == &c) owned.push_back(h);
    for (uint32_t h : owned)
        if (CmId* id = by_handle(h)) destroy(*id);
}

void CmAgent::reset_to_idle(CmId& id) {
    disarm(id);
    id.out.active = false;
    id.cm = CmState::Idle;
}

// IBA 12.9.6: after a connection ends the QP numbers stay out of use for a while, so late
// packets of the old connection cannot reach a new one.
void CmAgent::enter_timewait(CmId& id) {
    id.out.active = false;
    id.cm = CmState::Timewait;
    arm(id, Timer::Timewait, iba_time_ms(id.av_timeout));
}

void CmAgent::arm(CmId& id, Timer kind, uint64_t after_ms) {
    id.timer = kind;
    id.deadline_ms = env_.now_ms() + after_ms;
    deadlines_.push({id.deadline_ms, id.handle});
    env_.wake_at(deadlines_.top().first);
}

void CmAgent::disarm(CmId& id) {
    id.timer = Timer::None;
    id.deadline_ms = 0;
}

void CmAgent::on_timer() {
    const uint64_t now = env_.now_ms();
    while (!deadlines_.empty() && deadlines_.top().first <= now) {
        auto [at, handle] = deadlines_.top();
        deadlines_.pop();
        CmId* id = by_handle(handle);
        if (id && id->timer != Timer::None && id->deadline_ms == at) fire(*id);
    }
    if (!deadlines_.empty()) env_.wake_at(deadlines_.top().first);
}

void CmAgent::fire(CmId& id) {
    const Timer kind = id.timer;
    disarm(id);
    switch (kind) {
    case Timer::Retransmit:
        if (id.out.active && id.out.retries_left > 0) {
            --id.out.retries_left;
            ++counters_.retransmits;
            send(id.peer_addr, id.out.mad.data());
            arm(id, Timer::Retransmit, id.out.timeout_ms);
            return;
        }
        if (id.out.active) on_timeout(id);
        return;
    case Timer::AddrResolution:
        if (id.state != RdmaState::AddrQuery) return;
        id.state = RdmaState::AddrBound;
        id.on_device = !id.local.addr.is_unspecified();
        deliver(id, event(id, RDMA_CM_EVENT_ADDR_ERROR, -ETIMEDOUT));
        return;
    case Timer::Timewait:
        id.cm = CmState::Idle;
        if (id.state == RdmaState::Disconnect) deliver(id, event(id, RDMA_CM_EVENT_TIMEWAIT_EXIT));
        return;
    case Timer::None:
        return;
    }
}

// cm.c's cm_process_send_error: the request ran out of retries.
void CmAgent::on_timeout(CmId& id) {
    ++counters_.timeouts;
    id.out.active = false;
    const bool connecting = id.state == RdmaState::Connect;
    log_.info("cm#{}: no answer from {} in {} state after {} tries", id.handle, id.peer_addr.text(),
              name(id.cm), id.max_cm_retries + 1);
    switch (id.cm) {
    case CmState::ReqSent:
    case CmState::MraReqRcvd:
    case CmState::RepSent:
    case CmState::MraRepRcvd:
    case CmState::SidrReqSent:
        reset_to_idle(id);
        if (connecting) deliver(id, event(id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT));
        return;
    case CmState::DreqSent:
        enter_timewait(id);
        if (connecting) {
            id.state = RdmaState::Disconnect;
            deliver(id, event(id, RDMA_CM_EVENT_DISCONNECTED, -ETIMEDOUT));
        }
        return;
    default:
        return;
    }
}

Json CmAgent::ids_json(const CmClient& c) const {
    Json out = Json::array();
    for (const auto& [h, id] : ids_) {
        if (id->owner != &c) continue;
        auto ep = [](const Endpoint& e) { return endpoint_text(e); };
        out.push_back({{"id", h},
                       {"state", name(id->state)},
                       {"cm_state", name(id->cm)},
                       {"port_space", id->ps},
                       {"local", ep(id->local)},
                       {"remote", ep(id->remote)},
                       {"qpn", id->local_qpn},
                       {"remote_qpn", id->remote_qpn}});
    }
    return out;
}

} // namespace nicsim::cm
