#include "status_json.h"

#include "cm/cm_agent.h"
#include "session.h"
#include "transport/engines.h"

#include "emu/verbs_names.h"
#include "emu/wire/ip_address.h"

#include <nlohmann/json.hpp>
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cstdio>
#include <unistd.h>

namespace nicsim {

Json host_counters_json(const LinkCounters& link, const RawCounters& raw,
                        const McastCounters& mcast, const DropCounters& drops,
                        const PollCounters& poll) {
    Json j = Json::object();
    add_counters(j, "", link);
    add_counters(j, "raw_", raw);
    add_counters(j, "mcast_", mcast);
    add_counters(j, "mcast_", link.mcast);
    add_counters(j, "", drops);
    add_counters(j, "", poll);
    return j;
}

namespace {

// The peer a connected QP sends to: its GID as an address (IPv4 when IPv4-mapped, RoCE v2 on
// 127.0.S.i; IPv6 text otherwise); "" before RTR.
std::string peer_text(const ibv_qp_attr& a) {
    if (!a.dest_qp_num) return "";
    return emu::wire::IpAddress::from_gid(a.ah_attr.grh.dgid.raw).text();
}

std::string hex(uint32_t v) {
    return fmt::format("{:#x}", v);
}

Json qp_json(const Qp& handle) {
    const Qp& qp = handle.shared ? *handle.shared : handle; // an ibv_open_qp handle: the QP
    // QP numbers in hex, as perftest, tshark and the verbs trace print them.
    Json j = {{"qpn", hex(qp.qpn)},
              {"type", emu::names::qp_type_short(qp.type)},
              {"state", emu::names::qp_state_short(qp.attr.qp_state)}};
    add_counters(j, "", qp.counters);
    add_counters(j, "", qp.counters.drops);
    // The PSNs where each side stands and the peer: what a learner watches move in `rdmaemu ui`.
    j["sq_psn"] = hex(qp.req.next_psn);
    j["una_psn"] = hex(qp.req.una_psn);
    j["rq_psn"] = hex(qp.resp.epsn);
    j["dest_qpn"] = hex(qp.attr.dest_qp_num);
    j["peer"] = peer_text(qp.attr);
    return j;
}

// How the NIC reaches an MR's bytes: "mapped" (shared_bytes of them with memory copies, the rest
// through the process's memory) or "process" (all through /proc/<pid>/mem).
Json mr_json(const Mr& mr) {
    return {{"handle", mr.handle},
            {"addr", mr.addr},
            {"length", mr.length},
            {"engine", mr.dm ? "device_memory" : mr.memory->engine()},
            {"shared_bytes", mr.memory->shared_bytes()},
            {"lkey", hex(mr.lkey)},
            {"rkey", hex(mr.rkey)},
            {"access", emu::names::access_flags(mr.access)}};
}

Json cq_json(const Cq& cq) {
    return {{"handle", cq.handle}, {"cqe", cq.cqe}, {"overrun", cq.overrun}};
}

Json session_json(const Nic& nic, const Session& s) {
    Json j = {{"session", s.id()}, {"pid", s.pid()}, {"comm", s.comm()}};
    if (const cm::CmClient* c = s.cm_client(); c && nic.cm()) {
        j["kind"] = "cm";
        j["channels"] = c->channel_count();
        j["cm_ids"] = nic.cm()->ids_json(*c);
        return j;
    }
    j["kind"] = "context";
    j["objects"] = s.objects().counts_json();
    Json& qps = j["qps"] = Json::array();
    s.objects().qps.for_each([&](const Qp& qp) { qps.push_back(qp_json(qp)); });
    Json& mrs = j["mrs"] = Json::array();
    s.objects().mrs.for_each([&](const Mr& mr) { mrs.push_back(mr_json(mr)); });
    Json& cqs = j["cqs"] = Json::array();
    s.objects().cqs.for_each([&](const Cq& cq) { cqs.push_back(cq_json(cq)); });
    return j;
}

} // namespace

std::string host_status_json(const Nic& nic, const std::vector<const Session*>& sessions) {
    const Device& dev = nic.device();
    Json j = {{"device", dev.name()},
              {"address", dev.address_string()},
              {"gid", dev.gid_string()},
              {"daemon_pid", ::getpid()},
              {"mtu", dev.config().mtu},
              {"scheduling", nic.realtime() ? "realtime"
                             : dev.config().scheduling == Scheduling::Normal
                                 ? "normal"
                                 : "normal, real-time refused"}};
    // The IPv4 ID policy means something on an IPv4 host only: over IPv6 every ICRC is whole.
    if (dev.config().address.is_ipv4()) j["icrc_ipv4"] = name(dev.config().icrc_ipv4);
    // Bytes the host's reliable QPs may have in flight together (engines.h), and the buffer
    // that decided it.
    j["host_window_bytes"] = transport::host_window_bytes(nic);
    if (nic.link_receive_buffer()) j["link_receive_buffer_bytes"] = nic.link_receive_buffer();
    Json& list = j["sessions"] = Json::array();
    for (const Session* s : sessions)
        if (s->is_context() || (s->cm_client() && nic.cm())) // probes (device lists, status): none
            list.push_back(session_json(nic, *s));
    if (const DataPath* dp = nic.data_path()) j["counters"] = dp->counters_json();
    j["hw_counters"] = nic.hw().json();
    j["errors"] = nic.errors().json();
    if (const cm::CmAgent* agent = nic.cm()) {
        Json& cm = j["cm"] = Json::object();
        add_counters(cm, "cm_", agent->counters());
    }
    // A process name or an error text that is not UTF-8 is written with U+FFFD, not refused.
    return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

} // namespace nicsim
