// nicsimd's command line (nicsim/nic/config.cpp, on CLI11): every option lands in its field, and
// a bad value, a missing value, a missing required option or an unknown one is refused with
// exit status 2 and the option named in the message; --help is status 0.
#include "nic/config.h"

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <cstdio>
#include <fcntl.h>
#include <string>
#include <unistd.h>
#include <vector>

using namespace nicsim;

namespace {

struct Parsed {
    std::optional<Config> config;
    int status = -1;
    std::string said; // stderr and stdout
};

// Runs parse_args on `args` (after "nicsimd"), catching what it prints.
Parsed parse(std::vector<std::string> args) {
    std::vector<char*> argv{const_cast<char*>("nicsimd")};
    for (auto& a : args)
        argv.push_back(a.data());
    char path[] = "/tmp/rdmaemu-args.XXXXXX";
    int fd = ::mkstemp(path);
    REQUIRE(fd >= 0);
    ::unlink(path);
    std::fflush(stdout);
    std::fflush(stderr);
    int saved_out = ::dup(1), saved_err = ::dup(2);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    Parsed p;
    p.config = parse_args(static_cast<int>(argv.size()), argv.data(), &p.status);
    std::fflush(stdout);
    std::fflush(stderr);
    ::dup2(saved_out, 1);
    ::dup2(saved_err, 2);
    ::close(saved_out);
    ::close(saved_err);
    char buf[8192];
    ssize_t n = ::pread(fd, buf, sizeof buf, 0);
    ::close(fd);
    p.said.assign(buf, n > 0 ? static_cast<size_t>(n) : 0);
    return p;
}

const std::vector<std::string> kRequired = {"--address", "127.0.3.1",  "--socket",
                                            "/s",        "--log-file", "/l"};

std::vector<std::string> with(std::vector<std::string> more) {
    std::vector<std::string> all = kRequired;
    all.insert(all.end(), more.begin(), more.end());
    return all;
}

} // namespace

TEST_CASE("nicsimd args: every option lands in its field", "[config]") {
    Parsed p = parse(with({"--name",
                           "emu7",
                           "--log-level",
                           "debug",
                           "--mtu",
                           "4096",
                           "--udp-port",
                           "4792",
                           "--poll-us",
                           "25",
                           "--pcap",
                           "/c.pcap",
                           "--pcap-limit",
                           "1000",
                           "--allow-uid",
                           "1000,1001",
                           "--max-per-process",
                           "qp=5",
                           "--peers",
                           "127.0.3.1,127.0.3.2",
                           "--diag-dir",
                           "/d",
                           "--cm-response-timeout",
                           "18",
                           "--cm-retries",
                           "3",
                           "--drop",
                           "0.25",
                           "--duplicate",
                           "0.5",
                           "--reorder",
                           "0.125",
                           "--corrupt",
                           "1",
                           "--delay-us",
                           "7",
                           "--seed",
                           "42",
                           "--icrc-ipv4",
                           "id-zero",
                           "--scheduling",
                           "realtime"}));
    REQUIRE(p.config);
    const Config& c = *p.config;
    CHECK(c.address.text() == "127.0.3.1");
    CHECK(c.address.is_ipv4());
    CHECK(c.socket_path == "/s");
    CHECK(c.log_file == "/l");
    CHECK(c.device_name == "emu7");
    CHECK(c.log_level == "debug");
    CHECK(c.mtu == 4096);
    CHECK(c.udp_port == 4792);
    CHECK(c.poll_us == 25u);
    CHECK(c.pcap_file == "/c.pcap");
    CHECK(c.pcap_limit == 1000);
    CHECK(c.allowed_uids == std::vector<uid_t>{1000, 1001});
    CHECK(c.hosts.size() == 2);
    CHECK(c.diag_dir == "/d");
    CHECK(c.cm_response_timeout == 18);
    CHECK(c.cm_retries == 3);
    CHECK(c.faults.drop == 0.25);
    CHECK(c.faults.duplicate == 0.5);
    CHECK(c.faults.reorder == 0.125);
    CHECK(c.faults.corrupt == 1.0);
    CHECK(c.faults.delay_us == 7);
    CHECK(c.faults.seed == 42);
    CHECK(c.icrc_ipv4 == Ipv4IdPolicy::Zero);
    CHECK(c.scheduling == Scheduling::Realtime);
}

TEST_CASE("nicsimd args: an IPv6 host and its peers", "[config][ipv6]") {
    Parsed p = parse({"--address", "fd00:214::1", "--socket", "/s", "--log-file", "/l", "--peers",
                      "fd00:214::1,FD00:214:0::2"});
    REQUIRE(p.config);
    CHECK(p.config->address.text() == "fd00:214::1");
    CHECK_FALSE(p.config->address.is_ipv4());
    REQUIRE(p.config->hosts.size() == 2);
    CHECK(p.config->hosts[1].text() == "fd00:214::2");
    // An IPv4-mapped IPv6 address is the IPv4 host.
    p = parse({"--address", "::ffff:10.0.0.1", "--socket", "/s", "--log-file", "/l"});
    REQUIRE(p.config);
    CHECK(p.config->address.is_ipv4());
    CHECK(p.config->address.text() == "10.0.0.1");
}

TEST_CASE("nicsimd args: defaults, --opt=value, and the last of a repeated option", "[config]") {
    Parsed p = parse(with({"--mtu=2048", "--mtu", "512"}));
    REQUIRE(p.config);
    CHECK(p.config->mtu == 512);
    CHECK(p.config->device_name == "emu0");
    CHECK(p.config->udp_port == 4791);
    CHECK(p.config->icrc_ipv4 == Ipv4IdPolicy::Recover);
    CHECK(p.config->scheduling == Scheduling::Auto);
    CHECK(parse(with({"--scheduling", "normal"})).config->scheduling == Scheduling::Normal);
    CHECK(parse(with({"--scheduling", "auto"})).config->scheduling == Scheduling::Auto);
}

TEST_CASE("nicsimd args: refusals name the option and why", "[config]") {
    auto [args, said] = GENERATE(table<std::vector<std::string>, std::string>({
        {with({"--mtu", "1000"}), "--mtu: MTU must be 256, 512, 1024, 2048 or 4096, not 1000"},
        {with({"--udp-port", "0"}), "--udp-port: wants a port number 1..65535, not 0"},
        {with({"--udp-port", "70000"}), "--udp-port: wants a port number 1..65535, not 70000"},
        {with({"--drop", "1.5"}), "--drop: wants a probability between 0 and 1, not 1.5"},
        {with({"--cm-retries", "16"}), "--cm-retries: wants 0..15, not 16"},
        {with({"--log-level", "loud"}), "--log-level: unknown log level loud"},
        {with({"--peers", "127.0.3.1,x"}), "--peers: not an IPv4 or IPv6 address: x"},
        {with({"--peers", "127.0.3.1,fd00::2"}),
         "--peers: fd00::2 is IPv6 and --address 127.0.3.1 is not: the hosts of a set are all "
         "IPv4 or all IPv6"},
        {{"--address", "fe80::1", "--socket", "/s", "--log-file", "/l"},
         "--address: fe80::1 is IPv6 link-local (fe80::/10): it needs an interface"},
        {{"--address", "0.0.0.0", "--socket", "/s", "--log-file", "/l"},
         "--address: 0.0.0.0 is the unspecified address, no host's"},
        {with({"--seed", "-1"}), "--seed: wants a non-negative integer, not -1"},
        {with({"--icrc-ipv4", "skip"}), "--icrc-ipv4: wants recover-id or id-zero, not skip"},
        {with({"--scheduling", "fifo"}), "--scheduling: wants auto, normal or realtime, not fifo"},
        {with({"--name", std::string(64, 'n')}), "--name: must be 1..63 characters"},
        {with({"--drop"}), "--drop"},
        {with({"--bogus", "1"}), "The following arguments were not expected: 1 --bogus"},
        {{"--socket", "/s", "--log-file", "/l"}, "--address is required"},
        {{"--address", "1.2.3", "--socket", "/s", "--log-file", "/l"},
         "--address: not an IPv4 or IPv6 address: 1.2.3"},
    }));
    Parsed p = parse(args);
    CHECK_FALSE(p.config);
    CHECK(p.status == 2);
    INFO(p.said);
    CHECK(p.said.find("nicsimd: " + said) != std::string::npos);
    CHECK(p.said.find("Options:") != std::string::npos); // and what it takes
}

TEST_CASE("nicsimd args: --help lists the options and exits 0", "[config]") {
    Parsed p = parse({"--help"});
    CHECK_FALSE(p.config);
    CHECK(p.status == 0);
    CHECK(p.said.find("--max-per-process") != std::string::npos);
    CHECK(p.said.find("--address ADDRESS REQUIRED") != std::string::npos);
}
