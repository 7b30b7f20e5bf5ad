#include "status_json.h"

#include "cm/cm_agent.h"
#include "session.h"
#include "support/json_escape.h"

#include "emu/verbs_names.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cstdio>
#include <unistd.h>

namespace nicsim {

std::string host_counters_json(const LinkCounters& link, const RawCounters& raw,
                               const McastCounters& mcast, const DropCounters& drops) {
    std::string j;
    append_counters_json(j, "", link);
    append_counters_json(j, "raw_", raw);
    append_counters_json(j, "mcast_", mcast);
    append_counters_json(j, "mcast_", link.mcast);
    append_counters_json(j, "", drops);
    return "{" + j + "}";
}

namespace {

// The peer a connected QP sends to: its GID as an IPv4 address when IPv4-mapped (RoCE v2 on
// 127.0.S.i), else the GID; "" before RTR.
std::string peer_text(const ibv_qp_attr& a) {
    if (!a.dest_qp_num) return "";
    const uint8_t* g = a.ah_attr.grh.dgid.raw;
    static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::equal(g, g + 12, kMapped))
        return fmt::format("{}.{}.{}.{}", g[12], g[13], g[14], g[15]);
    std::string out;
    for (int i = 0; i < 16; i += 2)
        out += fmt::format("{}{:02x}{:02x}", i ? ":" : "", g[i], g[i + 1]);
    return out;
}

// The PSNs where each side stands and the peer: what a learner watches move in `rdmaemu ui`.
std::string psn_json(const Qp& qp) {
    return fmt::format(",\"sq_psn\":\"{:#x}\",\"una_psn\":\"{:#x}\",\"rq_psn\":\"{:#x}\","
                       "\"dest_qpn\":\"{:#x}\",\"peer\":\"{}\"",
                       qp.req.next_psn, qp.req.una_psn, qp.resp.epsn, qp.attr.dest_qp_num,
                       peer_text(qp.attr));
}

std::string qp_json(const Qp& handle) {
    const Qp& qp = handle.shared ? *handle.shared : handle; // an ibv_open_qp handle: the QP
    // QP numbers in hex, as perftest, tshark and the verbs trace print them.
    std::string j = fmt::format("{{\"qpn\":\"{:#x}\",\"type\":\"{}\",\"state\":\"{}\"", qp.qpn,
                                emu::names::qp_type_short(qp.type),
                                emu::names::qp_state_short(qp.attr.qp_state));
    append_counters_json(j, "", qp.counters);
    append_counters_json(j, "", qp.counters.drops);
    return j + psn_json(qp) + "}";
}

// How the NIC reaches an MR's bytes: "mapped" (shared_bytes of them with memory copies, the rest
// through the process's memory) or "process" (all through /proc/<pid>/mem).
std::string mr_json(const Mr& mr) {
    return "{\"handle\":" + std::to_string(mr.handle) + ",\"addr\":" + std::to_string(mr.addr) +
           ",\"length\":" + std::to_string(mr.length) + ",\"engine\":\"" +
           (mr.dm ? "device_memory" : mr.memory->engine()) +
           "\",\"shared_bytes\":" + std::to_string(mr.memory->shared_bytes()) +
           fmt::format(",\"lkey\":\"{:#x}\",\"rkey\":\"{:#x}\",\"access\":\"{}\"}}", mr.lkey,
                       mr.rkey, emu::names::access_flags(mr.access));
}

std::string cq_json(const Cq& cq) {
    return fmt::format("{{\"handle\":{},\"cqe\":{},\"overrun\":{}}}", cq.handle, cq.cqe,
                       cq.overrun ? "true" : "false");
}

} // namespace

std::string host_status_json(const Nic& nic, const std::vector<const Session*>& sessions) {
    const Device& dev = nic.device();
    std::string j = "{\"device\":\"" + json_escape(dev.name()) + "\",\"address\":\"" +
                    dev.address_string() + "\",\"gid\":\"" + dev.gid_string() +
                    "\",\"daemon_pid\":" + std::to_string(::getpid()) +
                    ",\"mtu\":" + std::to_string(dev.config().mtu) + ",\"icrc_ipv4\":\"" +
                    std::string(name(dev.config().icrc_ipv4)) + "\",\"sessions\":[";
    bool first = true;
    for (const Session* s : sessions) {
        if (const cm::CmClient* c = s->cm_client(); c && nic.cm()) {
            if (!first) j += ",";
            first = false;
            j += "{\"session\":" + std::to_string(s->id()) +
                 ",\"pid\":" + std::to_string(s->pid()) + ",\"comm\":\"" + json_escape(s->comm()) +
                 "\",\"kind\":\"cm\",\"channels\":" + std::to_string(c->channel_count()) +
                 ",\"cm_ids\":" + nic.cm()->ids_json(*c) + "}";
            continue;
        }
        if (!s->is_context()) continue; // probes (device lists, status) own nothing
        if (!first) j += ",";
        first = false;
        j += "{\"session\":" + std::to_string(s->id()) + ",\"pid\":" + std::to_string(s->pid()) +
             ",\"comm\":\"" + json_escape(s->comm()) +
             "\",\"kind\":\"context\",\"objects\":" + s->objects().counts_json() + ",\"qps\":[";
        bool first_qp = true;
        s->objects().qps.for_each([&](const Qp& qp) {
            if (!first_qp) j += ",";
            first_qp = false;
            j += qp_json(qp);
        });
        j += "],\"mrs\":[";
        bool first_mr = true;
        s->objects().mrs.for_each([&](const Mr& mr) {
            if (!first_mr) j += ",";
            first_mr = false;
            j += mr_json(mr);
        });
        j += "],\"cqs\":[";
        bool first_cq = true;
        s->objects().cqs.for_each([&](const Cq& cq) {
            if (!first_cq) j += ",";
            first_cq = false;
            j += cq_json(cq);
        });
        j += "]}";
    }
    j += "]";
    if (const DataPath* dp = nic.data_path()) j += ",\"counters\":" + dp->counters_json();
    j += ",\"hw_counters\":" + nic.hw().json();
    j += ",\"errors\":" + nic.errors().json();
    if (const cm::CmAgent* agent = nic.cm()) {
        std::string counters;
        append_counters_json(counters, "cm_", agent->counters());
        j += ",\"cm\":{" + counters + "}";
    }
    return j + "}";
}

} // namespace nicsim
