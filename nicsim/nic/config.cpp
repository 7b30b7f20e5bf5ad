#include "nic/config.h"

#include "emu/share_limits.h"
#include "emu/uid_list.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

namespace nicsim {
namespace {

void usage(const char* why) {
    std::fprintf(
        stderr,
        "nicsimd: %s\n"
        "usage: nicsimd --address A.B.C.D --socket PATH --log-file PATH\n"
        "               [--name emu0] [--log-level trace|debug|info|warn|error]\n"
        "               [--mtu 256|512|1024|2048|4096] [--udp-port N]\n"
        "               [--poll-us N]   (polling after work before sleeping)\n"
        "               [--pcap FILE] [--pcap-limit BYTES]   (capture stops there)\n"
        "               [--allow-uid UID[,UID...]]   (besides ours and root)\n"
        "               [--max-per-process qp=N,cq=N,mr=N,context=N]   (any of them)\n"
        "               [--peers A.B.C.D,...]   (every host of the set: multicast, rdma_cm)\n"
        "               [--diag-dir DIR]   (where the set's NICs tell each other why)\n"
        "               [--cm-response-timeout T] [--cm-retries N]   (rdma_cm: 4.096 us *\n"
        "                 2^T for an answer, 0..31, default 20; N retries, 0..15, default 15)\n"
        "               [--drop P] [--duplicate P] [--reorder P] [--corrupt P]\n"
        "               [--delay-us D] [--seed S]   (P: probability 0..1)\n"
        "               [--icrc-ipv4 recover-id|id-zero]   (IPv4 peers that send an IP ID:\n"
        "                 find it from the ICRC, counted, or drop them; default recover-id)\n"
        "Usually started by `rdmaemu up`.\n",
        why);
}

bool valid_mtu(int mtu) {
    return mtu == 256 || mtu == 512 || mtu == 1024 || mtu == 2048 || mtu == 4096;
}

bool valid_level(const std::string& l) {
    return l == "trace" || l == "debug" || l == "info" || l == "warn" || l == "error";
}

} // namespace

uint64_t Config::default_poll_us() {
    return ::sysconf(_SC_NPROCESSORS_ONLN) > 2 ? 50 : 0;
}

std::optional<Config> parse_args(int argc, char** argv) {
    Config c;
    bool have_address = false;
    for (int i = 1; i < argc; ++i) {
        std::string opt = argv[i];
        if (i + 1 >= argc) {
            usage(("missing value for " + opt).c_str());
            return std::nullopt;
        }
        std::string value = argv[++i];
        if (opt == "--name") {
            if (value.empty() || value.size() >= 64) {
                usage("--name must be 1..63 characters");
                return std::nullopt;
            }
            c.device_name = value;
        } else if (opt == "--address") {
            if (inet_pton(AF_INET, value.c_str(), &c.address) != 1) {
                usage(("not an IPv4 address: " + value).c_str());
                return std::nullopt;
            }
            have_address = true;
        } else if (opt == "--socket") {
            c.socket_path = value;
        } else if (opt == "--diag-dir") {
            c.diag_dir = value;
        } else if (opt == "--log-file") {
            c.log_file = value;
        } else if (opt == "--log-level") {
            if (!valid_level(value)) {
                usage(("unknown log level " + value).c_str());
                return std::nullopt;
            }
            c.log_level = value;
        } else if (opt == "--mtu") {
            c.mtu = std::atoi(value.c_str());
            if (!valid_mtu(c.mtu)) {
                usage(("MTU must be 256, 512, 1024, 2048 or 4096, not " + value).c_str());
                return std::nullopt;
            }
        } else if (opt == "--poll-us") {
            if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos ||
                value.size() > 7) {
                usage(("--poll-us wants microseconds (0..9999999), not " + value).c_str());
                return std::nullopt;
            }
            c.poll_us = std::strtoull(value.c_str(), nullptr, 10);
        } else if (opt == "--udp-port") {
            int port = std::atoi(value.c_str());
            if (port < 1 || port > 65535 ||
                value.find_first_not_of("0123456789") != std::string::npos) {
                usage(("--udp-port wants a port number 1..65535, not " + value).c_str());
                return std::nullopt;
            }
            c.udp_port = static_cast<uint16_t>(port);
        } else if (opt == "--peers") {
            c.hosts.clear();
            size_t at = 0;
            while (at <= value.size()) {
                size_t comma = value.find(',', at);
                std::string one =
                    value.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
                in_addr a{};
                if (inet_pton(AF_INET, one.c_str(), &a) != 1) {
                    usage(("--peers: not an IPv4 address: " + one).c_str());
                    return std::nullopt;
                }
                c.hosts.push_back(a.s_addr);
                if (comma == std::string::npos) break;
                at = comma + 1;
            }
        } else if (opt == "--cm-response-timeout" || opt == "--cm-retries") {
            const int max = opt == "--cm-retries" ? 15 : 31;
            int v = std::atoi(value.c_str());
            if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos ||
                value.size() > 2 || v > max) {
                usage((opt + " wants 0.." + std::to_string(max) + ", not " + value).c_str());
                return std::nullopt;
            }
            (opt == "--cm-retries" ? c.cm_retries : c.cm_response_timeout) =
                static_cast<uint8_t>(v);
        } else if (opt == "--icrc-ipv4") {
            auto policy = parse_ipv4_id_policy(value);
            if (!policy) {
                usage(("--icrc-ipv4 wants recover-id or id-zero, not " + value).c_str());
                return std::nullopt;
            }
            c.icrc_ipv4 = *policy;
        } else if (opt == "--pcap") {
            c.pcap_file = value;
        } else if (opt == "--pcap-limit") {
            char* end = nullptr;
            errno = 0;
            unsigned long long v = std::strtoull(value.c_str(), &end, 10);
            if (value.empty() || *end || value[0] == '-' || errno == ERANGE) {
                usage(("--pcap-limit wants a size in bytes, not " + value).c_str());
                return std::nullopt;
            }
            c.pcap_limit = v;
        } else if (opt == "--allow-uid") {
            auto uids = emu::parse_uid_list(value);
            if (!uids) {
                usage(("--allow-uid wants UID[,UID...], not " + value).c_str());
                return std::nullopt;
            }
            c.allowed_uids = *uids;
        } else if (opt == "--max-per-process") {
            auto shares = emu::parse_share_limits(value);
            if (!shares) {
                std::string why = "--max-per-process wants KIND=N[,KIND=N...] (KIND: qp, cq, "
                                  "mr, context; N >= 1), not " +
                                  value;
                usage(why.c_str());
                return std::nullopt;
            }
            c.max_per_process = *shares;
        } else if (opt == "--drop" || opt == "--duplicate" || opt == "--reorder" ||
                   opt == "--corrupt") {
            auto p = parse_probability(value);
            if (!p) {
                usage((opt + " wants a probability between 0 and 1, not " + value).c_str());
                return std::nullopt;
            }
            double& field = opt == "--drop"        ? c.faults.drop
                            : opt == "--duplicate" ? c.faults.duplicate
                            : opt == "--reorder"   ? c.faults.reorder
                                                   : c.faults.corrupt;
            field = *p;
        } else if (opt == "--delay-us" || opt == "--seed") {
            char* end = nullptr;
            unsigned long long v = std::strtoull(value.c_str(), &end, 10);
            if (value.empty() || *end || value[0] == '-') {
                usage((opt + " wants a non-negative integer, not " + value).c_str());
                return std::nullopt;
            }
            if (opt == "--seed")
                c.faults.seed = v;
            else
                c.faults.delay_us = static_cast<uint32_t>(v);
        } else {
            usage(("unknown option " + opt).c_str());
            return std::nullopt;
        }
    }
    if (!have_address || c.socket_path.empty() || c.log_file.empty()) {
        usage("--address, --socket and --log-file are required");
        return std::nullopt;
    }
    return c;
}

} // namespace nicsim
