// The set of emulated hosts in one runtime directory: its record (<runtime>/hosts), the daemons'
// pid files, and stopping them. Shared by up (refuse, clean up a failed start), down, run and
// status.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <sys/stat.h>
#include <sys/types.h>
#include <vector>

namespace rdmaemu {

struct HostEntry {
    int index = 0;
    std::string address; // empty when only a pid file remained
    std::string device;
    pid_t pid = 0;
    std::string socket;
    std::string log;
};

std::string hosts_record_path(const std::string& runtime);
std::string pid_file_path(const std::string& runtime, int host);
std::string log_file_path(const std::string& runtime, int host);

// The recorded set, or, without a record (an `up` killed half-way), the hosts whose pid files
// remain. Empty when nothing was started here.
std::vector<HostEntry> load_hosts(const std::string& runtime);
// Writes the record atomically, a new file with exactly `mode`. Returns an error message.
std::optional<std::string> save_hosts(const std::string& runtime,
                                      const std::vector<HostEntry>& hosts, mode_t mode);
// A new pid file, 0600. Returns an error message.
std::optional<std::string> write_pid_file(const std::string& runtime, int host, pid_t pid);

const HostEntry* find_host(const std::vector<HostEntry>& hosts, int index);

// True when the pid is a live process started with this host's --socket: a recycled pid or a
// zombie does not count, so down never signals a stranger.
bool daemon_alive(const HostEntry& host);

// SIGTERM to each live daemon, SIGKILL to those still there after `grace`. Returns the hosts
// whose daemons would not die.
std::vector<HostEntry> stop_daemons(const std::vector<HostEntry>& hosts,
                                    std::chrono::milliseconds grace);

// Removes the sockets, pid files and the record; logs stay for a post-mortem.
void remove_host_files(const std::string& runtime, const std::vector<HostEntry>& hosts);

} // namespace rdmaemu
