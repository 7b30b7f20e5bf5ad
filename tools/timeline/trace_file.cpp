#include "trace_file.h"

#include <cstdlib>
#include <sstream>

namespace rdmaemu::timeline {
namespace {

uint64_t number(const std::string& s) {
    return s.empty() ? 0 : std::strtoull(s.c_str(), nullptr, 0);
}

std::string strip(std::string s, const std::string& prefix) {
    if (s.rfind(prefix, 0) == 0) s.erase(0, prefix.size());
    return s;
}

// "ibv_reg_mr(pd(1), 0x5595e0445000, 4096, ...) = mr(len=4096 lkey=0x.. rkey=0x..)": the MR.
void note_mr(const std::string& text, TraceFile& t) {
    if (text.rfind("ibv_reg_mr", 0) != 0) return;
    size_t eq = text.rfind(") = mr(");
    if (eq == std::string::npos) return;
    std::string result = text.substr(eq + 4); // "mr(len=4096 lkey=... rkey=...)"
    TraceMr mr;
    mr.lkey = static_cast<uint32_t>(number(trace_field(result, "lkey")));
    mr.rkey = static_cast<uint32_t>(number(trace_field(result, "rkey")));
    mr.length = number(trace_field(" " + result.substr(3), "len"));
    // The address is the argument after the PD: "(pd(1), 0x5595e0445000, ...".
    size_t comma = text.find("), ");
    if (comma != std::string::npos) mr.addr = number(text.substr(comma + 3));
    t.mrs.push_back(mr);
}

void note_qp(const std::string& text, TraceFile& t) {
    if (text.rfind("ibv_create_qp", 0) != 0) return;
    size_t at = text.rfind(") = qp(qpn=");
    if (at == std::string::npos) return;
    t.qpns.push_back(static_cast<uint32_t>(number(text.substr(at + 11))));
}

void read_clock_line(const std::string& line, TraceFile& t) {
    std::string realtime = trace_field(line, "realtime");
    size_t dot = realtime.find('.');
    if (dot != std::string::npos)
        t.realtime_ns = number(realtime.substr(0, dot)) * 1000000000ull +
                        std::strtoull(realtime.substr(dot + 1).c_str(), nullptr, 10);
    std::string host = trace_field(line, "host");
    if (!host.empty() && host != "-") t.host = std::atoi(host.c_str());
}

} // namespace

std::string trace_field(const std::string& text, const std::string& name) {
    size_t at = text.find(" " + name + "=");
    if (at == std::string::npos) return "";
    at += name.size() + 2;
    size_t end = text.find_first_of(" }", at);
    return text.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

std::optional<std::string> parse_trace(const std::string& text, TraceFile& t) {
    std::istringstream in(text);
    std::string line;
    if (!std::getline(in, line) || line.rfind(kTraceHeader, 0) != 0)
        return std::string("its first line is not \"") + kTraceHeader + " ...\"";
    if (size_t p = line.find(" pid "); p != std::string::npos)
        t.pid = std::atoi(line.c_str() + p + 5);
    if (size_t p = line.find(", program "); p != std::string::npos) t.program = line.substr(p + 10);
    for (int n = 2; std::getline(in, line); ++n) {
        if (line.rfind("# clock ", 0) == 0) read_clock_line(line, t);
        if (line.empty() || line[0] == '#') continue;
        std::istringstream words(line);
        std::string time, tid, kind;
        if (!(words >> time >> tid >> kind)) continue;
        TraceEvent e;
        e.ns = static_cast<uint64_t>(std::strtod(time.c_str(), nullptr) * 1e9);
        e.line = n;
        std::getline(words, e.text);
        if (!e.text.empty() && e.text[0] == ' ') e.text.erase(0, 1);
        if (kind == "verb")
            e.kind = TraceKind::Verb;
        else if (kind == "wr")
            e.kind = TraceKind::Wr;
        else if (kind == "wc")
            e.kind = TraceKind::Wc;
        else if (kind == "warn")
            e.kind = TraceKind::Warn;
        else
            continue;
        if (e.kind == TraceKind::Verb) {
            note_mr(e.text, t);
            note_qp(e.text, t);
        }
        t.events.push_back(std::move(e));
    }
    return std::nullopt;
}

std::string event_label(const TraceEvent& e) {
    const std::string& s = e.text;
    switch (e.kind) {
    case TraceKind::Verb: {
        std::string name = s.substr(0, s.find('('));
        // A QP's move through its states is what a learner follows: show where it goes.
        if (name == "ibv_modify_qp") {
            std::string state = strip(trace_field(s, "state"), "IBV_QPS_");
            if (!state.empty())
                name +=
                    " qp " + trace_field(" " + s.substr(s.find('(') + 4), "qpn") + " -> " + state;
        }
        size_t eq = s.rfind(") = ");
        return eq == std::string::npos ? name : name + " = " + s.substr(eq + 4);
    }
    case TraceKind::Wr: {
        std::string queue = s.substr(0, s.find(' '));
        if (s.find(" failed ") != std::string::npos) return "post_" + s;
        std::string out = "post_" + queue + " qp " + trace_field(s, "qp");
        std::string op = trace_field(s, "opcode");
        if (!op.empty()) out += " " + strip(op, "IBV_WR_");
        out += " wr_id=" + trace_field(s, "wr_id") + " " + trace_field(s, "len") + " B";
        std::string rkey = trace_field(s, "rkey");
        if (!rkey.empty()) out += " -> rkey " + rkey + " @" + trace_field(s, "remote_addr");
        std::string lkey = trace_field(s, "lkey");
        if (!lkey.empty()) out += " lkey " + lkey;
        return out;
    }
    case TraceKind::Wc: {
        std::string status = strip(s.substr(0, s.find(' ')), "IBV_WC_");
        std::string op = strip(trace_field(s, "opcode"), "IBV_WC_");
        return "CQE " + status + (op == "-" ? "" : " " + op) + " qp " + trace_field(s, "qp") +
               " wr_id=" + trace_field(s, "wr_id") + " len=" + trace_field(s, "len");
    }
    case TraceKind::Warn:
        return "warning: " + s;
    }
    return s;
}

} // namespace rdmaemu::timeline
