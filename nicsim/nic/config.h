// nicsimd's command line.
#pragma once

#include "net/fault_injector.h"
#include "net/icrc_policy.h"
#include "net/pcap_writer.h"

#include "emu/share_limits.h"
#include "emu/wire/ip_address.h"

#include <cstdint>
#include <netinet/in.h>
#include <optional>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace nicsim {

enum class Scheduling { Auto, Normal, Realtime };

constexpr std::optional<Scheduling> parse_scheduling(std::string_view s) {
    if (s == "auto") return Scheduling::Auto;
    if (s == "normal") return Scheduling::Normal;
    if (s == "realtime") return Scheduling::Realtime;
    return std::nullopt;
}

struct Config {
    std::string device_name = "emu0";
    // The host's address, IPv4 or IPv6: its GID is the address (::ffff:a.b.c.d for IPv4).
    emu::wire::IpAddress address;
    std::string socket_path; // control socket
    std::string log_file;
    std::string log_level = "info";
    int mtu = 1024; // active MTU in bytes: 256, 512, 1024, 2048 or 4096
    // How long the NIC keeps polling after its last work before it sleeps (poll_loop.h); unset:
    // default_poll_us(), which depends on whether the NIC got real-time priority.
    std::optional<uint64_t> poll_us;
    // 50 µs where there are CPUs to spare. On a machine of 1 or 2 CPUs, where the apps that
    // busy-poll their CQs and the NICs share the cores: 500 µs (longer than a ping-pong's round
    // trip there, so the next message finds the NIC awake; poll_window.h says when it stops),
    // and 0 for a real-time NIC, whose yields never leave the CPU to an app
    // (bench/README.md has the figures).
    static uint64_t default_poll_us(bool realtime);
    // --scheduling: with real-time priority (SCHED_FIFO) a packet or a kick preempts a
    // busy-polling app at once, and the apps' polls stop yielding the CPU (poll_loop.h). Auto
    // takes it where the NIC may (root, or RLIMIT_RTPRIO) and has more than one CPU, and says
    // so quietly where not.
    Scheduling scheduling = Scheduling::Auto;
    uint16_t udp_port =
        4791;           // RoCE v2's; another where Linux Soft-RoCE holds 4791 on all addresses
    FaultConfig faults; // applied to every outgoing packet
    // --icrc-ipv4: IPv4 peers whose packets fail the ICRC for IP ID 0 (net/icrc_policy.h).
    Ipv4IdPolicy icrc_ipv4 = Ipv4IdPolicy::Recover;
    std::string pcap_file;                      // every packet sent and received, when set
    uint64_t pcap_limit = PcapWriter::kNoLimit; // the capture stops before passing this size
    // --allow-uid: uids besides ours and root that may open control sessions (a deliberately
    // shared set); the control socket is then 0666 instead of 0600, the uid check is the gate.
    std::vector<uid_t> allowed_uids;
    // --max-per-process: QPs, CQs, MRs and contexts one process may hold (process_shares.h).
    emu::ShareLimits max_per_process;
    // --peers: every host of the set (this one may be among them), of the address's family, where
    // the fabric delivers multicast packets. Empty: this host only.
    std::vector<emu::wire::IpAddress> hosts;
    // --diag-dir: the set's directory, where each NIC's socket for the peers' reasons lies
    // (diag/peer_reasons.h). Empty: refusals reach peers as their NAK codes alone.
    std::string diag_dir;
    // rdma_cm (nicsim/cm): how long a peer's CM may take to answer (4.096 us * 2^T) and how
    // often a request is sent again; Linux's rdma_cm uses 20 (about 4 s) and 15.
    uint8_t cm_response_timeout = 20;
    uint8_t cm_retries = 15;
};

// Parses argv (CLI11). Returns nothing, with `*exit_status` what nicsimd exits with, after --help
// (the options on stdout, 0) or an error (why and the options on stderr, 2).
std::optional<Config> parse_args(int argc, char** argv, int* exit_status = nullptr);

} // namespace nicsim
