// rdmaemu ui [--port N] [TRACE|CAPTURE|DIR...]: a web page on 127.0.0.1 with the set's hosts,
// their processes, QPs, MRs, CQs, counters and recent errors, updated live from the same status
// `rdmaemu status` reads, and the timeline of the run whose traces and captures are given.
#include "commands.h"
#include "http_server.h"
#include "inputs.h"
#include "locations.h"
#include "model.h"
#include "render.h"
#include "status_gather.h"
#include "ui_page.h"

#include <cstdio>

namespace rdmaemu {
namespace {

namespace tl = rdmaemu::timeline;

constexpr OptionSpec kOptions[] = {
    {"port",
     "N",
     "listen on 127.0.0.1:N (default 8780; 0: any free port)",
     {},
     false,
     ValueKind::count},
};
constexpr size_t kTimelineLimit = 1500;

std::string current_status(const std::string& runtime) {
    std::vector<HostStatus> all;
    auto hosts = load_hosts(runtime);
    for (const auto& h : hosts)
        all.push_back(query_host(h));
    return status_json(runtime, emu::backend_mode_from_env(nullptr), all);
}

// The run's timeline, read anew each time: its files grow while it runs.
HttpResponse timeline_svg(const std::vector<std::string>& sources) {
    const std::string type = "image/svg+xml";
    auto message = [&](const std::string& text) {
        return HttpResponse{200, type,
                            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"900\" height=\"40\">"
                            "<text x=\"10\" y=\"25\" font-family=\"sans-serif\" fill=\"#777\">" +
                                text + "</text></svg>"};
    };
    if (sources.empty())
        return message("no run given: start rdmaemu ui with the run's traces and captures "
                       "(rdmaemu ui DIR)");
    tl::Inputs in;
    if (auto err = tl::load_inputs(sources, in)) return message("no timeline yet: " + *err);
    return {200, type, tl::render_svg(tl::build_timeline(in.traces, in.captures), kTimelineLimit)};
}

int ui(const ParsedArgs& args) {
    const std::string runtime = runtime_dir_abs();
    const uint16_t port =
        static_cast<uint16_t>(args.has("port") ? std::stoul(*args.get("port")) : 8780);
    if (args.has("port") && std::stoul(*args.get("port")) > 65535) {
        std::fprintf(stderr, "rdmaemu: --port %s: not a TCP port\n", args.get("port")->c_str());
        return kExitUsage;
    }
    const std::vector<std::string> sources = args.rest;
    HttpHandler handler = [&](const std::string& path) -> HttpResponse {
        if (path == "/" || path == "/index.html")
            return {200, "text/html; charset=utf-8", ui_page()};
        if (path == "/status.json") return {200, "application/json", current_status(runtime)};
        if (path == "/timeline.svg") return timeline_svg(sources);
        return {404, "text/plain; charset=utf-8", "not found\n"};
    };
    auto err = serve_http(port, handler, [&](uint16_t bound) {
        std::printf("rdmaemu ui: http://127.0.0.1:%u/ shows the hosts of %s (Ctrl-C stops)\n",
                    unsigned(bound), runtime.c_str());
        std::fflush(stdout);
    });
    if (err) {
        std::fprintf(stderr, "rdmaemu: %s\n", err->c_str());
        return kExitFailure;
    }
    return 0;
}

} // namespace

const CommandDef kUiCommand = {
    "ui",
    "[--port N] [TRACE|CAPTURE|DIR...]",
    "serve a live web page on 127.0.0.1: hosts, processes, QPs, MRs, CQs, counters, recent "
    "errors, and the timeline of the run whose files are given",
    kOptions,
    true,
    ui};

} // namespace rdmaemu
