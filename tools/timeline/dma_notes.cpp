#include "dma_notes.h"

#include "emu/wire/opcodes.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <set>

namespace rdmaemu::timeline {
namespace {

namespace wire = emu::wire;

struct Buffer {
    uint32_t lkey = 0;
    uint64_t addr = 0;
};

std::string hex(uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
    return buf;
}

uint64_t number(const std::string& s) {
    return s.empty() ? 0 : std::strtoull(s.c_str(), nullptr, 0);
}

Buffer first_sge(const std::string& wr) {
    Buffer b;
    b.lkey = static_cast<uint32_t>(number(trace_field(wr, "lkey")));
    size_t at = wr.find("={addr=");
    if (at != std::string::npos) b.addr = number(wr.substr(at + 7));
    return b;
}

std::string mr_text(const TraceMr& mr) {
    return "MR lkey " + hex(mr.lkey) + " rkey " + hex(mr.rkey) + " [" + hex(mr.addr) + ", " +
           hex(mr.addr + mr.length) + ")";
}

class Notes {
  public:
    Notes(const std::vector<TraceFile>& traces, Timeline& t) : traces_(traces), t_(t) {}

    void run() {
        for (const Event& e : t_.events)
            if (e.trace >= 0) lane_of_trace_[e.trace] = e.lane;
        for (size_t i = 0; i < t_.events.size(); ++i) {
            const Event& e = t_.events[i];
            if (e.kind == EventKind::Wqe) note_wr(e);
            if (e.has_packet && e.kind != EventKind::Dropped && e.to_lane >= 0) note_packet(i);
        }
        std::stable_sort(added_.begin(), added_.end(),
                         [](const Event& a, const Event& b) { return a.ns < b.ns; });
        std::vector<Event> merged;
        merged.reserve(t_.events.size() + added_.size());
        std::merge(t_.events.begin(), t_.events.end(), added_.begin(), added_.end(),
                   std::back_inserter(merged),
                   [](const Event& a, const Event& b) { return a.ns < b.ns; });
        t_.events = std::move(merged);
    }

  private:
    using QueueKey = std::pair<int, uint32_t>; // lane, QP number

    void note_wr(const Event& e) {
        const std::string& s = e.detail;
        uint32_t qpn = static_cast<uint32_t>(number(trace_field(s, "qp")));
        if (s.rfind("recv ", 0) == 0) {
            recvs_[{e.lane, qpn}].push_back(first_sge(s));
        } else if (s.rfind("send ", 0) == 0) {
            std::string op = trace_field(s, "opcode");
            if (op.find("READ") != std::string::npos || op.find("ATOMIC") != std::string::npos)
                reads_[{e.lane, qpn}].push_back(first_sge(s));
        }
    }

    const TraceMr* mr_on(int lane, auto match) const {
        for (size_t i = 0; i < traces_.size(); ++i) {
            auto it = lane_of_trace_.find(int(i));
            if (it == lane_of_trace_.end() || it->second != lane) continue;
            for (const TraceMr& mr : traces_[i].mrs)
                if (match(mr)) return &mr;
        }
        return nullptr;
    }

    // The NAK that refused the request at `i`, if its responder sent one.
    const Event* refusal(size_t i) const {
        const Event& req = t_.events[i];
        for (size_t j = i + 1; j < t_.events.size() && j < i + 400; ++j) {
            const Event& e = t_.events[j];
            if (e.kind == EventKind::Nak && e.lane == req.to_lane && e.to_lane == req.lane &&
                e.packet.psn == req.packet.psn)
                return &e;
        }
        return nullptr;
    }

    void add(const Event& at, const std::string& label, const std::string& detail) {
        Event d;
        d.ns = (at.arrive_ns ? at.arrive_ns : at.ns) + 1;
        d.kind = EventKind::Dma;
        d.lane = at.to_lane;
        d.label = label;
        d.detail = detail;
        added_.push_back(std::move(d));
    }

    void note_packet(size_t i) {
        const Event& e = t_.events[i];
        const PacketSummary& p = e.packet;
        const uint32_t mask = wire::opcode_info(p.opcode).mask;
        const bool atomic_ack = (mask & wire::kAtomicAck) != 0;
        if (p.kind == PacketKind::Cm || p.kind == PacketKind::Nak || p.kind == PacketKind::RnrNak ||
            (p.kind == PacketKind::Ack && !atomic_ack))
            return;
        const QueueKey key{e.to_lane, p.dest_qpn};
        // A retransmitted PSN moves nothing the first copy did not.
        if (!seen_[key].insert(p.psn).second) return;
        if (p.has_remote) {
            std::string what =
                (mask & wire::kRead)     ? "DMA read " + std::to_string(p.dma_length) + " B from "
                : (mask & wire::kAtomic) ? "atomic on 8 B of "
                                         : "DMA " + std::to_string(p.dma_length) + " B into ";
            if (const Event* nak = refusal(i)) {
                add(e, "refused: " + nak->label, "rkey " + hex(p.rkey) + " @" + hex(p.remote_va));
                return;
            }
            const TraceMr* mr =
                mr_on(e.to_lane, [&](const TraceMr& m) { return m.rkey == p.rkey; });
            if (mr)
                add(e, what + mr_text(*mr) + " at +" + hex(p.remote_va - mr->addr),
                    "remote address " + hex(p.remote_va) + " rkey " + hex(p.rkey));
            else
                add(e, what + "rkey " + hex(p.rkey) + " @" + hex(p.remote_va) + " (no traced MR)",
                    "");
            return;
        }
        const bool first = (mask & wire::kFirst) != 0, last = (mask & wire::kLast) != 0;
        std::deque<Buffer>* queue = nullptr;
        std::string what;
        if (mask & wire::kSend) {
            queue = &recvs_[key];
            what = "DMA SEND payload into receive buffer of ";
        } else if ((mask & wire::kReadResponse) || atomic_ack) {
            queue = &reads_[key];
            what = "DMA response into ";
        }
        if (!queue || queue->empty()) return;
        if (first || atomic_ack) {
            const Buffer b = queue->front();
            const TraceMr* mr =
                mr_on(e.to_lane, [&](const TraceMr& m) { return m.lkey == b.lkey; });
            add(e, what + (mr ? mr_text(*mr) : "lkey " + hex(b.lkey)) + " at " + hex(b.addr), "");
        }
        if (last || atomic_ack) queue->pop_front();
    }

    const std::vector<TraceFile>& traces_;
    Timeline& t_;
    std::map<int, int> lane_of_trace_;
    std::map<QueueKey, std::deque<Buffer>> recvs_, reads_;
    std::map<QueueKey, std::set<uint32_t>> seen_;
    std::vector<Event> added_;
};

} // namespace

void add_dma_notes(const std::vector<TraceFile>& traces, Timeline& t) {
    Notes(traces, t).run();
}

} // namespace rdmaemu::timeline
