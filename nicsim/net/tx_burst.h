// The packets one turn of the NIC's event loop sends, kept until the turn ends and then handed to
// the kernel at once (eRPC's tx_burst/tx_flush): one sendmmsg, and the packets of one message to
// one destination in one UDP GSO super-datagram (UDP_SEGMENT) where their sizes allow — on
// loopback such a datagram crosses as one skb. Every packet stays its own RoCE datagram on the
// wire: the kernel cuts the super-datagram exactly at packet boundaries.
#pragma once

#include "emu/wire/ip_address.h"
#include "tos_control.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace nicsim {

class TxBurst {
  public:
    static constexpr size_t kSlots = 256;
    static constexpr size_t kSlotSize = 4096 + 128; // transport::kMaxPacket: the largest packet
    // The kernel's limits for one GSO send: UDP_MAX_SEGMENTS, and one IPv4 datagram's payload
    // (an IPv6 datagram's is a little larger; one limit serves both).
    static constexpr size_t kMaxSegments = 64;
    static constexpr size_t kMaxGsoBytes = 65507;

    TxBurst();

    // Room for the next packet; nullptr when the burst is full (send it first).
    uint8_t* next_slot();
    // The packet built in next_slot(): `len` bytes to `dst_addr` (of the socket's family).
    // `alone`: never in a GSO datagram with others. A receiver that cuts a GSO datagram up
    // itself, or a NIC that segments it on its way out, gives segments 2..N the IP IDs 1..N-1
    // (inet_gso_segment numbers the segments of a non-fixed-ID datagram), which the ICRC covers
    // and which we computed as 0: Linux Soft-RoCE's tunnel socket, without UDP_GRO, segments
    // what arrives (udp_queue_rcv_skb), and dropped every packet after a message's first.
    // `tos`: the IPv4 TOS or IPv6 traffic class (the GRH's traffic class); a datagram has one,
    // so only packets with the same one share it.
    void commit(const emu::wire::IpAddress& dst_addr, size_t len, bool alone = false,
                uint8_t tos = 0);
    bool empty() const { return packets_.empty(); }
    size_t size() const { return packets_.size(); }
    const uint8_t* packet(size_t i) const { return slot(i); }
    size_t length(size_t i) const { return packets_[i].len; }
    const emu::wire::IpAddress& destination(size_t i) const { return packets_[i].dst; }

    // Consecutive packets sent as one datagram: to one address with one TOS, all of one size
    // except that the last may be shorter, within the kernel's limits. `segment` is that size
    // (the GSO size).
    struct Group {
        size_t first = 0, count = 0;
        emu::wire::IpAddress dst;
        uint16_t segment = 0;
        uint8_t tos = 0;
    };
    // The burst cut into groups (without GSO: one packet each), into `out`.
    void groups(bool gso, std::vector<Group>& out) const;

    // Sends everything on `fd` to port `port` and empties the burst. Returns how many packets
    // the kernel took (the rest are lost, as on a congested link); sets *gso_failed when the
    // kernel refused a GSO send (the caller turns GSO off; those packets went out one by one).
    size_t send(int fd, uint16_t port, bool gso, size_t* datagrams, bool* gso_failed);
    void clear() { packets_.clear(); }

  private:
    struct Packet {
        emu::wire::IpAddress dst;
        uint32_t len;
        bool alone;
        uint8_t tos;
    };
    struct Message { // one datagram's address, GSO size and TOS
        sockaddr_storage dst;
        alignas(cmsghdr) char control[CMSG_SPACE(sizeof(uint16_t)) + kTosControlSpace];
    };
    // Points `h` at `m`'s control messages: the GSO size when `segment` is not 0, the TOS when
    // `tos` is not 0 (IPv6's traffic class when `ipv6`); none when both are 0.
    static void set_control(msghdr& h, Message& m, uint16_t segment, uint8_t tos, bool ipv6);
    uint8_t* slot(size_t i) { return storage_.data() + i * kSlotSize; }
    const uint8_t* slot(size_t i) const { return storage_.data() + i * kSlotSize; }

    std::vector<uint8_t> storage_;
    std::vector<Packet> packets_;
    // Kept from send to send: the data path allocates nothing per packet.
    std::vector<iovec> iov_;
    std::vector<mmsghdr> msgs_;
    std::vector<Message> meta_;
    std::vector<Group> groups_;
};

} // namespace nicsim
