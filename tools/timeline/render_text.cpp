// The terminal's sequence diagram: a column per host, time going down, one line per event.
//      ms   h1          h2
//   0.412   *           |     h1 post_send qp 0x11 SEND wr_id=2 64 B
//   0.450   *---------->|     RC_SEND_ONLY psn 0x3e8 64 B
//   0.503   |<----------*     ACK psn 0x3e8
#include "render.h"

#include <algorithm>
#include <cstdio>

namespace rdmaemu::timeline {
namespace {

constexpr size_t kLaneWidth = 12;

std::string diagram_row(const Event& e, size_t lanes) {
    std::string row(kLaneWidth * (lanes - 1) + 1, ' ');
    for (size_t i = 0; i < lanes; ++i)
        row[i * kLaneWidth] = '|';
    size_t from = size_t(e.lane) * kLaneWidth;
    if (!is_packet(e.kind) || e.to_lane < 0 || e.to_lane == e.lane) {
        row[from] = '*';
        return row;
    }
    size_t to = size_t(e.to_lane) * kLaneWidth;
    size_t lo = std::min(from, to), hi = std::max(from, to);
    if (e.kind == EventKind::Dropped) { // the line stops half-way, at the loss
        size_t mid = (lo + hi) / 2;
        for (size_t x = from < to ? from + 1 : mid + 1; x < (from < to ? mid : from); ++x)
            row[x] = '-';
        row[mid] = 'X';
    } else {
        for (size_t x = lo + 1; x < hi; ++x)
            row[x] = '-';
        row[from < to ? hi - 1 : lo + 1] = from < to ? '>' : '<';
    }
    row[from] = '*';
    return row;
}

} // namespace

std::string render_text(const Timeline& t, size_t limit) {
    std::string out;
    char buf[64];
    for (size_t i = 0; i < t.lanes.size(); ++i)
        out += "h" + std::to_string(i + 1) + " = " + t.lanes[i].name + "\n";
    for (const std::string& n : t.notes)
        out += "note: " + n + "\n";
    if (t.lanes.empty()) return out + "nothing to draw\n";
    std::string head(kLaneWidth * (t.lanes.size() - 1) + 1, ' ');
    for (size_t i = 0; i < t.lanes.size(); ++i) {
        std::string name = "h" + std::to_string(i + 1);
        head.replace(i * kLaneWidth, std::min(name.size(), head.size() - i * kLaneWidth), name);
    }
    out += "\n       ms   " + head + "\n";
    size_t drawn = 0;
    for (const Event& e : t.events) {
        if (drawn++ == limit) break;
        std::snprintf(buf, sizeof buf, "%9.3f   ", double(e.ns - t.start_ns) / 1e6);
        out += buf + diagram_row(e, t.lanes.size()) + "   ";
        if (!is_packet(e.kind)) out += "h" + std::to_string(e.lane + 1) + " ";
        out += e.label;
        if (e.kind == EventKind::Dropped && !e.detail.empty()) out += "  (" + e.detail + ")";
        out += "\n";
    }
    if (t.events.size() > limit)
        out +=
            "... " + std::to_string(t.events.size() - limit) + " more events not drawn (--limit)\n";
    return out;
}

} // namespace rdmaemu::timeline
