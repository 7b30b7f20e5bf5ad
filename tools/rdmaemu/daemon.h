// Starting one nicsimd: finding a free address range, spawning it detached, and waiting until
// its control socket answers.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace rdmaemu {

// RoCE v2's UDP port, which every nicsimd binds on its own address unless told another.
inline constexpr int kRoceV2Port = 4791;

// The first S in 0..254 where UDP `port` is free on 127.0.S.1, so that sets of hosts in
// different runtime directories get different addresses.
std::optional<int> pick_subnet(int port);
// Whether UDP `port` can be bound on 127.0.`subnet`.1 (no other set holds it).
bool subnet_free(int subnet, int port);

// True when something holds `port` on every address (0.0.0.0), as Linux Soft-RoCE (rdma_rxe)
// does with 4791 once it is loaded.
bool port_held_on_all_addresses(int port);
// 0 when UDP `address`:port (IPv4 or IPv6) can be bound now (and is released again), else errno.
int address_bindable(const std::string& address, int port);

// Starts `argv` (argv[0] is the program's path) in a new session, stdin from /dev/null and
// stdout/stderr to `output_fd` (the daemon's log), so it outlives rdmaemu and its terminal.
// Returns the pid or -errno.
pid_t spawn_detached(const std::vector<std::string>& argv, int output_fd);

struct ReadyResult {
    bool ready = false;
    bool exited = false; // the daemon died before its socket answered
    int wait_status = 0; // waitpid's status when exited
};

// Waits until `socket` accepts a connection, the process exits, or `limit` passes.
ReadyResult wait_ready(const std::string& socket, pid_t pid, std::chrono::milliseconds limit);

// "exit status 1", "killed by signal 9".
std::string describe_wait_status(int status);

// The last `lines` lines of a file, for showing why a daemon failed.
std::string tail_file(const std::string& path, int lines);

} // namespace rdmaemu
