#include "model.h"

#include "dma_notes.h"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

namespace rdmaemu::timeline {
namespace {

namespace fs = std::filesystem;

// A capture's own host: the one address in all its packets, sent or received. Between two
// hosts both are; then the file's name says (up --pcap writes DIR/host<i>.pcap, host i being
// 127.0.S.i).
uint32_t capture_address(const std::string& path, const std::vector<PacketSummary>& packets) {
    std::set<uint32_t> common = {packets.front().src, packets.front().dst};
    for (const PacketSummary& p : packets)
        for (auto it = common.begin(); it != common.end();)
            it = (*it == p.src || *it == p.dst) ? std::next(it) : common.erase(it);
    if (common.size() == 1) return *common.begin();
    std::string name = fs::path(path).filename().string();
    int host = 0;
    if (std::sscanf(name.c_str(), "host%d", &host) == 1)
        for (uint32_t a : common)
            if (int(a & 0xff) == host) return a;
    return packets.front().src;
}

class Lanes {
  public:
    int by_address(uint32_t address) {
        for (size_t i = 0; i < lanes_.size(); ++i)
            if (lanes_[i].address == address) return int(i);
        int host = int(address & 0xff); // host i is 127.0.S.i
        for (size_t i = 0; i < lanes_.size(); ++i)
            if (lanes_[i].address == 0 && lanes_[i].host == host) { // named by a trace first
                lanes_[i].address = address;
                lanes_[i].name = "host " + std::to_string(host) + " (" + ipv4_text(address) + ")";
                return int(i);
            }
        lanes_.push_back(
            {"host " + std::to_string(host) + " (" + ipv4_text(address) + ")", address, host});
        return int(lanes_.size() - 1);
    }
    int by_host(int host) {
        for (size_t i = 0; i < lanes_.size(); ++i)
            if (lanes_[i].host == host) return int(i);
        lanes_.push_back({"host " + std::to_string(host), 0, host});
        return int(lanes_.size() - 1);
    }
    int named(const std::string& name) {
        lanes_.push_back({name, 0, 0});
        return int(lanes_.size() - 1);
    }
    std::vector<Lane>& all() { return lanes_; }

  private:
    std::vector<Lane> lanes_;
};

EventKind packet_kind(const PacketSummary& p) {
    if (p.dropped) return EventKind::Dropped;
    switch (p.kind) {
    case PacketKind::Ack:
        return EventKind::Ack;
    case PacketKind::Nak:
        return EventKind::Nak;
    case PacketKind::RnrNak:
        return EventKind::RnrNak;
    default:
        return EventKind::Packet;
    }
}

using PacketKey = std::tuple<uint32_t, uint32_t, uint64_t>; // src, dst, bytes

void add_packets(const std::vector<CaptureFile>& captures, Lanes& lanes, Timeline& t) {
    // Each packet is in its sender's capture (sent, or dropped there) and, unless lost, in its
    // receiver's: one arrow from the first to the second.
    std::vector<std::pair<uint32_t, std::vector<PacketSummary>>> decoded;
    for (const CaptureFile& c : captures) {
        std::vector<PacketSummary> packets;
        for (const CapturedFrame& f : c.frames)
            if (auto p = summarize(f)) packets.push_back(std::move(*p));
        if (packets.empty()) {
            t.notes.push_back(c.path + ": no RoCE v2 packets");
            continue;
        }
        decoded.emplace_back(capture_address(c.path, packets), std::move(packets));
    }
    std::set<uint32_t> captured_hosts;
    for (auto& [address, packets] : decoded)
        captured_hosts.insert(address);
    std::map<PacketKey, std::deque<const PacketSummary*>> received;
    for (auto& [address, packets] : decoded)
        for (const PacketSummary& p : packets)
            if (p.dst == address && p.src != address)
                received[{p.src, p.dst, p.hash}].push_back(&p);
    auto packet_event = [&](const PacketSummary& p) {
        Event e;
        e.ns = p.ns;
        e.kind = packet_kind(p);
        e.lane = lanes.by_address(p.src);
        e.to_lane = lanes.by_address(p.dst);
        e.label = packet_label(p);
        e.detail = p.comment;
        e.has_packet = true;
        e.packet = p;
        return e;
    };
    for (auto& [address, packets] : decoded)
        for (const PacketSummary& p : packets) {
            if (p.src != address) continue;
            Event e = packet_event(p);
            auto it = received.find({p.src, p.dst, p.hash});
            if (!p.dropped && it != received.end() && !it->second.empty()) {
                const PacketSummary* rx = it->second.front();
                it->second.pop_front();
                e.arrive_ns = rx->ns;
                // A sender captures a burst when it flushes it, after the kernel took it: its
                // peer may have answered by then. The packet left before either stamp.
                e.ns = std::min(e.ns, rx->ns);
                if (rx->refused) e.kind = EventKind::Dropped, e.label = packet_label(*rx);
                if (!rx->comment.empty()) e.detail += (e.detail.empty() ? "" : "; ") + rx->comment;
            }
            t.events.push_back(std::move(e));
        }
    // Received packets whose sender's capture we do not have.
    for (auto& [key, left] : received)
        for (const PacketSummary* rx : left) {
            if (captured_hosts.count(rx->src)) continue; // its sender's capture lacks it: cut short
            Event e = packet_event(*rx);
            e.arrive_ns = rx->ns;
            if (rx->refused) e.kind = EventKind::Dropped;
            t.events.push_back(std::move(e));
        }
}

EventKind trace_kind(const TraceEvent& e) {
    switch (e.kind) {
    case TraceKind::Verb:
        return EventKind::Verb;
    case TraceKind::Wr:
        return EventKind::Wqe;
    case TraceKind::Wc:
        return e.text.find("SUCCESS") == 0 || e.text.find("IBV_WC_SUCCESS") == 0
                   ? EventKind::Cqe
                   : EventKind::CqeError;
    case TraceKind::Warn:
        return EventKind::Warn;
    }
    return EventKind::Verb;
}

// The lane of a trace: its host, or the host its QPs' packets go to (a trace of a program not
// started by `rdmaemu run`), or one of its own.
int trace_lane(const TraceFile& tr, const Timeline& t, Lanes& lanes) {
    if (tr.host) return lanes.by_host(tr.host);
    for (const Event& e : t.events)
        if (e.has_packet && std::count(tr.qpns.begin(), tr.qpns.end(), e.packet.dest_qpn))
            return e.to_lane;
    return lanes.named("pid " + std::to_string(tr.pid) + " (" + tr.program + ")");
}

// Runs of the same host event (a program posting its 500 receives) become one row, "x500".
void collapse_repeats(Timeline& t) {
    std::vector<Event> out;
    for (Event& e : t.events) {
        if (!out.empty() && !is_packet(e.kind) && out.back().kind == e.kind &&
            out.back().lane == e.lane && out.back().label == e.label) {
            ++out.back().repeat;
            continue;
        }
        out.push_back(std::move(e));
    }
    for (Event& e : out)
        if (e.repeat > 1) e.label += "  (x" + std::to_string(e.repeat) + ")";
    t.events = std::move(out);
}

} // namespace

bool is_packet(EventKind k) {
    return k == EventKind::Packet || k == EventKind::Ack || k == EventKind::Nak ||
           k == EventKind::RnrNak || k == EventKind::Dropped;
}

Timeline build_timeline(const std::vector<TraceFile>& traces,
                        const std::vector<CaptureFile>& captures) {
    Timeline t;
    Lanes lanes;
    // Lanes from the traces' hosts first, so that host 1 is left of host 2 as they ran.
    std::vector<int> trace_hosts;
    for (const TraceFile& tr : traces)
        if (tr.host) trace_hosts.push_back(tr.host);
    std::sort(trace_hosts.begin(), trace_hosts.end());
    for (int h : trace_hosts)
        lanes.by_host(h);
    add_packets(captures, lanes, t);
    uint64_t first_packet = UINT64_MAX;
    for (const Event& e : t.events)
        first_packet = std::min(first_packet, e.ns);
    for (size_t i = 0; i < traces.size(); ++i) {
        const TraceFile& tr = traces[i];
        int lane = trace_lane(tr, t, lanes);
        uint64_t base = tr.realtime_ns;
        if (!base) {
            base = first_packet == UINT64_MAX ? 0 : first_packet;
            t.notes.push_back(tr.path + ": no clock line (an older trace): its times are placed "
                                        "from the first packet on");
        }
        for (const TraceEvent& te : tr.events) {
            Event e;
            e.ns = base + te.ns;
            e.kind = trace_kind(te);
            e.lane = lane;
            e.label = event_label(te);
            e.detail = te.text;
            e.trace = int(i);
            t.events.push_back(std::move(e));
        }
    }
    std::stable_sort(t.events.begin(), t.events.end(),
                     [](const Event& a, const Event& b) { return a.ns < b.ns; });
    add_dma_notes(traces, t);
    collapse_repeats(t);
    t.lanes = std::move(lanes.all());
    t.start_ns = t.events.empty() ? 0 : t.events.front().ns;
    return t;
}

} // namespace rdmaemu::timeline
