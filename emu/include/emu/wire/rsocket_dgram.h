// The wire protocol of datagram rsockets (SOCK_DGRAM over UD QPs), as rdma-core's librdmacm
// speaks it (rsocket.c, rdma-core 44):
//
// - Every datagram rsocket is also a real UDP socket, bound to the socket's address. Until a
//   sender knows the QP number behind a destination, it sends its datagrams over UDP, each
//   behind a UDP header that names the sender's QP (kDataOp). The receiver answers with a UDP
//   header alone (kCtrlOp) that names its own QP, makes an address handle for the sender, and
//   from then on both sides send UD SENDs with qkey RDMA_UDP_QKEY.
// - Each UD SEND's payload starts with a datagram header that says which socket address sent
//   it (the receiver's recvfrom reports it): its IP address and UDP port.
// Multi-byte fields are big-endian; the IPv4 forms are the ones the CM here speaks.
#pragma once

#include <endian.h>
#include <netinet/in.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>

namespace emu::wire::rsocket_dgram {

// rdma-core's RS_SNDLOWAT: the size of each send and receive slot, header included.
inline constexpr size_t kSlotSize = 2048;

// --- the datagram header at the start of each UD SEND (ds_header) ---
inline constexpr size_t kDsHeaderIpv4 = 8;  // version 4, length 8, port, IPv4 address
inline constexpr size_t kDsHeaderIpv6 = 24; // version 6, length 24, port, flow info, address

// Writes the header naming `from` (AF_INET or AF_INET6); its length, 0 for another family.
inline size_t encode_ds_header(const sockaddr_storage& from, uint8_t* out) {
    if (from.ss_family == AF_INET) {
        sockaddr_in in;
        std::memcpy(&in, &from, sizeof in);
        out[0] = 4;
        out[1] = kDsHeaderIpv4;
        std::memcpy(out + 2, &in.sin_port, 2);
        std::memcpy(out + 4, &in.sin_addr.s_addr, 4);
        return kDsHeaderIpv4;
    }
    if (from.ss_family == AF_INET6) {
        sockaddr_in6 in6;
        std::memcpy(&in6, &from, sizeof in6);
        out[0] = 6;
        out[1] = kDsHeaderIpv6;
        std::memcpy(out + 2, &in6.sin6_port, 2);
        std::memcpy(out + 4, &in6.sin6_flowinfo, 4);
        std::memcpy(out + 8, &in6.sin6_addr, 16);
        return kDsHeaderIpv6;
    }
    return 0;
}

struct DsHeader {
    size_t length = 0;   // header bytes before the payload
    sockaddr_in6 from{}; // sockaddr_in when from.sin6_family is AF_INET
};

// The header of a received payload of `len` bytes; none when it is not one (rdma-core's
// ds_valid_recv: version 4 with length 8, or version 6 with length 24).
inline std::optional<DsHeader> decode_ds_header(const uint8_t* p, size_t len) {
    if (len < kDsHeaderIpv4) return std::nullopt;
    DsHeader h;
    if (p[0] == 4 && p[1] == kDsHeaderIpv4) {
        auto* in = reinterpret_cast<sockaddr_in*>(&h.from);
        in->sin_family = AF_INET;
        std::memcpy(&in->sin_port, p + 2, 2);
        std::memcpy(&in->sin_addr.s_addr, p + 4, 4);
        h.length = kDsHeaderIpv4;
        return h;
    }
    if (p[0] == 6 && p[1] == kDsHeaderIpv6 && len >= kDsHeaderIpv6) {
        h.from.sin6_family = AF_INET6;
        std::memcpy(&h.from.sin6_port, p + 2, 2);
        std::memcpy(&h.from.sin6_flowinfo, p + 4, 4);
        std::memcpy(&h.from.sin6_addr, p + 8, 16);
        h.length = kDsHeaderIpv6;
        return h;
    }
    return std::nullopt;
}

// --- the header of a datagram sent over the UDP socket (ds_udp_header) ---
inline constexpr uint32_t kUdpTag = 0x55555555;
inline constexpr uint8_t kDataOp = 0; // RS_OP_DATA: a datagram follows
inline constexpr uint8_t kCtrlOp = 7; // RS_OP_CTRL: the header alone, naming the QP
inline constexpr size_t kUdpHeaderIpv4 = 16;
inline constexpr size_t kUdpHeaderIpv6 = 28;

struct UdpHeader {
    uint8_t op = kDataOp;
    uint32_t qpn = 0;    // the sender's UD QP (24 bits)
    sockaddr_in6 addr{}; // the sender's QP's address (the port is not sent); family says which
};

// Writes the header; its length (0 for another family).
inline size_t encode_udp_header(const UdpHeader& h, uint8_t* out) {
    const uint32_t tag = htobe32(kUdpTag);
    const uint32_t qpn = htobe32(h.qpn & 0xFFFFFF);
    std::memcpy(out, &tag, 4);
    out[5] = h.op;
    out[7] = 0;
    std::memcpy(out + 8, &qpn, 4);
    if (h.addr.sin6_family == AF_INET) {
        out[4] = 4;
        out[6] = kUdpHeaderIpv4;
        std::memcpy(out + 12, &reinterpret_cast<const sockaddr_in*>(&h.addr)->sin_addr.s_addr, 4);
        return kUdpHeaderIpv4;
    }
    if (h.addr.sin6_family == AF_INET6) {
        out[4] = 6;
        out[6] = kUdpHeaderIpv6;
        std::memcpy(out + 12, &h.addr.sin6_addr, 16);
        return kUdpHeaderIpv6;
    }
    return 0;
}

// A UDP datagram's header, from a sender of `family`; none when the tag, version or length
// is not one (rdma-core's udp_svc_valid_udp_hdr). `length` returns the header's size.
inline std::optional<UdpHeader> decode_udp_header(const uint8_t* p, size_t len, sa_family_t family,
                                                  size_t& length) {
    if (len < kUdpHeaderIpv4) return std::nullopt;
    uint32_t tag;
    std::memcpy(&tag, p, 4);
    if (be32toh(tag) != kUdpTag) return std::nullopt;
    UdpHeader h;
    h.op = p[5];
    uint32_t qpn;
    std::memcpy(&qpn, p + 8, 4);
    h.qpn = be32toh(qpn) & 0xFFFFFF;
    if (p[4] == 4 && family == AF_INET && p[6] == kUdpHeaderIpv4) {
        auto* in = reinterpret_cast<sockaddr_in*>(&h.addr);
        in->sin_family = AF_INET;
        std::memcpy(&in->sin_addr.s_addr, p + 12, 4);
        length = kUdpHeaderIpv4;
        return h;
    }
    if (p[4] == 6 && family == AF_INET6 && p[6] == kUdpHeaderIpv6 && len >= kUdpHeaderIpv6) {
        h.addr.sin6_family = AF_INET6;
        std::memcpy(&h.addr.sin6_addr, p + 12, 16);
        length = kUdpHeaderIpv6;
        return h;
    }
    return std::nullopt;
}

} // namespace emu::wire::rsocket_dgram
