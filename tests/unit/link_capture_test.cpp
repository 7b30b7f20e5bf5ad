// The link's capture as a reader sees it while the link still runs: what one turn of the event
// loop sent or received is in the file when the turn ends (no close, no full buffer needed), and
// what the fault injector did to a packet travels with it as a pcapng comment. The link talks to
// itself: one socket on 127.0.0.1 (or ::1, an IPv6 host) and a port of the kernel's choosing,
// so the sent packets are captured first, then the same packets received.
#include "net/roce_port.h"
#include "net/udp_link.h"

#include "pcapng_read.h"
#include "temp_dir.h"

#include "emu/wire/icrc.h"

#include <catch2/catch.hpp>
#include <spdlog/logger.h>
#include <spdlog/sinks/null_sink.h>

#include <arpa/inet.h>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <sys/socket.h>
#include <vector>

using nicsim::FaultConfig;
using nicsim::PcapWriter;
using nicsim::UdpLink;
using nicsim::UniqueFd;

namespace {

using emu::wire::IpAddress;

const IpAddress kLoopback4 = IpAddress::from_ipv4(htonl(INADDR_LOOPBACK));
const IpAddress kLoopback6 = *IpAddress::parse("::1");

// A UDP socket on `local` (127.0.0.1 or ::1), port chosen by the kernel: as nicsimd binds its
// address (net/roce_port.h).
UniqueFd loopback_socket(const IpAddress& local, uint16_t* port) {
    UniqueFd fd = nicsim::bind_roce_port(local, 0);
    sockaddr_storage sa{};
    socklen_t len = sizeof sa;
    REQUIRE(::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&sa), &len) == 0);
    *port = emu::wire::from_sockaddr(reinterpret_cast<sockaddr*>(&sa), len)->port;
    return fd;
}

// A link on 127.0.0.1 (or `local`) with `faults`, capturing to a file in a private temp dir; it
// hears what it sends.
struct Rig {
    TempDir dir{"link_capture"};
    std::string path = dir / "host.pcap";
    boost::asio::io_context io;
    spdlog::logger log{"link_test", std::make_shared<spdlog::sinks::null_sink_mt>()};
    uint16_t port = 0;
    std::unique_ptr<UdpLink> link;
    std::vector<std::vector<uint8_t>> delivered; // what the link handed up, ICRC good
    std::vector<emu::wire::IpEndpoint> senders;  // and where each came from
    IpAddress local;

    explicit Rig(const FaultConfig& faults, const IpAddress& self = kLoopback4) : local(self) {
        UniqueFd sock = loopback_socket(local, &port);
        PcapWriter pcap;
        REQUIRE(pcap.open(path));
        link = std::make_unique<UdpLink>(io, std::move(sock), local, port, faults, std::move(pcap),
                                         log);
        link->start([this](const emu::wire::IpEndpoint& from, uint8_t* data, size_t len,
                           const uint8_t*, const nicsim::IpFields&) {
            delivered.emplace_back(data, data + len);
            senders.push_back(from);
        });
    }
    // Ethernet, IP and UDP before the RoCE packet in a captured frame.
    size_t headers() const { return 14 + (local.is_ipv4() ? 20 : 40) + 8; }

    // An RC SEND Only to QP 0x11 with PSN `psn` and 8 bytes of payload (BTH, payload, room for
    // the ICRC), as the engine builds it.
    static std::vector<uint8_t> packet(uint32_t psn) {
        std::vector<uint8_t> p = {0x04,
                                  0x00,
                                  0xff,
                                  0xff,
                                  0x00,
                                  0x00,
                                  0x00,
                                  0x11,
                                  0x80,
                                  uint8_t(psn >> 16),
                                  uint8_t(psn >> 8),
                                  uint8_t(psn)};
        for (int i = 0; i < 8; ++i)
            p.push_back(uint8_t(0xa0 + i));
        p.insert(p.end(), 4, 0);
        return p;
    }
    // The packet as it leaves with its ICRC, undamaged.
    std::vector<uint8_t> on_the_wire(std::vector<uint8_t> p) const {
        emu::wire::finish_icrc(emu::wire::IpFlow{local, local, port, port}, p.data(), p.size());
        return p;
    }
    void send(std::vector<uint8_t> p, uint8_t tos = 0) {
        link->send(local, p.data(), p.size(), tos);
    }

    // Runs the event loop for `time`: every turn that was ready, and what it made ready.
    void run_for(std::chrono::milliseconds time) {
        io.restart();
        io.run_for(time);
    }
    // Runs the event loop until `n` packets were handed up (or a second passed).
    void run_until_delivered(size_t n) {
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
        while (delivered.size() < n && std::chrono::steady_clock::now() < deadline)
            run_for(std::chrono::milliseconds(5));
    }
    // The file as it is now, the link still open.
    pcapng_read::File capture() const { return pcapng_read::parse_file(path); }
};

// The RoCE packet (UDP payload) of a captured frame: after Ethernet, IPv4 or IPv6, and UDP.
std::vector<uint8_t> roce(const pcapng_read::Packet& p) {
    REQUIRE(p.frame.size() >= 14 + 20 + 8);
    const size_t headers = 14 + (p.frame[12] == 0x86 && p.frame[13] == 0xdd ? 40 : 20) + 8;
    REQUIRE(p.frame.size() >= headers);
    return {p.frame.begin() + static_cast<long>(headers), p.frame.end()};
}

} // namespace

TEST_CASE("link capture: what a turn sent and received is in the file when the turn ends, "
          "the link still open",
          "[pcap][link]") {
    Rig rig(FaultConfig{});
    const auto a = Rig::packet(100), b = Rig::packet(101);
    rig.send(a);
    rig.send(b);
    // The burst has not gone yet; nor has the capture.
    CHECK(rig.capture().packets.empty());
    rig.run_until_delivered(2);
    REQUIRE(rig.delivered.size() == 2);
    rig.run_for(std::chrono::milliseconds(5));
    auto f = rig.capture();
    REQUIRE(f.packets.size() == 4); // two sent, the same two received
    for (size_t i = 0; i < 4; ++i) {
        CHECK(roce(f.packets[i]) == rig.on_the_wire(i % 2 == 0 ? a : b));
        CHECK(f.packets[i].comment.empty());
    }
    // Each later turn reaches the file too.
    rig.send(Rig::packet(102));
    rig.run_until_delivered(3);
    rig.run_for(std::chrono::milliseconds(5));
    CHECK(rig.capture().packets.size() == 6);
}

TEST_CASE("link capture: a dropped packet is captured with the fault injector's comment",
          "[pcap][link][faults]") {
    FaultConfig faults;
    faults.drop = 1;
    Rig rig(faults);
    const auto a = Rig::packet(7);
    rig.send(a);
    rig.run_for(std::chrono::milliseconds(20));
    CHECK(rig.delivered.empty()); // never sent
    CHECK(rig.link->counters().fault_drops == 1);
    auto f = rig.capture();
    REQUIRE(f.packets.size() == 1);
    CHECK(roce(f.packets[0]) == rig.on_the_wire(a));
    CHECK(f.packets[0].comment == "rdmaemu: dropped by the fault injector (--drop): never sent");
}

TEST_CASE("link capture: a duplicate says it is one", "[pcap][link][faults]") {
    FaultConfig faults;
    faults.duplicate = 1;
    Rig rig(faults);
    const auto a = Rig::packet(8);
    rig.send(a);
    rig.run_until_delivered(2);
    REQUIRE(rig.delivered.size() == 2);
    rig.run_for(std::chrono::milliseconds(5));
    auto f = rig.capture();
    REQUIRE(f.packets.size() == 4); // the packet and its duplicate sent, then both received
    for (auto& p : f.packets)
        CHECK(roce(p) == rig.on_the_wire(a));
    CHECK(f.packets[0].comment.empty());
    CHECK(f.packets[1].comment == "rdmaemu: a duplicate made by the fault injector (--duplicate)");
    CHECK(f.packets[2].comment.empty()); // what arrives is a good packet
    CHECK(f.packets[3].comment.empty());
}

TEST_CASE("link capture: a corrupted packet names the flipped bit, and its receiver the ICRC",
          "[pcap][link][faults]") {
    FaultConfig faults;
    faults.corrupt = 1;
    faults.seed = 3;
    Rig rig(faults);
    const auto a = Rig::packet(9);
    const auto good = rig.on_the_wire(a);
    rig.send(a);
    rig.run_for(std::chrono::milliseconds(20));
    auto f = rig.capture();
    REQUIRE(f.packets.size() == 2); // sent, received
    const auto sent = roce(f.packets[0]);
    REQUIRE(sent.size() == good.size());
    // Exactly one bit differs from the packet as it should have gone, the one the comment names.
    size_t byte = 0, bit = 0, flipped = 0;
    for (size_t i = 0; i < good.size(); ++i)
        for (size_t k = 0; k < 8; ++k)
            if (((good[i] ^ sent[i]) >> k) & 1) {
                byte = i;
                bit = k;
                ++flipped;
            }
    REQUIRE(flipped == 1);
    CHECK(f.packets[0].comment == "rdmaemu: corrupted by the fault injector (--corrupt): bit " +
                                      std::to_string(bit) + " of UDP payload byte " +
                                      std::to_string(byte) + " flipped");
    CHECK(roce(f.packets[1]) == sent);
    if (byte == 4) { // BTH byte 4 (FECN, BECN, reserved) is masked out of the ICRC
        CHECK(f.packets[1].comment.empty());
        CHECK(rig.delivered.size() == 1);
    } else {
        CHECK(f.packets[1].comment ==
              "rdmaemu: ICRC wrong: dropped by this NIC (counted in icrc_errors); IP ID unknown, "
              "shown as 0");
        CHECK(rig.delivered.empty());
        CHECK(rig.link->counters().icrc_errors == 1);
    }
}

TEST_CASE("link capture: a reordered packet says it was held back, and until when",
          "[pcap][link][faults]") {
    FaultConfig faults;
    faults.reorder = 1;
    Rig rig(faults);
    const auto a = Rig::packet(20), b = Rig::packet(21), c = Rig::packet(22);
    rig.send(a); // held
    rig.send(b); // goes, then a after it
    rig.send(c); // held; nothing follows, so the timer sends it
    rig.run_until_delivered(3);
    REQUIRE(rig.delivered.size() == 3);
    rig.run_for(std::chrono::milliseconds(5));
    auto f = rig.capture();
    REQUIRE(f.packets.size() == 6);
    CHECK(roce(f.packets[0]) == rig.on_the_wire(b));
    CHECK(f.packets[0].comment.empty());
    CHECK(roce(f.packets[1]) == rig.on_the_wire(a));
    CHECK(f.packets[1].comment ==
          "rdmaemu: held back by the fault injector (--reorder): sent after the next packet");
    // c went out when the reorder timer fired: after the receptions of b and a, or before them.
    size_t at_c = 0;
    for (size_t i = 2; i < f.packets.size(); ++i)
        if (!f.packets[i].comment.empty()) at_c = i;
    REQUIRE(at_c != 0);
    CHECK(roce(f.packets[at_c]) == rig.on_the_wire(c));
    CHECK(f.packets[at_c].comment == "rdmaemu: held back by the fault injector (--reorder): "
                                     "sent 200 us later, no packet followed");
}

TEST_CASE("link capture: a duplicated, corrupted packet says both on its second copy",
          "[pcap][link][faults]") {
    FaultConfig faults;
    faults.duplicate = 1;
    faults.corrupt = 1;
    faults.seed = 3;
    Rig rig(faults);
    rig.send(Rig::packet(30));
    rig.run_for(std::chrono::milliseconds(20));
    auto f = rig.capture();
    REQUIRE(f.packets.size() >= 2);
    const std::string damage = f.packets[0].comment;
    CHECK(damage.rfind("rdmaemu: corrupted by the fault injector (--corrupt): bit ", 0) == 0);
    CHECK(f.packets[1].comment ==
          damage + "; a duplicate made by the fault injector (--duplicate)");
    CHECK(roce(f.packets[1]) == roce(f.packets[0]));
}

namespace {

// Whether this machine has IPv6 on loopback (a container may have it turned off).
bool ipv6_loopback() {
    try {
        uint16_t port = 0;
        loopback_socket(kLoopback6, &port);
        return true;
    } catch (const std::exception& e) {
        WARN("no IPv6 on loopback here (" << e.what() << "): the IPv6 link is not tried");
        return false;
    }
}

} // namespace

TEST_CASE("link capture: an IPv6 host's packets leave and arrive as IPv6, the ICRC checked whole",
          "[pcap][link][ipv6]") {
    if (!ipv6_loopback()) return;
    Rig rig(FaultConfig{}, kLoopback6);
    const auto a = Rig::packet(40), b = Rig::packet(41);
    rig.send(a);
    rig.send(b, 0x28); // a traffic class: its datagram carries it (IPV6_TCLASS)
    rig.run_until_delivered(2);
    REQUIRE(rig.delivered.size() == 2);
    CHECK(rig.delivered[0] == rig.on_the_wire(a));
    CHECK(rig.delivered[1] == rig.on_the_wire(b));
    CHECK(rig.senders[0] == emu::wire::IpEndpoint{kLoopback6, rig.port});
    CHECK(rig.link->counters().icrc_errors == 0);
    rig.run_for(std::chrono::milliseconds(5));
    auto f = rig.capture();
    REQUIRE(f.packets.size() == 4); // two sent, the same two received
    for (size_t i = 0; i < 4; ++i) {
        INFO("packet " << i);
        const std::vector<uint8_t>& frame = f.packets[i].frame;
        REQUIRE(frame.size() == rig.headers() + 12 + 8 + 4);
        CHECK(frame[12] == 0x86); // ethertype IPv6
        CHECK(frame[13] == 0xdd);
        const uint8_t* ip = frame.data() + 14;
        CHECK(ip[0] >> 4 == 6);
        const uint8_t tclass = static_cast<uint8_t>((ip[0] << 4) | (ip[1] >> 4));
        CHECK(tclass == (i % 2 ? 0x28 : 0));           // sent with it, and seen arriving with it
        CHECK((ip[4] << 8 | ip[5]) == 8 + 12 + 8 + 4); // payload length: the UDP datagram
        CHECK(ip[6] == 17);
        CHECK(ip[7] == 64);
        CHECK(std::memcmp(ip + 8, kLoopback6.data(), 16) == 0);
        CHECK(std::memcmp(ip + 24, kLoopback6.data(), 16) == 0);
        CHECK(roce(f.packets[i]) == rig.on_the_wire(i % 2 ? b : a));
        // The ICRC of the IPv6 packet as captured is the one it carries.
        CHECK(emu::wire::icrc_from_ip_packet(ip, frame.size() - 14) ==
              emu::wire::stored_icrc_of_ip_packet(ip, frame.size() - 14));
        CHECK(f.packets[i].comment.empty());
    }
}

TEST_CASE("link capture: an IPv6 packet with a wrong ICRC is dropped, no IP ID to speak of",
          "[pcap][link][ipv6][faults]") {
    if (!ipv6_loopback()) return;
    FaultConfig faults;
    faults.corrupt = 1;
    faults.seed = 3;
    Rig rig(faults, kLoopback6);
    rig.send(Rig::packet(50));
    rig.run_for(std::chrono::milliseconds(20));
    auto f = rig.capture();
    REQUIRE(f.packets.size() == 2);                    // sent, received
    if (roce(f.packets[0])[4] != Rig::packet(50)[4]) { // BTH byte 4 is masked
        CHECK(rig.delivered.size() == 1);
        return;
    }
    CHECK(f.packets[1].comment ==
          "rdmaemu: ICRC wrong: dropped by this NIC (counted in icrc_errors)");
    CHECK(rig.delivered.empty());
    CHECK(rig.link->counters().icrc_errors == 1);
    CHECK(rig.link->counters().icrc_ipv4_id_recovered == 0);
}
