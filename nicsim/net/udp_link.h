// The host's wire: RoCE v2 datagrams on its own address, UDP port 4791 (or the one configured,
// the same for every host of a set). Adds and checks the ICRC, applies the configured faults to
// every outgoing packet, and records every packet sent and received to the host's pcap when
// asked: a packet the fault injector dropped, duplicated, held back or corrupted, or one this
// link dropped on arrival (bad ICRC, bad multicast trailer), with a comment that says so; what a
// turn of the event loop captured reaches the file when the turn ends. Packets leave in bursts
// (tx_burst.h): what one turn of the event loop sends goes out when the turn ends, a message's
// packets in one UDP GSO datagram; what arrives as one UDP GRO datagram is cut back into its
// packets (UDP_GRO gives the segment size). It is also the fabric's multicast replication: a packet
// to a multicast group goes to every host of the set (this one included) with the group in a
// trailer (emu/wire/multicast.h), which the receiving link strips.
//
// The host's address is IPv4 or IPv6, and so is its socket (roce_port.h): every address the link
// is given (the set's hosts, a packet's destination) is of that family. Over IPv6 the ICRC is
// checked whole for every peer: no header field it covers is hidden from a UDP socket.
#pragma once

#include "diag/hw_counters.h"
#include "emu/wire/ip_address.h"
#include "fault_injector.h"
#include "icrc_policy.h"
#include "ip_fields.h"
#include "link_counters.h"
#include "loopback_queue.h"
#include "pcap_writer.h"
#include "support/unique_fd.h"
#include "tx_burst.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/logger.h>

#include <cstdint>
#include <functional>
#include <netinet/in.h>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nicsim {

class UdpLink {
  public:
    // (source address and port, the UDP payload BTH .. ICRC, and for a multicast packet the
    // group's MGID (16 bytes; nullptr for unicast), and the IP header's fields as far as the
    // socket showed them (the sender's traffic class; TTL or hop limit; the IPv6 flow label).
    // The multicast trailer is already stripped.
    using Receiver = std::function<void(const emu::wire::IpEndpoint& from, uint8_t* data,
                                        size_t len, const uint8_t* mgid, const IpFields& ip)>;

    // `sock`: bound to `local`, of its family. `hosts`: the addresses of every host of the set,
    // where multicast packets go; this host is added when missing. `pcap`: the capture, opened
    // or not.
    UdpLink(boost::asio::io_context& io, UniqueFd sock, const emu::wire::IpAddress& local,
            uint16_t port, const FaultConfig& faults, PcapWriter pcap, spdlog::logger& log,
            std::vector<emu::wire::IpAddress> hosts = {});
    ~UdpLink();

    // Received packets go to `on_packet` as the event loop finds them (Asio waits on the socket).
    void start(Receiver on_packet);
    // Or as the caller receives them: it watches fd() and calls receive() when it is readable,
    // and end_turn() after each turn of its loop (nicsim/daemon/poll_loop.h).
    void attach(Receiver on_packet);
    int fd() { return sock_.native_handle(); }
    // Up to a turn's budget of datagrams; how many came (0: the socket is empty).
    size_t receive();
    // What this turn sent goes to the kernel in one burst, the capture to its file, the
    // packets to this host itself to their QPs; true when that made more to do.
    bool end_turn();
    // The turn has something to end: packets to send, capture, or deliver to this host itself.
    bool turn_pending() const { return end_turn_posted_; }
    // Room for the next packet in the burst (TxBurst::kSlotSize bytes): a packet built here
    // and then handed to send() is not copied.
    uint8_t* packet_buffer();
    // Sends `len` bytes (BTH .. pad, then 4 bytes for the ICRC this fills in) to dst:port, with
    // the rest of this turn's burst. `tos`: the IP header's TOS byte or IPv6 traffic class (the
    // GRH traffic class of RoCE v2); a packet with one other than 0 goes out on its own, after
    // the burst.
    void send(const emu::wire::IpAddress& dst_addr, uint8_t* packet, size_t len, uint8_t tos = 0);
    // Hands the burst to the kernel now (it also goes when the event loop's turn ends).
    void flush();
    // Sends `len` bytes (as send) to the multicast group `mgid` (16 bytes): the ICRC as for a
    // packet to the group's IP address (group_address()), captured once, then one copy with the
    // trailer to every host of the set.
    void send_multicast(const uint8_t* mgid, uint8_t* packet, size_t len, uint8_t tos = 0);
    const std::vector<emu::wire::IpAddress>& hosts() const { return hosts_; }
    const emu::wire::IpAddress& local() const { return local_; }
    uint16_t port() const { return port_; } // the UDP port every host of the set sends from
    // Whether `addr` is a host of this set (sends from port(), IP ID 0).
    bool in_set(const emu::wire::IpAddress& addr) const;
    // The IP destination of a packet to the multicast group `mgid` on this host's network: over
    // IPv6 the MGID itself, over IPv4 the group's IPv4 address (emu/wire/multicast.h).
    emu::wire::IpAddress group_address(const uint8_t* mgid) const;
    const LinkCounters& counters() const { return counters_; }
    LinkCounters& counters() { return counters_; }
    // IPv4 packets whose ICRC is wrong for IP ID 0 (icrc_policy.h). Recover by default.
    void set_ipv4_id_policy(Ipv4IdPolicy p) { ipv4_id_policy_ = p; }
    Ipv4IdPolicy ipv4_id_policy() const { return ipv4_id_policy_; }
    // Where the host's totals are kept (sent_pkts, rcvd_pkts, send_err); nullptr: nowhere.
    void count_into(HwCounters* hw) { hw_ = hw; }
    // The socket's receive buffer as the kernel accounts it (SO_RCVBUF: twice what was asked
    // for, the overhead of each datagram's buffers included).
    uint64_t receive_buffer_bytes() const { return receive_buffer_bytes_; }

  private:
    // Asks for 8 MiB socket buffers (`force_opt`), else what `opt` may give, and says so. What
    // the socket got, as SO_RCVBUF or SO_SNDBUF reports it.
    uint64_t deep_buffer(int force_opt, int opt, const char* which, const char* sysctl);
    using IpEndpoint = emu::wire::IpEndpoint;
    struct Outgoing {
        IpEndpoint dst{};
        std::vector<uint8_t> bytes;
        bool capture = true; // false: a multicast copy, captured once before replication
        std::string comment; // what the fault injector did to it, for the capture
        uint8_t tos = 0;
    };
    void wait_readable();
    // One recvmmsg; the datagrams it got.
    size_t receive_batch();
    // `ip`: the IP header's fields, from the socket's control messages.
    void receive_datagram(const IpEndpoint& from, uint8_t* data, size_t len, size_t segment,
                          const IpFields& ip);
    void receive_one(const IpEndpoint& from, uint8_t* data, size_t len, IpFields ip);
    // The IP ID the packet was sent with, when its ICRC says (0 for the set's own hosts and for
    // IPv6, which has none), or nothing: the ICRC is wrong.
    std::optional<uint16_t> verify_icrc(const emu::wire::IpAddress& src,
                                        const emu::wire::IpAddress& dst, uint16_t src_port,
                                        const uint8_t* data, size_t len) const;

    void write(const IpEndpoint& dst, const uint8_t* data, size_t len, bool capture = true,
               std::string_view comment = {}, uint8_t tos = 0);
    // Captures one packet; what one turn of the event loop captured reaches the file when the
    // turn ends (a reader sees it at once; a killed daemon's capture ends at its last turn).
    void capture(const IpEndpoint& src, const IpEndpoint& dst, const uint8_t* data, size_t len,
                 const uint8_t* dst_mac = nullptr, std::string_view comment = {},
                 const IpFields& ip = {});
    IpEndpoint self() const { return {local_, port_}; }
    // Posts the end of this turn of the event loop, once (attached: end_turn() is the caller's):
    // the burst goes out, the capture to its file.
    void end_turn_later();
    void deliver_looped();
    void queue(const IpEndpoint& dst, const uint8_t* data, size_t len, uint8_t tos);
    // `mcast_copy`: a multicast copy with its trailer (not captured; corruption spares the
    // trailer).
    void send_faulty(const IpEndpoint& dst, uint8_t* packet, size_t len, bool mcast_copy = false,
                     uint8_t tos = 0);
    void arm_reorder_flush();
    // Sends the packet the reorder buffer holds, if any; `why` goes to its capture comment.
    void send_held(std::string_view why);

    boost::asio::io_context& io_;
    boost::asio::posix::stream_descriptor sock_;
    emu::wire::IpAddress local_;
    bool ipv6_;     // the host's family, and its socket's
    uint16_t port_; // every host of a set uses the same one
    std::vector<emu::wire::IpAddress> hosts_;
    spdlog::logger& log_;
    Receiver on_packet_;
    FaultInjector faults_;
    bool faulty_;
    ReorderBuffer<Outgoing> reorder_;
    boost::asio::steady_timer reorder_timer_;
    PcapWriter pcap_;
    LinkCounters counters_;
    HwCounters* hw_ = nullptr;
    uint64_t receive_buffer_bytes_ = 0;
    TxBurst burst_;
    LoopbackQueue loopback_;
    bool end_turn_posted_ = false;
    bool attached_ = false; // the caller receives and ends the turns (attach())
    bool gso_ = true;       // off once the kernel refuses a GSO send
    Ipv4IdPolicy ipv4_id_policy_ = Ipv4IdPolicy::Recover;
    std::vector<uint8_t> rx_buffers_;
};

} // namespace nicsim
