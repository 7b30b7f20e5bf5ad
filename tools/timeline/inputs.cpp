#include "inputs.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace rdmaemu::timeline {
namespace {

namespace fs = std::filesystem;

// nullopt: read, and it was one of ours; "": neither (skipped in a directory); else the error.
std::optional<std::string> load_file(const std::string& path, Inputs& out) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return "cannot read " + path;
    std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in),
                               std::istreambuf_iterator<char>()};
    if (looks_like_pcapng(bytes)) {
        CaptureFile c;
        c.path = path;
        if (auto err = parse_pcapng(bytes, c)) return path + ": " + *err;
        out.captures.push_back(std::move(c));
        return std::nullopt;
    }
    std::string text(bytes.begin(), bytes.end());
    if (text.rfind(kTraceHeader, 0) == 0) {
        TraceFile t;
        t.path = path;
        if (auto err = parse_trace(text, t)) return path + ": " + *err;
        out.traces.push_back(std::move(t));
        return std::nullopt;
    }
    return std::string();
}

} // namespace

std::optional<std::string> load_inputs(const std::vector<std::string>& paths, Inputs& out) {
    for (const std::string& path : paths) {
        std::error_code ec;
        if (fs::is_directory(path, ec)) {
            std::vector<std::string> files;
            for (const auto& entry : fs::directory_iterator(path, ec))
                if (entry.is_regular_file()) files.push_back(entry.path().string());
            if (ec) return "cannot list " + path + ": " + ec.message();
            std::sort(files.begin(), files.end());
            for (const std::string& f : files)
                if (auto err = load_file(f, out); err && !err->empty()) return err;
            continue;
        }
        if (auto err = load_file(path, out))
            return err->empty() ? path + " is neither a verbs trace (RDMAEMU_TRACE) nor a pcapng "
                                         "capture (up --pcap)"
                                : *err;
    }
    if (out.traces.empty() && out.captures.empty())
        return std::string("no verbs trace or capture among the files given");
    return std::nullopt;
}

} // namespace rdmaemu::timeline
