// The link as nicsimd's poll loop drives it (UdpLink::attach, nicsim/daemon/poll_loop.h): no Asio
// handler runs it; the loop watches fd(), calls receive() when the socket is readable, and
// end_turn() after each turn, which sends the turn's burst and delivers the packets a host sent
// itself. turn_pending() says a turn still has to end, which no descriptor would announce: the
// loop must not sleep on it.
#include "net/roce_port.h"
#include "net/udp_link.h"

#include <catch2/catch.hpp>
#include <spdlog/logger.h>
#include <spdlog/sinks/null_sink.h>

#include <arpa/inet.h>
#include <cstring>
#include <memory>
#include <poll.h>
#include <sys/socket.h>
#include <vector>

using emu::wire::IpAddress;
using nicsim::UdpLink;

namespace {

const IpAddress kHostA = *IpAddress::parse("127.0.0.1");
const IpAddress kHostB = *IpAddress::parse("127.0.0.2");

bool readable(int fd, int timeout_ms) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, timeout_ms) == 1;
}

// An RC SEND Only to QP 0x11 with PSN `psn`, 8 bytes of payload and room for the ICRC.
std::vector<uint8_t> packet(uint8_t psn) {
    std::vector<uint8_t> p = {0x04, 0, 0xff, 0xff, 0, 0, 0, 0x11, 0x80, 0, 0, psn};
    for (int i = 0; i < 8; ++i)
        p.push_back(uint8_t(0xa0 + i));
    p.insert(p.end(), 4, 0);
    return p;
}

// Two hosts of a set, A on 127.0.0.1 and B on 127.0.0.2, on one port of the kernel's choosing,
// each link attached; what each hands up is kept.
struct Pair {
    boost::asio::io_context io;
    spdlog::logger log{"link_attached", std::make_shared<spdlog::sinks::null_sink_mt>()};
    uint16_t port = 0;
    std::unique_ptr<UdpLink> a, b;
    std::vector<std::vector<uint8_t>> got_a, got_b;
    std::function<void()> on_a_packet; // run after A hands a packet up

    Pair() {
        nicsim::UniqueFd sock_a = nicsim::bind_roce_port(kHostA, 0);
        sockaddr_storage sa{};
        socklen_t len = sizeof sa;
        REQUIRE(::getsockname(sock_a.get(), reinterpret_cast<sockaddr*>(&sa), &len) == 0);
        port = emu::wire::from_sockaddr(reinterpret_cast<sockaddr*>(&sa), len)->port;
        nicsim::UniqueFd sock_b = nicsim::bind_roce_port(kHostB, port);
        a = std::make_unique<UdpLink>(io, std::move(sock_a), kHostA, port, nicsim::FaultConfig{},
                                      nicsim::PcapWriter{}, log,
                                      std::vector<IpAddress>{kHostA, kHostB});
        b = std::make_unique<UdpLink>(io, std::move(sock_b), kHostB, port, nicsim::FaultConfig{},
                                      nicsim::PcapWriter{}, log,
                                      std::vector<IpAddress>{kHostA, kHostB});
        a->attach([this](const emu::wire::IpEndpoint&, uint8_t* data, size_t n, const uint8_t*,
                         const nicsim::IpFields&) {
            got_a.emplace_back(data, data + n);
            if (on_a_packet) on_a_packet();
        });
        b->attach([this](const emu::wire::IpEndpoint&, uint8_t* data, size_t n, const uint8_t*,
                         const nicsim::IpFields&) { got_b.emplace_back(data, data + n); });
    }
    void send(UdpLink& from, const IpAddress& to, uint8_t psn) {
        auto p = packet(psn);
        from.send(to, p.data(), p.size(), 0);
    }
};

// The payload of what was handed up (BTH .. before the ICRC).
std::vector<uint8_t> body(const std::vector<uint8_t>& p) {
    return {p.begin(), p.end() - 4};
}

} // namespace

TEST_CASE("an attached link sends a turn's packets at end_turn, and receives when the caller "
          "calls receive",
          "[link]") {
    Pair pair;
    pair.send(*pair.a, kHostB, 1);
    pair.send(*pair.a, kHostB, 2);
    CHECK(pair.a->turn_pending());
    // Nothing left for Asio: the caller ends the turn.
    CHECK(pair.io.poll() == 0);
    CHECK_FALSE(readable(pair.b->fd(), 50));

    CHECK_FALSE(pair.a->end_turn()); // nothing more to do after it
    CHECK_FALSE(pair.a->turn_pending());
    REQUIRE(readable(pair.b->fd(), 1000));
    CHECK(pair.got_b.empty()); // not until B receives
    // Both in one UDP GSO datagram, or one each: receive() counts datagrams.
    size_t datagrams = 0;
    for (int i = 0; i < 100 && pair.got_b.size() < 2; ++i)
        if (readable(pair.b->fd(), 10)) datagrams += pair.b->receive();
    CHECK((datagrams == 1 || datagrams == 2));
    REQUIRE(pair.got_b.size() == 2);
    CHECK(body(pair.got_b[0]) == body(packet(1)));
    CHECK(body(pair.got_b[1]) == body(packet(2)));
    CHECK(pair.b->receive() == 0); // the socket is empty
    CHECK(pair.io.poll() == 0);
}

TEST_CASE("an attached link delivers what a host sent itself when the turn ends, and a turn "
          "whose delivery sent more says so",
          "[link]") {
    Pair pair;
    // A host answering its own packets (both QPs on one host): each answer is one more turn.
    pair.on_a_packet = [&] {
        if (pair.got_a.size() < 3) pair.send(*pair.a, kHostA, uint8_t(10 + pair.got_a.size()));
    };
    pair.send(*pair.a, kHostA, 10);
    CHECK(pair.a->turn_pending());
    CHECK(pair.got_a.empty());
    // Never through the socket: nothing to wake a loop that sleeps on fd().
    CHECK_FALSE(readable(pair.a->fd(), 50));

    CHECK(pair.a->end_turn()); // delivered packet 10, whose answer waits for the next turn
    CHECK(pair.a->turn_pending());
    CHECK(pair.got_a.size() == 1);
    CHECK(pair.a->end_turn());
    CHECK_FALSE(pair.a->end_turn()); // the third delivery sent nothing
    CHECK_FALSE(pair.a->turn_pending());
    REQUIRE(pair.got_a.size() == 3);
    for (uint8_t i = 0; i < 3; ++i)
        CHECK(body(pair.got_a[i]) == body(packet(uint8_t(10 + i))));
    CHECK(pair.io.poll() == 0);
}
