// rdmaemu timeline FILE|DIR...: a run drawn as a sequence diagram across its hosts, from its
// verbs traces (RDMAEMU_TRACE) and captures (up --pcap): as text on stdout, and as SVG or a
// self-contained HTML page for a browser.
#include "commands.h"
#include "inputs.h"
#include "model.h"
#include "render.h"

#include <cstdio>
#include <fstream>

namespace rdmaemu {
namespace {

namespace tl = rdmaemu::timeline;

constexpr OptionSpec kOptions[] = {
    {"html", "FILE", "write the diagram as an HTML page a browser opens"},
    {"svg", "FILE", "write the diagram as an SVG picture"},
    {"text", "", "print the diagram on stdout also when writing --html or --svg"},
    {"limit", "N", "draw at most N events (default 2000)", {}, false, ValueKind::count},
    {"brief", "", "of the verbs calls keep only those that make MRs and QPs and move QPs"},
};

// What a learner follows in a picture: the MRs and QPs made and each QP's moves; device
// queries and list handling are left out.
void keep_brief(tl::Timeline& t) {
    std::erase_if(t.events, [](const tl::Event& e) {
        if (e.kind != tl::EventKind::Verb) return false;
        for (const char* kept : {"ibv_reg_mr", "ibv_create_qp", "ibv_modify_qp"})
            if (e.label.rfind(kept, 0) == 0) return false;
        return true;
    });
    if (!t.events.empty()) t.start_ns = t.events.front().ns;
}

bool write_file(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (out) return true;
    std::fprintf(stderr, "rdmaemu: cannot write %s\n", path.c_str());
    return false;
}

int draw_timeline(const ParsedArgs& args) {
    if (args.rest.empty()) {
        std::fprintf(stderr, "rdmaemu: timeline needs the run's traces and captures (files or "
                             "directories)\n");
        return kExitUsage;
    }
    tl::Inputs in;
    if (auto err = tl::load_inputs(args.rest, in)) {
        std::fprintf(stderr, "rdmaemu: %s\n", err->c_str());
        return kExitBadInput;
    }
    size_t limit = args.has("limit") ? std::stoul(*args.get("limit")) : 2000;
    tl::Timeline t = tl::build_timeline(in.traces, in.captures);
    if (args.has("brief")) keep_brief(t);
    bool ok = true;
    if (auto html = args.get("html"))
        ok = write_file(*html, tl::render_html(t, "rdmaemu timeline", limit)) && ok;
    if (auto svg = args.get("svg")) ok = write_file(*svg, tl::render_svg(t, limit)) && ok;
    if (args.has("text") || (!args.has("html") && !args.has("svg")))
        std::fputs(tl::render_text(t, limit).c_str(), stdout);
    else
        std::printf("timeline: %zu events across %zu hosts from %zu traces and %zu captures\n",
                    t.events.size(), t.lanes.size(), in.traces.size(), in.captures.size());
    return ok ? 0 : kExitFailure;
}

} // namespace

const CommandDef kTimelineCommand = {
    "timeline",
    "[--html FILE] [--svg FILE] [--text] [--limit N] [--brief] TRACE|CAPTURE|DIR...",
    "draw a run as a sequence diagram across hosts: verbs calls, work requests, packets (ACK, "
    "NAK, RNR NAK, drops), DMA into MRs, completions",
    kOptions,
    true,
    draw_timeline};

} // namespace rdmaemu
