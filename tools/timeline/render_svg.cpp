// The browser's sequence diagram: a lifeline per host, time going down, one row per event. Host
// events are boxes on their lifeline, packets arrows between lifelines (a lost one ends in a
// cross half-way); each element's <title> holds the whole trace line or capture comment.
#include "render.h"

#include <algorithm>
#include <cstdio>

namespace rdmaemu::timeline {
namespace {

constexpr int kTimeWidth = 90, kLaneWidth = 560, kTop = 70, kRow = 22;
constexpr size_t kMaxLabel = 82; // characters that fit in a lane at 11 px monospace

std::string escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        switch (c) {
        case '&':
            out += "&amp;";
            break;
        case '<':
            out += "&lt;";
            break;
        case '>':
            out += "&gt;";
            break;
        case '"':
            out += "&quot;";
            break;
        default:
            // Control characters are not allowed in XML 1.0.
            if (static_cast<unsigned char>(c) >= 0x20 || c == '\t') out += c;
        }
    }
    return out;
}

std::string shorten(const std::string& s, size_t n) {
    return s.size() <= n ? s : s.substr(0, n - 3) + "...";
}

int lane_x(int lane) {
    return kTimeWidth + kLaneWidth / 2 + lane * kLaneWidth;
}

// For the fixed-size parts only: text of any length is appended as strings.
void appendf(std::string& out, const char* fmt, auto... args) {
    char buf[256];
    int n = std::snprintf(buf, sizeof buf, fmt, args...);
    if (n > 0) out.append(buf, std::min<size_t>(size_t(n), sizeof buf - 1));
}

std::string title(const Event& e, const Timeline& t) {
    char when[48];
    std::snprintf(when, sizeof when, "%.6f ms", double(e.ns - t.start_ns) / 1e6);
    std::string s = std::string(when) + ": " + e.label;
    if (!e.detail.empty() && e.detail != e.label) s += "\n" + e.detail;
    if (e.arrive_ns) {
        std::snprintf(when, sizeof when, "\nreceived at %.6f ms",
                      double(e.arrive_ns - t.start_ns) / 1e6);
        s += when;
    }
    return "<title>" + escape(s) + "</title>";
}

void draw_host_event(std::string& out, const Event& e, int y, const Timeline& t) {
    std::string label = shorten(e.label, kMaxLabel);
    int width = int(label.size()) * 66 / 10 + 12;
    out += std::string("<g class=\"ev ") + kind_name(e.kind) + "\">" + title(e, t);
    appendf(out, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"3\"/>",
            lane_x(e.lane) - width / 2, y - 8, width, kRow - 6);
    appendf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">", lane_x(e.lane), y + 7);
    out += escape(label) + "</text></g>\n";
}

void draw_packet(std::string& out, const Event& e, int y, const Timeline& t) {
    int x1 = lane_x(e.lane), x2 = lane_x(e.to_lane < 0 ? e.lane : e.to_lane);
    const bool lost = e.kind == EventKind::Dropped;
    int end = lost ? (x1 + x2) / 2 : x2;
    out += std::string("<g class=\"ev ") + kind_name(e.kind) + "\">" + title(e, t);
    appendf(out, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"%s/>", x1, y, end, y + 10,
            lost ? "" : " marker-end=\"url(#head)\"");
    if (lost)
        appendf(out, "<path class=\"cross\" d=\"M%d %d l12 12 M%d %d l-12 12\"/>", end - 6, y + 4,
                end + 6, y + 4);
    appendf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">", (x1 + x2) / 2, y - 2);
    out += escape(shorten(e.label, kMaxLabel)) + "</text></g>\n";
}

} // namespace

std::string render_svg(const Timeline& t, size_t limit) {
    size_t rows = std::min(limit, t.events.size()) + (t.events.size() > limit ? 1 : 0);
    int lanes = std::max<int>(1, int(t.lanes.size()));
    int width = kTimeWidth + lanes * kLaneWidth;
    int height = kTop + int(rows) * kRow + 30;
    std::string out;
    appendf(out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"rdmaemu-timeline\" width=\"%d\" "
            "height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"monospace\" font-size=\"11\">\n",
            width, height, width, height);
    out += "<style>"
           ".ev rect{fill:#f4f4f4;stroke:#999}.ev line{stroke:#222;stroke-width:1.4}"
           ".wqe rect{fill:#e3eeff;stroke:#3b6fd4}.cqe rect{fill:#e4f6e4;stroke:#2e8b3a}"
           ".cqe-error rect{fill:#ffe1e1;stroke:#c62828}.dma rect{fill:#f1e6ff;stroke:#7b3fc4}"
           ".warn rect{fill:#fff3d6;stroke:#c78a00}.ack line{stroke:#888}.ack text{fill:#666}"
           ".nak line,.dropped line{stroke:#c62828}.nak text,.dropped text{fill:#c62828}"
           ".rnr-nak line{stroke:#e07b00}.rnr-nak text{fill:#b25f00}"
           ".dropped line{stroke-dasharray:5 3}.cross{stroke:#c62828;stroke-width:2.5}"
           ".lifeline{stroke:#bbb;stroke-dasharray:4 4}.lane rect{fill:#263238}"
           ".lane text{fill:#fff;font-size:13px}.time{fill:#777}"
           "</style>\n"
           "<defs><marker id=\"head\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" "
           "markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\">"
           "<path d=\"M0 0 L10 5 L0 10 z\" fill=\"#444\"/></marker></defs>\n";
    for (int i = 0; i < int(t.lanes.size()); ++i) {
        int x = lane_x(i);
        appendf(out, "<line class=\"lifeline\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n", x,
                kTop - 20, x, height - 10);
        appendf(out,
                "<g class=\"lane\"><rect x=\"%d\" y=\"10\" width=\"%d\" height=\"34\" rx=\"4\"/>"
                "<text x=\"%d\" y=\"32\" text-anchor=\"middle\">",
                x - 150, 300, x);
        out += escape(t.lanes[size_t(i)].name) + "</text></g>\n";
    }
    appendf(out, "<text class=\"time\" x=\"8\" y=\"%d\">ms</text>\n", kTop - 20);
    size_t drawn = 0;
    for (const Event& e : t.events) {
        if (drawn == limit) break;
        int y = kTop + int(drawn++) * kRow;
        appendf(out, "<text class=\"time\" x=\"8\" y=\"%d\">%.3f</text>", y + 7,
                double(e.ns - t.start_ns) / 1e6);
        if (is_packet(e.kind))
            draw_packet(out, e, y, t);
        else
            draw_host_event(out, e, y, t);
    }
    if (t.events.size() > limit)
        appendf(out,
                "<text class=\"time\" x=\"8\" y=\"%d\">... %zu more events not drawn "
                "(--limit)</text>\n",
                kTop + int(drawn) * kRow + 7, t.events.size() - limit);
    return out + "</svg>\n";
}

std::string render_html(const Timeline& t, const std::string& heading, size_t limit) {
    std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                      "<title>" +
                      escape(heading) +
                      "</title><style>"
                      "body{font-family:sans-serif;margin:1em}.legend span{margin-right:1.2em}"
                      "</style></head><body>\n<h1>" +
                      escape(heading) + "</h1>\n";
    out += "<p class=\"legend\"><span>boxes: verbs calls (grey), work requests (blue), "
           "completions (green; red: an error), DMA into an MR (purple)</span><span>arrows: "
           "packets; grey ACK, red NAK, orange RNR NAK, dashed with a cross: lost</span>"
           "<span>hover for the whole trace line or capture comment</span></p>\n";
    for (const std::string& n : t.notes)
        out += "<p class=\"note\">" + escape(n) + "</p>\n";
    return out + render_svg(t, limit) + "</body></html>\n";
}

const char* kind_name(EventKind k) {
    switch (k) {
    case EventKind::Verb:
        return "verb";
    case EventKind::Wqe:
        return "wqe";
    case EventKind::Cqe:
        return "cqe";
    case EventKind::CqeError:
        return "cqe-error";
    case EventKind::Dma:
        return "dma";
    case EventKind::Warn:
        return "warn";
    case EventKind::Packet:
        return "packet";
    case EventKind::Ack:
        return "ack";
    case EventKind::Nak:
        return "nak";
    case EventKind::RnrNak:
        return "rnr-nak";
    case EventKind::Dropped:
        return "dropped";
    }
    return "?";
}

} // namespace rdmaemu::timeline
