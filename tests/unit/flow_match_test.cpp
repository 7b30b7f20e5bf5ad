// Flow steering rules (emu/flow_match.h): frames parsed into their fields, specs checked as the
// kernel does, the masked match, and the Toeplitz hash against Microsoft's RSS verification
// values.
#include "emu/flow_match.h"

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <vector>

using namespace emu::flow;

namespace {

const uint8_t kDstMac[6] = {0x01, 0x50, 0x56, 0x19, 0x20, 0xa7};
const uint8_t kSrcMac[6] = {0x24, 0x8a, 0x07, 0xa5, 0x28, 0xc8};

void put16(std::vector<uint8_t>& v, uint16_t x) {
    v.push_back(static_cast<uint8_t>(x >> 8));
    v.push_back(static_cast<uint8_t>(x));
}

void put_ipv4(std::vector<uint8_t>& v, const char* addr) {
    in_addr a{};
    ::inet_pton(AF_INET, addr, &a);
    const auto* b = reinterpret_cast<const uint8_t*>(&a.s_addr);
    v.insert(v.end(), b, b + 4);
}

// Ethernet [VLAN] IPv4 UDP/TCP, as the suite's gen_packet builds them.
std::vector<uint8_t> ipv4_frame(uint8_t proto = kProtoUdp, bool vlan = false,
                                const char* src = "1.1.1.1", uint16_t sport = 1234,
                                uint16_t dport = 5678) {
    std::vector<uint8_t> f(kDstMac, kDstMac + 6);
    f.insert(f.end(), kSrcMac, kSrcMac + 6);
    if (vlan) {
        put16(f, kEtherTypeVlan);
        put16(f, 0xbc0c); // prio 5, CFI 1, id 0xc0c
    }
    put16(f, kEtherTypeIpv4);
    f.push_back(0x45);
    f.push_back(0x10); // TOS
    put16(f, 20 + 8 + 4);
    put16(f, 0);
    put16(f, 0x4000); // DF
    f.push_back(64);
    f.push_back(proto);
    put16(f, 0);
    put_ipv4(f, src);
    put_ipv4(f, "2.2.2.2");
    put16(f, sport);
    put16(f, dport);
    put16(f, 12);
    put16(f, 0);
    f.insert(f.end(), 4, 'a');
    return f;
}

std::vector<uint8_t> ipv6_frame(uint8_t next_hdr) {
    std::vector<uint8_t> f(kDstMac, kDstMac + 6);
    f.insert(f.end(), kSrcMac, kSrcMac + 6);
    put16(f, kEtherTypeIpv6);
    put16(f, 0x6123); // version 6, traffic class 0x12, flow label 0x3abcd
    put16(f, 0xabcd);
    put16(f, 20);
    f.push_back(next_hdr);
    f.push_back(64);
    for (int i = 0; i < 16; ++i)
        f.push_back(static_cast<uint8_t>(0xa0 + i));
    for (int i = 0; i < 16; ++i)
        f.push_back(static_cast<uint8_t>(0xb0 + i));
    put16(f, 1234);
    put16(f, 5678);
    f.insert(f.end(), 16, 0);
    return f;
}

// Specs laid out one after another, as after an ibv_flow_attr.
struct Specs {
    std::vector<uint8_t> bytes;
    uint32_t count = 0;
    template <typename S> Specs& add(const S& s) {
        const auto* p = reinterpret_cast<const uint8_t*>(&s);
        bytes.insert(bytes.end(), p, p + s.size);
        ++count;
        return *this;
    }
    int parse(Rule& r) const { return parse_specs(bytes.data(), bytes.size(), count, r); }
};

ibv_flow_spec_eth eth_spec(uint16_t ether_type = kEtherTypeIpv4) {
    ibv_flow_spec_eth s{};
    s.type = IBV_FLOW_SPEC_ETH;
    s.size = sizeof s;
    std::memcpy(s.val.dst_mac, kDstMac, 6);
    std::memset(s.mask.dst_mac, 0xff, 6);
    s.val.ether_type = htons(ether_type);
    s.mask.ether_type = 0xffff;
    return s;
}

ibv_flow_spec_ipv4_ext ipv4_spec(const char* src, uint8_t proto = kProtoUdp) {
    ibv_flow_spec_ipv4_ext s{};
    s.type = IBV_FLOW_SPEC_IPV4_EXT;
    s.size = sizeof s;
    ::inet_pton(AF_INET, src, &s.val.src_ip);
    s.mask.src_ip = 0xffffffff;
    s.val.proto = proto;
    s.mask.proto = 0xff;
    return s;
}

ibv_flow_spec_tcp_udp ports_spec(ibv_flow_spec_type type, uint16_t dport) {
    ibv_flow_spec_tcp_udp s{};
    s.type = type;
    s.size = sizeof s;
    s.val.dst_port = htons(dport);
    s.mask.dst_port = 0xffff;
    return s;
}

bool match(const Specs& specs, const std::vector<uint8_t>& frame) {
    Rule r;
    REQUIRE(specs.parse(r) == 0);
    Frame f;
    REQUIRE(parse_frame(frame.data(), frame.size(), f));
    return matches(r, f);
}

} // namespace

TEST_CASE("flow: a frame's Ethernet, IPv4 and UDP fields", "[flow]") {
    auto bytes = ipv4_frame(kProtoUdp, true);
    Frame f;
    REQUIRE(parse_frame(bytes.data(), bytes.size(), f));
    CHECK(std::memcmp(f.eth.dst_mac, kDstMac, 6) == 0);
    CHECK(std::memcmp(f.eth.src_mac, kSrcMac, 6) == 0);
    CHECK(f.eth.vlan_tag == htons(0xbc0c));
    CHECK(f.eth.ether_type == htons(kEtherTypeIpv4)); // the type after the tag
    REQUIRE(f.l3 == Frame::L3::Ipv4);
    CHECK(f.ipv4.proto == kProtoUdp);
    CHECK(f.ipv4.tos == 0x10);
    CHECK(f.ipv4.ttl == 64);
    CHECK(f.ipv4.flags == kIpv4DontFragment);
    REQUIRE(f.has_ports);
    CHECK(f.ports.src_port == htons(1234));
    CHECK(f.ports.dst_port == htons(5678));
}

TEST_CASE("flow: IPv6 fields and truncated frames", "[flow]") {
    auto bytes = ipv6_frame(kProtoTcp);
    Frame f;
    REQUIRE(parse_frame(bytes.data(), bytes.size(), f));
    REQUIRE(f.l3 == Frame::L3::Ipv6);
    CHECK(f.ipv6.traffic_class == 0x12);
    CHECK(f.ipv6.flow_label == htonl(0x3abcd));
    CHECK(f.ipv6.next_hdr == kProtoTcp);
    CHECK(f.ipv6.src_ip[0] == 0xa0);
    CHECK(f.ipv6.dst_ip[15] == 0xbf);
    CHECK(f.has_ports);

    CHECK_FALSE(parse_frame(bytes.data(), 13, f));  // not even an Ethernet header
    REQUIRE(parse_frame(bytes.data(), 14 + 39, f)); // IPv6 header cut short
    CHECK(f.l3 == Frame::L3::None);
    CHECK_FALSE(f.has_ports);
}

TEST_CASE("flow: the layers a rule names must all match, under their masks", "[flow]") {
    auto udp = ipv4_frame(kProtoUdp);
    auto tcp = ipv4_frame(kProtoTcp);
    CHECK(match(Specs{}.add(eth_spec()), udp));
    CHECK(match(Specs{}, udp)); // no specs: every frame

    auto other_mac = eth_spec();
    other_mac.val.dst_mac[5] ^= 1;
    CHECK_FALSE(match(Specs{}.add(other_mac), udp));
    other_mac.mask.dst_mac[5] = 0xfe; // the differing bit is masked out
    CHECK(match(Specs{}.add(other_mac), udp));

    CHECK(match(Specs{}.add(ipv4_spec("1.1.1.1")), udp));
    CHECK_FALSE(match(Specs{}.add(ipv4_spec("1.1.1.2")), udp));
    CHECK_FALSE(match(Specs{}.add(ipv4_spec("1.1.1.1")), ipv6_frame(kProtoUdp)));

    Specs l4;
    l4.add(eth_spec()).add(ipv4_spec("1.1.1.1")).add(ports_spec(IBV_FLOW_SPEC_UDP, 5678));
    CHECK(match(l4, udp));
    CHECK_FALSE(match(Specs{}.add(ports_spec(IBV_FLOW_SPEC_UDP, 5678)), tcp));
    CHECK(match(Specs{}.add(ports_spec(IBV_FLOW_SPEC_TCP, 5678)), tcp));
    CHECK_FALSE(match(Specs{}.add(ports_spec(IBV_FLOW_SPEC_UDP, 5679)), udp));

    ibv_flow_spec_ipv6 v6{};
    v6.type = IBV_FLOW_SPEC_IPV6;
    v6.size = sizeof v6;
    v6.val.next_hdr = kProtoTcp;
    v6.mask.next_hdr = 0xff;
    v6.val.src_ip[0] = 0xa0;
    v6.mask.src_ip[0] = 0xff;
    CHECK(match(Specs{}.add(eth_spec(kEtherTypeIpv6)).add(v6), ipv6_frame(kProtoTcp)));
    CHECK_FALSE(match(Specs{}.add(v6), ipv6_frame(kProtoUdp)));
}

TEST_CASE("flow: malformed specs are EINVAL, unsupported types EOPNOTSUPP", "[flow]") {
    Rule r;
    auto eth = eth_spec();
    Specs two_eth;
    two_eth.add(eth).add(eth);
    CHECK(two_eth.parse(r) == EINVAL); // a layer twice

    Specs one;
    one.add(eth);
    CHECK(parse_specs(one.bytes.data(), one.bytes.size(), 2, r) == EINVAL);     // fewer than said
    CHECK(parse_specs(one.bytes.data(), one.bytes.size() + 0, 0, r) == EINVAL); // bytes left over

    auto small = eth;
    small.size = 8;
    CHECK(Specs{}.add(small).parse(r) == EINVAL); // too small for its struct
    auto huge = eth;
    huge.size = 200;
    Specs past;
    past.bytes.assign(reinterpret_cast<uint8_t*>(&huge),
                      reinterpret_cast<uint8_t*>(&huge) + sizeof huge);
    past.count = 1;
    CHECK(past.parse(r) == EINVAL); // runs past the end

    CHECK(Specs{}.add(eth_spec(kEtherTypeIpv6)).add(ipv4_spec("1.1.1.1")).parse(r) == EINVAL);
    CHECK(Specs{}
              .add(ipv4_spec("1.1.1.1", kProtoTcp))
              .add(ports_spec(IBV_FLOW_SPEC_UDP, 1))
              .parse(r) == EINVAL); // UDP ports under a TCP-only IPv4 rule

    ibv_flow_spec_tunnel vxlan{};
    vxlan.type = IBV_FLOW_SPEC_VXLAN_TUNNEL;
    vxlan.size = sizeof vxlan;
    CHECK(Specs{}.add(vxlan).parse(r) == EOPNOTSUPP);
    auto inner = eth;
    inner.type = static_cast<ibv_flow_spec_type>(IBV_FLOW_SPEC_ETH | IBV_FLOW_SPEC_INNER);
    CHECK(Specs{}.add(inner).parse(r) == EOPNOTSUPP);
    ibv_flow_spec_action_drop drop{};
    drop.type = IBV_FLOW_SPEC_ACTION_DROP;
    drop.size = sizeof drop;
    CHECK(Specs{}.add(drop).parse(r) == EOPNOTSUPP);
    auto unknown = eth;
    unknown.type = static_cast<ibv_flow_spec_type>(0x77);
    CHECK(Specs{}.add(unknown).parse(r) == EINVAL);
}

TEST_CASE("flow: Toeplitz hash matches the RSS verification suite", "[flow][rss]") {
    const uint8_t key[40] = {0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67,
                             0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb,
                             0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
                             0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa};
    struct Case {
        const char *src, *dst;
        uint16_t sport, dport;
        uint32_t ipv4, ipv4_tcp;
    };
    const Case cases[] = {
        {"66.9.149.187", "161.142.100.80", 2794, 1766, 0x323e8fc2, 0x51ccc178},
        {"199.92.111.2", "65.69.140.83", 14230, 4739, 0xd718262a, 0xc626b0ea},
    };
    for (const Case& c : cases) {
        std::vector<uint8_t> in;
        put_ipv4(in, c.src);
        put_ipv4(in, c.dst);
        CHECK(toeplitz(key, sizeof key, in.data(), in.size()) == c.ipv4);
        put16(in, c.sport);
        put16(in, c.dport);
        CHECK(toeplitz(key, sizeof key, in.data(), in.size()) == c.ipv4_tcp);

        // The same through a frame and the ibv_rx_hash_fields that select those fields.
        auto frame = ipv4_frame(kProtoTcp, false, c.src, c.sport, c.dport);
        std::memcpy(&frame[14 + 16], in.data() + 4, 4); // the destination address
        Frame f;
        REQUIRE(parse_frame(frame.data(), frame.size(), f));
        CHECK(rss_hash(key, sizeof key, IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4, f) == c.ipv4);
        CHECK(rss_hash(key, sizeof key,
                       IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 | IBV_RX_HASH_SRC_PORT_TCP |
                           IBV_RX_HASH_DST_PORT_TCP,
                       f) == c.ipv4_tcp);
        // UDP port fields do not apply to a TCP frame.
        CHECK(rss_hash(key, sizeof key,
                       IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 | IBV_RX_HASH_SRC_PORT_UDP,
                       f) == c.ipv4);
    }
}
