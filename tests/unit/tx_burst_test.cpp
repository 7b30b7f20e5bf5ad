// TxBurst: the packets of a turn leave in one sendmmsg, consecutive equal-sized packets to one
// address as one UDP GSO datagram, and the receiver (UDP_GRO on) gets them back cut exactly at
// the packet boundaries.
#include "net/tx_burst.h"

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <cstring>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

#ifndef UDP_GRO
#define UDP_GRO 104
#endif

using nicsim::TxBurst;

namespace {

using emu::wire::IpAddress;

IpAddress ip(const char* a) {
    return *IpAddress::parse(a);
}

// Queues a packet of `len` bytes whose every byte is `fill`.
void add(TxBurst& b, const IpAddress& dst, size_t len, uint8_t fill, bool alone = false,
         uint8_t tos = 0) {
    uint8_t* p = b.next_slot();
    REQUIRE(p);
    std::memset(p, fill, len);
    b.commit(dst, len, alone, tos);
}

struct Receiver {
    int fd = -1;
    uint16_t port = 0;
    bool bound = false;
    explicit Receiver(const IpAddress& at = ip("127.0.0.1")) {
        fd = ::socket(at.family(), SOCK_DGRAM | SOCK_CLOEXEC, 0);
        sockaddr_storage sa;
        socklen_t len = emu::wire::to_sockaddr({at, 0}, sa);
        if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), len) != 0) return; // no IPv6 here
        bound = true;
        len = sizeof sa;
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
        port = emu::wire::from_sockaddr(reinterpret_cast<sockaddr*>(&sa), len)->port;
        int on = 1;
        REQUIRE(::setsockopt(fd, IPPROTO_UDP, UDP_GRO, &on, sizeof on) == 0);
        if (at.is_ipv4())
            REQUIRE(::setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &on, sizeof on) == 0);
        else
            REQUIRE(::setsockopt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, &on, sizeof on) == 0);
    }
    ~Receiver() { ::close(fd); }
    // One datagram: its bytes, its GRO segment size (0: none given) and its TOS (IPv4) or
    // traffic class (IPv6).
    bool receive(std::vector<uint8_t>& data, int& segment, uint8_t* tos = nullptr) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 1000) != 1) return false;
        data.resize(65536);
        iovec iov{data.data(), data.size()};
        alignas(cmsghdr) char control[2 * CMSG_SPACE(sizeof(int))];
        msghdr h{};
        h.msg_iov = &iov;
        h.msg_iovlen = 1;
        h.msg_control = control;
        h.msg_controllen = sizeof control;
        ssize_t n = ::recvmsg(fd, &h, 0);
        if (n < 0) return false;
        data.resize(static_cast<size_t>(n));
        segment = 0;
        for (cmsghdr* c = CMSG_FIRSTHDR(&h); c; c = CMSG_NXTHDR(&h, c)) {
            if (c->cmsg_level == IPPROTO_UDP && c->cmsg_type == UDP_GRO)
                std::memcpy(&segment, CMSG_DATA(c), sizeof segment);
            if (tos && c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) *tos = *CMSG_DATA(c);
            if (tos && c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS) {
                int tclass = 0;
                std::memcpy(&tclass, CMSG_DATA(c), sizeof tclass);
                *tos = static_cast<uint8_t>(tclass);
            }
        }
        return true;
    }
};

} // namespace

TEST_CASE("TxBurst: a message's packets form one GSO group, cut where size or address changes",
          "[tx_burst]") {
    TxBurst b;
    IpAddress a = ip("127.0.0.1"), c = ip("127.0.0.2");
    add(b, a, 1056, 1); // FIRST (with RETH): a size of its own
    for (int i = 0; i < 60; ++i)
        add(b, a, 1040, 2); // MIDDLE packets
    add(b, a, 500, 3);      // LAST, shorter: still in the group
    add(b, a, 1040, 4);     // after a short one: a new group
    add(b, c, 1040, 5);     // another address
    add(b, c, 28, 6);       // shorter, but the start of a run of its own size:
    add(b, c, 28, 7);       // a group of its own
    std::vector<TxBurst::Group> g;
    b.groups(true, g);
    REQUIRE(g.size() == 5);
    CHECK((g[0].first == 0 && g[0].count == 1 && g[0].segment == 1056));
    CHECK((g[1].first == 1 && g[1].count == 61 && g[1].segment == 1040));
    CHECK((g[2].first == 62 && g[2].count == 1));
    CHECK((g[3].first == 63 && g[3].count == 1 && g[3].dst == c && g[3].segment == 1040));
    CHECK((g[4].first == 64 && g[4].count == 2 && g[4].segment == 28));
    b.groups(false, g);
    CHECK(g.size() == b.size()); // without GSO: one datagram per packet

    SECTION("no group beyond the kernel's segment count or 64 KiB") {
        TxBurst big;
        for (size_t i = 0; i < TxBurst::kMaxSegments + 1; ++i)
            add(big, a, 256, 7);
        big.groups(true, g);
        REQUIRE(g.size() == 2);
        CHECK(g[0].count == TxBurst::kMaxSegments);
        TxBurst wide;
        for (int i = 0; i < 20; ++i)
            add(wide, a, 4224, 8);
        wide.groups(true, g);
        REQUIRE(g.size() == 2);
        CHECK(g[0].count * 4224 <= TxBurst::kMaxGsoBytes);
        CHECK(g[0].count == TxBurst::kMaxGsoBytes / 4224);
    }
}

TEST_CASE("TxBurst: packets to a peer outside the set go one per datagram, GSO or not",
          "[tx_burst]") {
    // Soft-RoCE segments a GSO datagram itself, numbering IP IDs 1.. for the later segments.
    TxBurst b;
    IpAddress set_host = ip("127.0.0.1"), rxe = ip("10.214.0.1");
    for (int i = 0; i < 4; ++i)
        add(b, rxe, 1040, 1, true);
    for (int i = 0; i < 4; ++i)
        add(b, set_host, 1040, 2);
    add(b, set_host, 1040, 3, true); // alone, though it would fit the group before it
    std::vector<TxBurst::Group> g;
    b.groups(true, g);
    REQUIRE(g.size() == 6);
    for (int i = 0; i < 4; ++i)
        CHECK((g[i].first == size_t(i) && g[i].count == 1 && g[i].dst == rxe));
    CHECK((g[4].first == 4 && g[4].count == 4 && g[4].dst == set_host));
    CHECK((g[5].first == 8 && g[5].count == 1));
}

TEST_CASE("TxBurst: a GSO datagram arrives whole and splits exactly into its packets",
          "[tx_burst]") {
    Receiver r;
    int sender = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    REQUIRE(sender >= 0);
    TxBurst b;
    IpAddress a = ip("127.0.0.1");
    for (int i = 0; i < 10; ++i)
        add(b, a, 1040, static_cast<uint8_t>(i));
    add(b, a, 300, 10);
    size_t datagrams = 0;
    bool gso_failed = false;
    REQUIRE(b.send(sender, r.port, true, &datagrams, &gso_failed) == 11);
    CHECK(!gso_failed);
    CHECK(datagrams == 1);
    CHECK(b.empty());
    std::vector<uint8_t> data;
    int segment = 0;
    REQUIRE(r.receive(data, segment));
    REQUIRE(data.size() == 10 * 1040 + 300);
    CHECK(segment == 1040);
    for (size_t k = 0; k < 11; ++k)
        CHECK(data[k * 1040] == k); // each packet's bytes at its own boundary
    CHECK(data.back() == 10);
    ::close(sender);
}

TEST_CASE("TxBurst: a traffic class travels with its packets, and GSO groups never mix two",
          "[tx_burst]") {
    // UCX gives its QPs traffic class 106 (DSCP 26); until 2026-12-06 such packets bypassed the
    // burst, a sendmsg each: ucp_put_bw 64 KiB moved 538 MB/s against 2650 with class 0.
    TxBurst b;
    IpAddress a = ip("127.0.0.1");
    for (int i = 0; i < 4; ++i)
        add(b, a, 1040, 1, false, 106);
    for (int i = 0; i < 2; ++i)
        add(b, a, 1040, 2);
    add(b, a, 1040, 3, false, 106);
    std::vector<TxBurst::Group> g;
    b.groups(true, g);
    REQUIRE(g.size() == 3);
    CHECK((g[0].count == 4 && g[0].tos == 106));
    CHECK((g[1].count == 2 && g[1].tos == 0));
    CHECK((g[2].count == 1 && g[2].tos == 106));

    Receiver r;
    int sender = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    REQUIRE(sender >= 0);
    size_t datagrams = 0;
    bool gso_failed = false;
    REQUIRE(b.send(sender, r.port, true, &datagrams, &gso_failed) == 7);
    CHECK(!gso_failed);
    CHECK(datagrams == 3);
    const struct {
        size_t bytes;
        uint8_t fill, tos;
    } expected[] = {{4 * 1040, 1, 106}, {2 * 1040, 2, 0}, {1040, 3, 106}};
    for (const auto& e : expected) {
        std::vector<uint8_t> data;
        int segment = 0;
        uint8_t tos = 0xff;
        REQUIRE(r.receive(data, segment, &tos));
        CHECK(data.size() == e.bytes);
        CHECK(data.front() == e.fill);
        CHECK(int(tos) == int(e.tos));
    }
    ::close(sender);
}

TEST_CASE(
    "TxBurst: over IPv6 too, a GSO datagram arrives whole, with its traffic class, and splits",
    "[tx_burst][ipv6]") {
    const IpAddress a = ip("::1");
    Receiver r(a);
    if (!r.bound) {
        WARN("no IPv6 on loopback here: the IPv6 burst is not tried");
        return;
    }
    int sender = ::socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    REQUIRE(sender >= 0);
    TxBurst b;
    for (int i = 0; i < 8; ++i)
        add(b, a, 1040, static_cast<uint8_t>(i), false, 106);
    add(b, a, 64, 8, false, 106);
    size_t datagrams = 0;
    bool gso_failed = false;
    REQUIRE(b.send(sender, r.port, true, &datagrams, &gso_failed) == 9);
    CHECK(!gso_failed);
    CHECK(datagrams == 1);
    std::vector<uint8_t> data;
    int segment = 0;
    uint8_t tclass = 0;
    REQUIRE(r.receive(data, segment, &tclass));
    REQUIRE(data.size() == 8 * 1040 + 64);
    CHECK(segment == 1040);
    CHECK(int(tclass) == 106);
    for (size_t k = 0; k < 9; ++k)
        CHECK(data[k * 1040] == k);
    ::close(sender);
}
