// rdmaemu trace-compare A B: do two verbs traces (RDMAEMU_TRACE) describe the same run? Compared
// are what a program decides, not what a device assigns: the sequence of verbs with their
// outcome, the sequence of work requests (queue and opcode) and the sequence of completion
// statuses, with the completion opcodes counted (two NICs may complete a send and a receive in
// either order), and the sequence of rdma_cm events (name and status; librdmacm's calls are verb
// lines). Keys, handles, CM IDs, addresses, QP numbers, pointers and times are ignored, and so
// is what a verb filled in after its result (an async event's QP, a CM ID's handle), and the
// waits for completion events (their number is timing's). A file whose first line is not a
// trace's header is refused: comparing two files that are no traces would "match".
#include "commands.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace rdmaemu {
namespace {

struct Item {
    std::string key;  // what is compared
    std::string line; // the trace line, to show a difference
    int line_number = 0;
};

struct Trace {
    std::vector<Item> verbs, wrs, wc_statuses, cm_events;
    std::map<std::string, int> wc_opcodes;
    std::vector<std::string> warnings;
};

// Verbs whose non-zero result is a value (a count, an index, a GUID), not an error.
bool returns_value(const std::string& name) {
    return name == "_ibv_query_gid_table" || name == "ibv_get_pkey_index" ||
           name == "ibv_get_device_index" || name == "ibv_get_device_guid" ||
           name == "ibv_get_device_name" || name == "ibv_get_device_list";
}

// Waiting for a completion event: how often a program waits (rdma_get_send_comp polls, arms the
// CQ and waits only when nothing came yet) depends on timing, not on what it decides. Left out
// unless they failed with another error than EAGAIN.
bool waits(const std::string& name, const std::string& key) {
    if (name != "ibv_get_cq_event" && name != "ibv_ack_cq_events" && name != "ibv_req_notify_cq")
        return false;
    return key == name || key == name + " -> ok" || key.find("errno=EAGAIN") != std::string::npos;
}

std::string field(const std::string& text, const std::string& name) {
    size_t at = text.find(" " + name + "=");
    if (at == std::string::npos) return "";
    at += name.size() + 2;
    return text.substr(at, text.find(' ', at) - at);
}

std::string verb_key(const std::string& text) {
    std::string name = text.substr(0, text.find('('));
    size_t eq = text.rfind(") = ");
    if (eq == std::string::npos) return name; // a void verb
    std::string result = text.substr(eq + 4);
    if (result.rfind("NULL", 0) == 0) return name + " -> NULL" + result.substr(4);
    if (result.find(" errno=") != std::string::npos) return name + " -> " + result;
    // A number, maybe followed by what the verb filled in (device-assigned: not compared).
    std::string value = result.substr(0, result.find(' '));
    bool number =
        !value.empty() && (std::isdigit(static_cast<unsigned char>(value[0])) || value[0] == '-');
    if (!number || value == "0" || returns_value(name)) return name + " -> ok";
    return name + " -> " + value;
}

constexpr const char* kTraceHeader = "# rdmaemu verbs trace:";

bool load(const char* path, Trace& t) {
    std::ifstream in(path);
    if (!in) {
        std::fprintf(stderr, "rdmaemu: cannot read %s\n", path);
        return false;
    }
    std::string line;
    if (!std::getline(in, line) || line.rfind(kTraceHeader, 0) != 0) {
        std::fprintf(stderr,
                     "rdmaemu: %s is not a verbs trace: its first line is not \"%s ...\" (write "
                     "one with RDMAEMU_TRACE=FILE)\n",
                     path, kTraceHeader);
        return false;
    }
    for (int n = 2; std::getline(in, line); ++n) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream words(line);
        std::string time, tid, kind;
        if (!(words >> time >> tid >> kind)) continue;
        std::string text;
        std::getline(words, text);
        if (!text.empty() && text[0] == ' ') text.erase(0, 1);
        if (kind == "verb") {
            std::string key = verb_key(text);
            if (!waits(text.substr(0, text.find('(')), key)) t.verbs.push_back({key, line, n});
        } else if (kind == "wr") {
            std::string queue = text.substr(0, text.find(' '));
            std::string opcode = field(text, "opcode");
            t.wrs.push_back({queue + (opcode.empty() ? "" : " " + opcode), line, n});
        } else if (kind == "wc") {
            t.wc_statuses.push_back({text.substr(0, text.find(' ')), line, n});
            ++t.wc_opcodes[field(text, "opcode")];
        } else if (kind == "cm") {
            // "RDMA_CM_EVENT_ESTABLISHED id=cm_id(3) status=0 conn={...}": the name and status.
            t.cm_events.push_back(
                {text.substr(0, text.find(' ')) + " status=" + field(text, "status"), line, n});
        } else if (kind == "warn") {
            t.warnings.push_back(line);
        }
    }
    return true;
}

bool same_sequence(const char* what, const std::vector<Item>& a, const std::vector<Item>& b) {
    size_t n = std::min(a.size(), b.size());
    for (size_t i = 0; i < n; ++i) {
        if (a[i].key == b[i].key) continue;
        std::printf("%s differ at #%zu:\n  A line %d: %s\n  B line %d: %s\n", what, i + 1,
                    a[i].line_number, a[i].line.c_str(), b[i].line_number, b[i].line.c_str());
        return false;
    }
    if (a.size() != b.size()) {
        const Item& extra = a.size() > b.size() ? a[n] : b[n];
        std::printf("%s differ: A has %zu, B has %zu; first extra (%s line %d): %s\n", what,
                    a.size(), b.size(), a.size() > b.size() ? "A" : "B", extra.line_number,
                    extra.line.c_str());
        return false;
    }
    std::printf("%s: %zu, same\n", what, a.size());
    return true;
}

int trace_compare(const ParsedArgs& args) {
    if (args.rest.size() != 2) {
        std::fprintf(stderr, "rdmaemu: trace-compare needs two trace files\n");
        return kExitUsage;
    }
    Trace a, b;
    // Unreadable, or not a trace: nothing to compare, as distinct from traces that differ.
    if (!load(args.rest[0].c_str(), a) || !load(args.rest[1].c_str(), b)) return kExitBadInput;
    bool same = same_sequence("verbs", a.verbs, b.verbs);
    same = same_sequence("work requests", a.wrs, b.wrs) && same;
    same = same_sequence("completion statuses", a.wc_statuses, b.wc_statuses) && same;
    if (!a.cm_events.empty() || !b.cm_events.empty())
        same = same_sequence("cm events", a.cm_events, b.cm_events) && same;
    if (a.wc_opcodes != b.wc_opcodes) {
        std::printf("completion opcodes differ:");
        for (const auto* t : {&a, &b}) {
            std::printf(" %s", t == &a ? "A" : "B");
            for (const auto& [op, count] : t->wc_opcodes)
                std::printf(" %s=%d", op.c_str(), count);
        }
        std::printf("\n");
        same = false;
    }
    for (const auto* t : {&a, &b})
        for (const std::string& w : t->warnings)
            std::printf("note: %s has a warning: %s\n", t == &a ? "A" : "B", w.c_str());
    std::printf("%s\n", same ? "traces match" : "traces differ");
    return same ? 0 : kExitFailure;
}

} // namespace

const CommandDef kTraceCompareCommand = {
    "trace-compare",
    "TRACE_A TRACE_B",
    "compare two verbs traces (RDMAEMU_TRACE=FILE): verbs (and rdma_cm calls) and outcomes, "
    "work requests, completion statuses, rdma_cm events",
    {},
    true,
    trace_compare};

} // namespace rdmaemu
