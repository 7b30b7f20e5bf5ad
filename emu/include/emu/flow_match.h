// Flow steering for raw packet QPs (ibv_create_flow): the specs an app gives, checked and
// turned into a rule, the fields of an Ethernet frame a rule looks at, and the match. Also the
// Toeplitz hash that spreads frames over an RSS QP's work queues. Pure functions of bytes, no
// NIC state: the NIC's steering table and the unit tests use the same code.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>

namespace emu::flow {

inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr uint16_t kEtherTypeIpv6 = 0x86dd;
inline constexpr uint16_t kEtherTypeVlan = 0x8100;
inline constexpr uint8_t kProtoTcp = 6;
inline constexpr uint8_t kProtoUdp = 17;
// IPv4 flags as ibv_flow_ipv4_ext_filter.flags (and the kernel's enum ib_ipv4_flags) name them.
inline constexpr uint8_t kIpv4DontFragment = 0x2;
inline constexpr uint8_t kIpv4MoreFragments = 0x4;

// The fields of a frame a flow can match. Multi-byte fields in network byte order, as the
// ibv_flow_*_filter structs hold them.
struct Frame {
    ibv_flow_eth_filter eth{}; // vlan_tag: the 802.1Q TCI, 0 when untagged
    enum class L3 : uint8_t { None, Ipv4, Ipv6 } l3 = L3::None;
    ibv_flow_ipv4_ext_filter ipv4{}; // IPv4 only
    ibv_flow_ipv6_filter ipv6{};     // IPv6 only; flow_label in the filter's layout
    uint8_t proto = 0;               // IPv4 protocol or IPv6 next header
    bool has_ports = false;          // a TCP or UDP header follows (unfragmented)
    ibv_flow_tcp_udp_filter ports{};
};

// Reads the Ethernet header (with at most one 802.1Q tag), IPv4 or IPv6, and TCP or UDP ports
// from `len` bytes. False when the frame is shorter than an Ethernet header; layers that are
// truncated or absent are left out (L3::None, has_ports false).
bool parse_frame(const uint8_t* data, size_t len, Frame& out);

// What a flow asks of a frame: the layers its specs named, each with value and mask.
struct Rule {
    bool eth = false;
    ibv_flow_eth_filter eth_val{}, eth_mask{};
    Frame::L3 l3 = Frame::L3::None; // None: any (or no) network layer
    ibv_flow_ipv4_ext_filter ipv4_val{}, ipv4_mask{};
    ibv_flow_ipv6_filter ipv6_val{}, ipv6_mask{};
    uint8_t l4 = 0; // 0: any; kProtoTcp or kProtoUdp
    ibv_flow_tcp_udp_filter ports_val{}, ports_mask{};
};

// The result of checking specs: 0, EINVAL (malformed: a size smaller than the spec's struct
// or running past the end, more or fewer specs than announced, a layer given twice, layers
// that contradict each other) or EOPNOTSUPP (a spec type the emulated NIC does not steer by:
// ESP, tunnels, GRE, MPLS, inner headers, actions).
int parse_specs(const uint8_t* specs, size_t len, uint32_t num_specs, Rule& out);

// Whether every layer of the rule matches the frame: (field & mask) == (value & mask).
bool matches(const Rule& rule, const Frame& frame);

// The Toeplitz hash (Microsoft RSS) of `len` input bytes under a key of `key_len` bytes: for
// each set input bit, XOR in the 32 key bits starting at that bit's position.
uint32_t toeplitz(const uint8_t* key, size_t key_len, const uint8_t* input, size_t len);

// The RSS hash of a frame over the fields ibv_rx_hash_fields selects (IPv4/IPv6 addresses,
// TCP/UDP ports), in the order RSS defines: source address, destination address, source port,
// destination port. Fields the frame lacks are left out.
uint32_t rss_hash(const uint8_t* key, size_t key_len, uint64_t fields, const Frame& frame);

} // namespace emu::flow
