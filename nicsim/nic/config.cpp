#include "nic/config.h"

#include "emu/share_limits.h"
#include "emu/uid_list.h"

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <unistd.h>

namespace nicsim {
namespace {

// An option's check and store: "" when `value` was taken, else why not (the message the user
// reads after "--option: ").
using Take = std::function<std::string(const std::string& value)>;

bool all_digits(const std::string& v, size_t max_len) {
    return !v.empty() && v.size() <= max_len && v.find_first_not_of("0123456789") == v.npos;
}

std::optional<unsigned long long> whole_number(const std::string& v) {
    char* end = nullptr;
    errno = 0;
    unsigned long long n = std::strtoull(v.c_str(), &end, 10);
    if (v.empty() || *end || v[0] == '-' || errno == ERANGE) return std::nullopt;
    return n;
}

// A host's address: IPv4 or IPv6, unicast, not link-local (emu/wire/ip_address.h).
std::string host_address(const std::string& value, emu::wire::IpAddress& out) {
    auto a = emu::wire::IpAddress::parse(value);
    if (!a) return "not an IPv4 or IPv6 address: " + value;
    if (std::string why = emu::wire::host_address_fault(*a); !why.empty()) return why;
    out = *a;
    return "";
}

Take address_list(std::vector<emu::wire::IpAddress>& out) {
    return [&out](const std::string& value) -> std::string {
        out.clear();
        for (size_t at = 0;;) {
            size_t comma = value.find(',', at);
            std::string one = value.substr(at, comma == value.npos ? value.npos : comma - at);
            emu::wire::IpAddress a;
            if (std::string why = host_address(one, a); !why.empty()) return why;
            out.push_back(a);
            if (comma == value.npos) return "";
            at = comma + 1;
        }
    };
}

Take probability(double& out) {
    return [&out](const std::string& value) -> std::string {
        auto p = parse_probability(value);
        if (!p) return "wants a probability between 0 and 1, not " + value;
        out = *p;
        return "";
    };
}

Take text(std::string& out) {
    return [&out](const std::string& value) {
        out = value;
        return std::string();
    };
}

// Every option, with what it takes and what it says in --help.
struct OptionDef {
    const char* name;
    const char* value_name;
    const char* help;
    Take take;
};

std::vector<OptionDef> options(Config& c) {
    return {
        {"--address", "ADDRESS", "this host's IPv4 or IPv6 address",
         [&c](const std::string& v) -> std::string { return host_address(v, c.address); }},
        {"--socket", "PATH", "the control socket", text(c.socket_path)},
        {"--log-file", "PATH", "the log", text(c.log_file)},
        {"--name", "NAME", "the device's name (default emu0)",
         [&c](const std::string& v) -> std::string {
             if (v.empty() || v.size() >= 64) return "must be 1..63 characters";
             c.device_name = v;
             return "";
         }},
        {"--log-level", "LEVEL", "trace|debug|info|warn|error (default info)",
         [&c](const std::string& v) -> std::string {
             for (const char* l : {"trace", "debug", "info", "warn", "error"})
                 if (v == l) {
                     c.log_level = v;
                     return "";
                 }
             return "unknown log level " + v;
         }},
        {"--mtu", "BYTES", "256|512|1024|2048|4096 (default 1024)",
         [&c](const std::string& v) -> std::string {
             for (int mtu : {256, 512, 1024, 2048, 4096})
                 if (v == std::to_string(mtu)) {
                     c.mtu = mtu;
                     return "";
                 }
             return "MTU must be 256, 512, 1024, 2048 or 4096, not " + v;
         }},
        {"--udp-port", "N", "the RoCE v2 port (default 4791)",
         [&c](const std::string& v) -> std::string {
             if (!all_digits(v, 5) || std::stoi(v) < 1 || std::stoi(v) > 65535)
                 return "wants a port number 1..65535, not " + v;
             c.udp_port = static_cast<uint16_t>(std::stoi(v));
             return "";
         }},
        {"--poll-us", "N", "how long the NIC polls after work before it sleeps",
         [&c](const std::string& v) -> std::string {
             if (!all_digits(v, 7)) return "wants microseconds (0..9999999), not " + v;
             c.poll_us = std::stoull(v);
             return "";
         }},
        {"--scheduling", "auto|normal|realtime",
         "the NIC's share of the CPU: real-time priority where allowed and on more than one CPU "
         "(auto, the default), a short slice and nice -10 (normal), or real-time priority and a "
         "warning if refused",
         [&c](const std::string& v) -> std::string {
             auto scheduling = parse_scheduling(v);
             if (!scheduling) return "wants auto, normal or realtime, not " + v;
             c.scheduling = *scheduling;
             return "";
         }},
        {"--pcap", "FILE", "capture every packet sent and received", text(c.pcap_file)},
        {"--pcap-limit", "BYTES", "the capture stops before this size",
         [&c](const std::string& v) -> std::string {
             auto n = whole_number(v);
             if (!n) return "wants a size in bytes, not " + v;
             c.pcap_limit = *n;
             return "";
         }},
        {"--allow-uid", "UID[,UID...]", "uids besides ours and root that may open the device",
         [&c](const std::string& v) -> std::string {
             auto uids = emu::parse_uid_list(v);
             if (!uids) return "wants UID[,UID...], not " + v;
             c.allowed_uids = *uids;
             return "";
         }},
        {"--max-per-process", "KIND=N,...", "qp, cq, mr, context: what one process may hold",
         [&c](const std::string& v) -> std::string {
             auto shares = emu::parse_share_limits(v);
             if (!shares)
                 return "wants KIND=N[,KIND=N...] (KIND: qp, cq, mr, context; N >= 1), not " + v;
             c.max_per_process = *shares;
             return "";
         }},
        {"--peers", "ADDRESS,...", "every host of the set (multicast, rdma_cm)",
         address_list(c.hosts)},
        {"--diag-dir", "DIR", "where the set's NICs tell each other why", text(c.diag_dir)},
        {"--cm-response-timeout", "T", "rdma_cm: 4.096 us * 2^T for an answer, 0..31 (default 20)",
         [&c](const std::string& v) -> std::string {
             if (!all_digits(v, 2) || std::stoi(v) > 31) return "wants 0..31, not " + v;
             c.cm_response_timeout = static_cast<uint8_t>(std::stoi(v));
             return "";
         }},
        {"--cm-retries", "N", "rdma_cm: retries, 0..15 (default 15)",
         [&c](const std::string& v) -> std::string {
             if (!all_digits(v, 2) || std::stoi(v) > 15) return "wants 0..15, not " + v;
             c.cm_retries = static_cast<uint8_t>(std::stoi(v));
             return "";
         }},
        {"--drop", "P", "drop each packet sent with probability P", probability(c.faults.drop)},
        {"--duplicate", "P", "send it twice", probability(c.faults.duplicate)},
        {"--reorder", "P", "hold it back behind the next", probability(c.faults.reorder)},
        {"--corrupt", "P", "flip a byte (the receiver's ICRC check drops it)",
         probability(c.faults.corrupt)},
        {"--delay-us", "D", "delay every packet sent",
         [&c](const std::string& v) -> std::string {
             auto n = whole_number(v);
             if (!n) return "wants a non-negative integer, not " + v;
             c.faults.delay_us = static_cast<uint32_t>(*n);
             return "";
         }},
        {"--seed", "S", "the faults' random seed",
         [&c](const std::string& v) -> std::string {
             auto n = whole_number(v);
             if (!n) return "wants a non-negative integer, not " + v;
             c.faults.seed = *n;
             return "";
         }},
        {"--icrc-ipv4", "recover-id|id-zero",
         "IPv4 peers that send an IP ID: find it from the ICRC (default), or drop them",
         [&c](const std::string& v) -> std::string {
             auto policy = parse_ipv4_id_policy(v);
             if (!policy) return "wants recover-id or id-zero, not " + v;
             c.icrc_ipv4 = *policy;
             return "";
         }},
    };
}

} // namespace

uint64_t Config::default_poll_us(bool realtime) {
    if (::sysconf(_SC_NPROCESSORS_ONLN) > 2) return 50;
    return realtime ? 0 : 500;
}

std::optional<Config> parse_args(int argc, char** argv, int* exit_status) {
    Config c;
    CLI::App app{"The NIC of one emulated host. Usually started by `rdmaemu up`.", "nicsimd"};
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    for (OptionDef& o : options(c)) {
        CLI::Option* opt = app.add_option_function<std::string>(
            o.name,
            [name = std::string(o.name), take = std::move(o.take)](const std::string& v) {
                if (std::string why = take(v); !why.empty()) throw CLI::ValidationError(name, why);
            },
            o.help);
        opt->type_name(o.value_name);
        for (std::string_view required : {"--address", "--socket", "--log-file"})
            if (required == o.name) opt->required();
    }
    try {
        app.parse(argc, argv);
        // One family per set: a host's socket speaks its address's (net/roce_port.h).
        for (const emu::wire::IpAddress& peer : c.hosts)
            if (peer.is_ipv4() != c.address.is_ipv4())
                throw CLI::ValidationError("--peers", peer.text() + " is " +
                                                          (peer.is_ipv4() ? "IPv4" : "IPv6") +
                                                          " and --address " + c.address.text() +
                                                          " is not: the hosts of "
                                                          "a set are all IPv4 or all IPv6");
    } catch (const CLI::CallForHelp&) {
        std::printf("%s", app.help().c_str());
        if (exit_status) *exit_status = 0;
        return std::nullopt;
    } catch (const CLI::ParseError& e) {
        std::fprintf(stderr, "nicsimd: %s\n%s", e.what(), app.help().c_str());
        if (exit_status) *exit_status = 2;
        return std::nullopt;
    }
    return c;
}

} // namespace nicsim
