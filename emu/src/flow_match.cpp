#include "emu/flow_match.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>

namespace emu::flow {

namespace {

constexpr size_t kEthHeader = 14;
constexpr size_t kVlanTag = 4;
constexpr size_t kIpv4MinHeader = 20;
constexpr size_t kIpv6Header = 40;

uint16_t load16(const uint8_t* p) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v; // stays in network order
}

void parse_l4(const uint8_t* p, size_t len, Frame& out) {
    if ((out.proto != kProtoTcp && out.proto != kProtoUdp) || len < 4) return;
    out.ports.src_port = load16(p);
    out.ports.dst_port = load16(p + 2);
    out.has_ports = true;
}

void parse_ipv4(const uint8_t* p, size_t len, Frame& out) {
    if (len < kIpv4MinHeader || (p[0] >> 4) != 4) return;
    size_t ihl = size_t(p[0] & 0xf) * 4;
    if (ihl < kIpv4MinHeader || ihl > len) return;
    out.l3 = Frame::L3::Ipv4;
    std::memcpy(&out.ipv4.src_ip, p + 12, 4);
    std::memcpy(&out.ipv4.dst_ip, p + 16, 4);
    out.ipv4.proto = p[9];
    out.ipv4.tos = p[1];
    out.ipv4.ttl = p[8];
    uint8_t frag_bits = p[6] >> 5; // reserved, DF, MF
    out.ipv4.flags = static_cast<uint8_t>(((frag_bits & 0x2) ? kIpv4DontFragment : 0) |
                                          ((frag_bits & 0x1) ? kIpv4MoreFragments : 0));
    out.proto = p[9];
    uint16_t frag = ntohs(load16(p + 6));
    bool fragment = (frag & 0x1fff) != 0 || (frag & 0x2000) != 0;
    if (!fragment) parse_l4(p + ihl, len - ihl, out);
}

void parse_ipv6(const uint8_t* p, size_t len, Frame& out) {
    if (len < kIpv6Header || (p[0] >> 4) != 6) return;
    out.l3 = Frame::L3::Ipv6;
    uint32_t first; // version, traffic class, flow label
    std::memcpy(&first, p, 4);
    first = ntohl(first);
    out.ipv6.traffic_class = static_cast<uint8_t>(first >> 20);
    out.ipv6.flow_label = htonl(first & 0xfffff);
    out.ipv6.next_hdr = p[6];
    out.ipv6.hop_limit = p[7];
    std::memcpy(out.ipv6.src_ip, p + 8, 16);
    std::memcpy(out.ipv6.dst_ip, p + 24, 16);
    out.proto = p[6];
    parse_l4(p + kIpv6Header, len - kIpv6Header, out);
}

// (a & m) == (b & m) over n bytes.
bool masked_equal(const void* a, const void* b, const void* m, size_t n) {
    auto* x = static_cast<const uint8_t*>(a);
    auto* y = static_cast<const uint8_t*>(b);
    auto* k = static_cast<const uint8_t*>(m);
    for (size_t i = 0; i < n; ++i)
        if ((x[i] & k[i]) != (y[i] & k[i])) return false;
    return true;
}

// Copies the value and mask of a spec whose layout is {type, size, val, mask}.
template <typename Spec, typename Filter>
int take(const uint8_t* p, uint16_t size, Filter& val, Filter& mask) {
    if (size < sizeof(Spec)) return EINVAL;
    Spec s;
    std::memcpy(&s, p, sizeof s);
    val = s.val;
    mask = s.mask;
    return 0;
}

bool set_l3(Rule& r, Frame::L3 l3) {
    if (r.l3 != Frame::L3::None) return false; // a second network layer
    r.l3 = l3;
    return true;
}

} // namespace

bool parse_frame(const uint8_t* data, size_t len, Frame& out) {
    out = Frame{};
    if (!data || len < kEthHeader) return false;
    std::memcpy(out.eth.dst_mac, data, 6);
    std::memcpy(out.eth.src_mac, data + 6, 6);
    size_t at = 12;
    uint16_t type = load16(data + at);
    if (ntohs(type) == kEtherTypeVlan && len >= kEthHeader + kVlanTag) {
        out.eth.vlan_tag = load16(data + at + 2);
        at += kVlanTag;
        type = load16(data + at);
    }
    out.eth.ether_type = type;
    at += 2;
    if (ntohs(type) == kEtherTypeIpv4)
        parse_ipv4(data + at, len - at, out);
    else if (ntohs(type) == kEtherTypeIpv6)
        parse_ipv6(data + at, len - at, out);
    return true;
}

int parse_specs(const uint8_t* specs, size_t len, uint32_t num_specs, Rule& out) {
    out = Rule{};
    size_t at = 0;
    bool have_ports = false;
    for (uint32_t i = 0; i < num_specs; ++i) {
        struct {
            uint32_t type;
            uint16_t size;
        } hdr;
        if (len - at < 8) return EINVAL; // the header, padded: type (4), size (2), 2 more
        std::memcpy(&hdr.type, specs + at, 4);
        std::memcpy(&hdr.size, specs + at + 4, 2);
        if (hdr.size < 8 || hdr.size > len - at) return EINVAL;
        const uint8_t* p = specs + at;
        if (hdr.type & IBV_FLOW_SPEC_INNER) return EOPNOTSUPP; // tunnels: not steered by
        int err = 0;
        switch (hdr.type) {
        case IBV_FLOW_SPEC_ETH:
            if (out.eth) return EINVAL;
            out.eth = true;
            err = take<ibv_flow_spec_eth>(p, hdr.size, out.eth_val, out.eth_mask);
            break;
        case IBV_FLOW_SPEC_IPV4: {
            if (!set_l3(out, Frame::L3::Ipv4)) return EINVAL;
            ibv_flow_ipv4_filter val{}, mask{};
            err = take<ibv_flow_spec_ipv4>(p, hdr.size, val, mask);
            out.ipv4_val.src_ip = val.src_ip;
            out.ipv4_val.dst_ip = val.dst_ip;
            out.ipv4_mask.src_ip = mask.src_ip;
            out.ipv4_mask.dst_ip = mask.dst_ip;
            break;
        }
        case IBV_FLOW_SPEC_IPV4_EXT:
            if (!set_l3(out, Frame::L3::Ipv4)) return EINVAL;
            err = take<ibv_flow_spec_ipv4_ext>(p, hdr.size, out.ipv4_val, out.ipv4_mask);
            break;
        case IBV_FLOW_SPEC_IPV6:
            if (!set_l3(out, Frame::L3::Ipv6)) return EINVAL;
            err = take<ibv_flow_spec_ipv6>(p, hdr.size, out.ipv6_val, out.ipv6_mask);
            break;
        case IBV_FLOW_SPEC_TCP:
        case IBV_FLOW_SPEC_UDP:
            if (have_ports) return EINVAL;
            have_ports = true;
            out.l4 = hdr.type == IBV_FLOW_SPEC_TCP ? kProtoTcp : kProtoUdp;
            err = take<ibv_flow_spec_tcp_udp>(p, hdr.size, out.ports_val, out.ports_mask);
            break;
        case IBV_FLOW_SPEC_ESP:
        case IBV_FLOW_SPEC_VXLAN_TUNNEL:
        case IBV_FLOW_SPEC_GRE:
        case IBV_FLOW_SPEC_MPLS:
        case IBV_FLOW_SPEC_ACTION_TAG:
        case IBV_FLOW_SPEC_ACTION_DROP:
        case IBV_FLOW_SPEC_ACTION_HANDLE:
        case IBV_FLOW_SPEC_ACTION_COUNT:
            return EOPNOTSUPP;
        default:
            return EINVAL;
        }
        if (err) return err;
        at += hdr.size;
    }
    if (at != len) return EINVAL; // bytes beyond the announced specs
    // The layers must agree: an Ethernet type that is not the network layer's, or a transport
    // the network layer's protocol field rules out, could never match.
    auto eth_type = [&](uint16_t t) {
        return !out.eth || (out.eth_val.ether_type & out.eth_mask.ether_type) ==
                               (htons(t) & out.eth_mask.ether_type);
    };
    if (out.l3 == Frame::L3::Ipv4 && !eth_type(kEtherTypeIpv4)) return EINVAL;
    if (out.l3 == Frame::L3::Ipv6 && !eth_type(kEtherTypeIpv6)) return EINVAL;
    if (out.l4) {
        uint8_t m = out.l3 == Frame::L3::Ipv4   ? out.ipv4_mask.proto
                    : out.l3 == Frame::L3::Ipv6 ? out.ipv6_mask.next_hdr
                                                : 0;
        uint8_t v = out.l3 == Frame::L3::Ipv4 ? out.ipv4_val.proto : out.ipv6_val.next_hdr;
        if ((v & m) != (out.l4 & m)) return EINVAL;
    }
    return 0;
}

bool matches(const Rule& r, const Frame& f) {
    if (r.eth && !masked_equal(&r.eth_val, &f.eth, &r.eth_mask, sizeof f.eth)) return false;
    if (r.l3 != Frame::L3::None) {
        if (f.l3 != r.l3) return false;
        if (r.l3 == Frame::L3::Ipv4 &&
            !masked_equal(&r.ipv4_val, &f.ipv4, &r.ipv4_mask, sizeof f.ipv4))
            return false;
        if (r.l3 == Frame::L3::Ipv6) {
            // Field by field: the filter struct has padding after hop_limit.
            const ibv_flow_ipv6_filter &v = r.ipv6_val, &m = r.ipv6_mask, &x = f.ipv6;
            if (!masked_equal(v.src_ip, x.src_ip, m.src_ip, 16) ||
                !masked_equal(v.dst_ip, x.dst_ip, m.dst_ip, 16) ||
                ((v.flow_label ^ x.flow_label) & m.flow_label) ||
                ((v.next_hdr ^ x.next_hdr) & m.next_hdr) ||
                ((v.traffic_class ^ x.traffic_class) & m.traffic_class) ||
                ((v.hop_limit ^ x.hop_limit) & m.hop_limit))
                return false;
        }
    }
    if (r.l4) {
        if (!f.has_ports || f.proto != r.l4) return false;
        if (!masked_equal(&r.ports_val, &f.ports, &r.ports_mask, sizeof f.ports)) return false;
    }
    return true;
}

uint32_t toeplitz(const uint8_t* key, size_t key_len, const uint8_t* input, size_t len) {
    uint32_t result = 0;
    for (size_t i = 0; i < len; ++i) {
        for (int b = 7; b >= 0; --b) {
            if (!(input[i] & (1u << b))) continue;
            size_t bit = i * 8 + size_t(7 - b); // position of this input bit
            // The 32 key bits starting at `bit` (key bits past the end read as 0).
            uint32_t window = 0;
            for (size_t k = 0; k < 32; ++k) {
                size_t kb = bit + k;
                size_t byte = kb / 8;
                uint32_t v = byte < key_len ? (key[byte] >> (7 - kb % 8)) & 1u : 0u;
                window = (window << 1) | v;
            }
            result ^= window;
        }
    }
    return result;
}

uint32_t rss_hash(const uint8_t* key, size_t key_len, uint64_t fields, const Frame& f) {
    uint8_t input[36];
    size_t n = 0;
    auto add = [&](const void* p, size_t len) {
        std::memcpy(input + n, p, len);
        n += len;
    };
    if (f.l3 == Frame::L3::Ipv4) {
        if (fields & IBV_RX_HASH_SRC_IPV4) add(&f.ipv4.src_ip, 4);
        if (fields & IBV_RX_HASH_DST_IPV4) add(&f.ipv4.dst_ip, 4);
    } else if (f.l3 == Frame::L3::Ipv6) {
        if (fields & IBV_RX_HASH_SRC_IPV6) add(f.ipv6.src_ip, 16);
        if (fields & IBV_RX_HASH_DST_IPV6) add(f.ipv6.dst_ip, 16);
    }
    if (f.has_ports) {
        bool tcp = f.proto == kProtoTcp;
        uint64_t src = tcp ? IBV_RX_HASH_SRC_PORT_TCP : IBV_RX_HASH_SRC_PORT_UDP;
        uint64_t dst = tcp ? IBV_RX_HASH_DST_PORT_TCP : IBV_RX_HASH_DST_PORT_UDP;
        if (fields & src) add(&f.ports.src_port, 2);
        if (fields & dst) add(&f.ports.dst_port, 2);
    }
    return toeplitz(key, key_len, input, n);
}

} // namespace emu::flow
