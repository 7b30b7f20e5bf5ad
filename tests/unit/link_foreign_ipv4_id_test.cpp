// The link and an IPv4 peer that sends a non-zero IP ID, as Linux Soft-RoCE does
// (rxe_net.c: DF and __ip_select_ident()): its packets are accepted with the ID found from the
// ICRC and counted, the capture shows the ID they came with, the set's own hosts keep the full
// check, and --icrc-ipv4 id-zero drops them as ICRC errors. The link listens on 127.0.0.1; the
// foreign peer is a plain socket on 127.0.0.2 sending packets whose ICRC covers its ID.
#include "net/udp_link.h"

#include "pcapng_read.h"
#include "temp_dir.h"

#include "emu/wire/icrc.h"

#include <catch2/catch.hpp>
#include <spdlog/logger.h>
#include <spdlog/sinks/null_sink.h>

#include <arpa/inet.h>
#include <chrono>
#include <memory>
#include <string>
#include <sys/socket.h>
#include <vector>

using nicsim::FaultConfig;
using nicsim::Ipv4IdPolicy;
using nicsim::PcapWriter;
using nicsim::UdpLink;
using nicsim::UniqueFd;

namespace {

constexpr size_t kEthernet = 14;
constexpr size_t kHeaders = 14 + 20 + 8;

UniqueFd socket_on(const char* ip, uint16_t* port) {
    UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    REQUIRE(fd);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    REQUIRE(inet_pton(AF_INET, ip, &sa.sin_addr) == 1);
    REQUIRE(::bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0);
    socklen_t len = sizeof sa;
    REQUIRE(::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&sa), &len) == 0);
    *port = ntohs(sa.sin_port);
    return fd;
}

uint32_t addr(const char* ip) {
    in_addr a{};
    REQUIRE(inet_pton(AF_INET, ip, &a) == 1);
    return a.s_addr;
}

struct Rig {
    TempDir dir{"link_foreign"};
    std::string path = dir / "host.pcap";
    boost::asio::io_context io;
    spdlog::logger log{"link_test", std::make_shared<spdlog::sinks::null_sink_mt>()};
    uint16_t port = 0;
    std::unique_ptr<UdpLink> link;
    std::vector<std::vector<uint8_t>> delivered;

    explicit Rig(Ipv4IdPolicy policy) {
        UniqueFd sock = socket_on("127.0.0.1", &port);
        PcapWriter pcap;
        REQUIRE(pcap.open(path));
        link = std::make_unique<UdpLink>(io, std::move(sock),
                                         emu::wire::IpAddress::from_ipv4(addr("127.0.0.1")), port,
                                         FaultConfig{}, std::move(pcap), log);
        link->set_ipv4_id_policy(policy);
        link->start([this](const emu::wire::IpEndpoint&, uint8_t* data, size_t len, const uint8_t*,
                           const nicsim::IpFields&) { delivered.emplace_back(data, data + len); });
    }

    // An RC SEND Only with 8 bytes of payload, its ICRC for `from`:`from_port` -> the link with
    // IP ID `id` and DF, sent from a socket there.
    void send_from(const char* from, uint16_t id) {
        uint16_t from_port = 0;
        UniqueFd s = socket_on(from, &from_port);
        std::vector<uint8_t> p = {0x04, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x11,
                                  0x80, 0x12, 0x34, 0x56, 1,    2,    3,    4,
                                  5,    6,    7,    8,    0,    0,    0,    0};
        emu::wire::Ipv4Flow flow{addr(from), addr("127.0.0.1"), from_port, port, id, 0x4000};
        emu::wire::finish_icrc(flow, p.data(), p.size());
        sockaddr_in dst{};
        dst.sin_family = AF_INET;
        dst.sin_addr.s_addr = addr("127.0.0.1");
        dst.sin_port = htons(port);
        REQUIRE(::sendto(s.get(), p.data(), p.size(), 0, reinterpret_cast<sockaddr*>(&dst),
                         sizeof dst) == static_cast<ssize_t>(p.size()));
    }

    void run() {
        for (int i = 0; i < 20 && link->counters().rx_packets == 0; ++i) {
            io.restart();
            io.run_for(std::chrono::milliseconds(10));
        }
        io.restart();
        io.run_for(std::chrono::milliseconds(10)); // the turn's capture reaches the file
    }
    pcapng_read::File capture() const { return pcapng_read::parse_file(path); }
};

uint16_t ip_id_of(const pcapng_read::Packet& p) {
    REQUIRE(p.frame.size() >= kHeaders);
    return static_cast<uint16_t>(p.frame[kEthernet + 4] << 8 | p.frame[kEthernet + 5]);
}

} // namespace

TEST_CASE("link: a foreign IPv4 peer's non-zero IP ID is found from the ICRC, counted and "
          "captured",
          "[link][icrc]") {
    Rig rig(Ipv4IdPolicy::Recover);
    rig.send_from("127.0.0.2", 0xd21c);
    rig.run();
    REQUIRE(rig.delivered.size() == 1);
    CHECK(rig.link->counters().icrc_errors == 0);
    CHECK(rig.link->counters().icrc_ipv4_id_recovered == 1);
    auto f = rig.capture();
    REQUIRE(f.packets.size() == 1);
    CHECK(ip_id_of(f.packets[0]) == 0xd21c);        // the header as it came, not ID 0
    CHECK(f.packets[0].frame[kEthernet + 8] == 64); // TTL from the socket (loopback: 64)
    CHECK(f.packets[0].comment == "rdmaemu: IPv4 ID 0xd21c recovered from the ICRC (--icrc-ipv4 "
                                  "recover-id, counted in icrc_ipv4_id_recovered)");
    // The captured packet's own ICRC is right for its captured header.
    const auto& fr = f.packets[0].frame;
    CHECK(emu::wire::icrc_from_ip_packet(fr.data() + kEthernet, fr.size() - kEthernet) ==
          emu::wire::stored_icrc_of_ip_packet(fr.data() + kEthernet, fr.size() - kEthernet));
}

TEST_CASE("link: a packet with IP ID 0 passes the full check, uncounted and uncommented",
          "[link][icrc]") {
    Rig rig(Ipv4IdPolicy::Recover);
    rig.send_from("127.0.0.2", 0);
    rig.run();
    REQUIRE(rig.delivered.size() == 1);
    CHECK(rig.link->counters().icrc_ipv4_id_recovered == 0);
    auto f = rig.capture();
    REQUIRE(f.packets.size() == 1);
    CHECK(ip_id_of(f.packets[0]) == 0);
    CHECK(f.packets[0].comment.empty());
}

TEST_CASE("link: the set's own hosts send ID 0, so for them a non-zero ID is an ICRC error",
          "[link][icrc]") {
    Rig rig(Ipv4IdPolicy::Recover);
    rig.send_from("127.0.0.1", 0xd21c); // the link's own address: a host of the set
    rig.run();
    CHECK(rig.delivered.empty());
    CHECK(rig.link->counters().icrc_errors == 1);
    CHECK(rig.link->counters().icrc_ipv4_id_recovered == 0);
}

TEST_CASE("link: --icrc-ipv4 id-zero drops a foreign peer's non-zero ID as an ICRC error",
          "[link][icrc]") {
    Rig rig(Ipv4IdPolicy::Zero);
    rig.send_from("127.0.0.2", 0xd21c);
    rig.run();
    CHECK(rig.delivered.empty());
    CHECK(rig.link->counters().icrc_errors == 1);
    CHECK(rig.link->counters().icrc_ipv4_id_recovered == 0);
    auto f = rig.capture();
    REQUIRE(f.packets.size() == 1);
    CHECK(f.packets[0].comment == "rdmaemu: ICRC wrong: dropped by this NIC (counted in "
                                  "icrc_errors); IP ID unknown, shown as 0");
}
