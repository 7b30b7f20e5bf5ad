#include "hostset.h"

#include "emu/paths.h"
#include "emu/private_files.h"
#include "options.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace fs = std::filesystem;

namespace rdmaemu {

namespace {

constexpr int kMaxHosts = 254;

std::vector<std::string> split_tabs(const std::string& line) {
    std::vector<std::string> fields;
    std::string field;
    std::istringstream in(line);
    while (std::getline(in, field, '\t'))
        fields.push_back(field);
    return fields;
}

std::optional<HostEntry> parse_record_line(const std::string& line) {
    auto f = split_tabs(line);
    if (f.size() != 6) return std::nullopt;
    auto index = parse_int(f[0], 1, kMaxHosts);
    auto pid = parse_int(f[3], 1, INT32_MAX);
    if (!index || !pid) return std::nullopt;
    return HostEntry{*index, f[1], f[2], static_cast<pid_t>(*pid), f[4], f[5]};
}

std::optional<pid_t> read_pid_file(const std::string& path) {
    std::ifstream in(path);
    std::string text;
    if (!(in >> text)) return std::nullopt;
    auto pid = parse_int(text, 1, INT32_MAX);
    if (!pid) return std::nullopt;
    return static_cast<pid_t>(*pid);
}

std::vector<HostEntry> scan_pid_files(const std::string& runtime) {
    std::vector<HostEntry> hosts;
    for (int i = 1; i <= kMaxHosts; ++i) {
        auto pid = read_pid_file(pid_file_path(runtime, i));
        if (!pid) continue;
        hosts.push_back(HostEntry{i, "", "", *pid, emu::host_socket_path(runtime, i),
                                  log_file_path(runtime, i)});
    }
    return hosts;
}

bool alive_now(const std::vector<HostEntry>& hosts) {
    return std::any_of(hosts.begin(), hosts.end(), daemon_alive);
}

// Waits for the daemons to exit, reaping those that are our children (a failed `up`).
void wait_gone(const std::vector<HostEntry>& hosts, std::chrono::milliseconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
        for (const auto& h : hosts)
            ::waitpid(h.pid, nullptr, WNOHANG);
        if (!alive_now(hosts) || std::chrono::steady_clock::now() >= deadline) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

// `text` as a new file `path` (emu/private_files.h) with exactly `mode`.
std::optional<std::string> write_private(const std::string& path, const std::string& text,
                                         mode_t mode) {
    emu::Opened file = emu::create_private_file(path, O_WRONLY, mode);
    if (!file.fd) return file.error;
    for (size_t at = 0; at < text.size();) {
        ssize_t n = ::write(file.fd.get(), text.data() + at, text.size() - at);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return "cannot write " + path + ": " + std::strerror(errno);
        at += static_cast<size_t>(n);
    }
    return std::nullopt;
}

} // namespace

std::string hosts_record_path(const std::string& runtime) {
    return runtime + "/hosts";
}

std::string pid_file_path(const std::string& runtime, int host) {
    return emu::host_dir(runtime, host) + "/nicsimd.pid";
}

std::string log_file_path(const std::string& runtime, int host) {
    return emu::host_dir(runtime, host) + "/nicsimd.log";
}

std::vector<HostEntry> load_hosts(const std::string& runtime) {
    std::ifstream in(hosts_record_path(runtime));
    if (!in) return scan_pid_files(runtime);
    std::vector<HostEntry> hosts;
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        if (auto h = parse_record_line(line)) hosts.push_back(*h);
    }
    return hosts;
}

std::optional<std::string> save_hosts(const std::string& runtime,
                                      const std::vector<HostEntry>& hosts, mode_t mode) {
    std::ostringstream out;
    out << "# rdmaemu hosts (tab-separated): host address device pid socket log\n";
    for (const auto& h : hosts)
        out << h.index << '\t' << h.address << '\t' << h.device << '\t' << h.pid << '\t' << h.socket
            << '\t' << h.log << '\n';
    std::string path = hosts_record_path(runtime);
    std::string tmp = path + ".tmp";
    if (auto err = write_private(tmp, out.str(), mode)) return err;
    if (::rename(tmp.c_str(), path.c_str()) != 0)
        return "cannot rename " + tmp + ": " + std::strerror(errno);
    return std::nullopt;
}

std::optional<std::string> write_pid_file(const std::string& runtime, int host, pid_t pid) {
    return write_private(pid_file_path(runtime, host), std::to_string(pid) + "\n", 0600);
}

const HostEntry* find_host(const std::vector<HostEntry>& hosts, int index) {
    for (const auto& h : hosts)
        if (h.index == index) return &h;
    return nullptr;
}

bool daemon_alive(const HostEntry& host) {
    // EPERM: alive, but another user's (root's daemons of a shared set, seen by its users).
    if (host.pid <= 0 || (::kill(host.pid, 0) != 0 && errno != EPERM)) return false;
    std::ifstream in("/proc/" + std::to_string(host.pid) + "/cmdline", std::ios::binary);
    std::string arg;
    while (std::getline(in, arg, '\0'))
        if (arg == host.socket) return true;
    return false;
}

std::vector<HostEntry> stop_daemons(const std::vector<HostEntry>& hosts,
                                    std::chrono::milliseconds grace) {
    std::vector<HostEntry> live;
    for (const auto& h : hosts)
        if (daemon_alive(h)) live.push_back(h);
    for (const auto& h : live)
        ::kill(h.pid, SIGTERM);
    wait_gone(live, grace);
    std::vector<HostEntry> stuck;
    for (const auto& h : live) {
        if (!daemon_alive(h)) continue;
        ::kill(h.pid, SIGKILL);
        stuck.push_back(h);
    }
    wait_gone(stuck, std::chrono::seconds(1));
    std::erase_if(stuck, [](const HostEntry& h) { return !daemon_alive(h); });
    return stuck;
}

void remove_host_files(const std::string& runtime, const std::vector<HostEntry>& hosts) {
    std::error_code ec;
    for (const auto& h : hosts) {
        fs::remove(emu::host_socket_path(runtime, h.index), ec); // not the record's: never
                                                                 // delete a path it names
        fs::remove(pid_file_path(runtime, h.index), ec);
    }
    fs::remove(hosts_record_path(runtime), ec);
}

} // namespace rdmaemu
