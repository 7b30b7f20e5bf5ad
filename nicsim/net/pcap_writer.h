// A packet capture of a host's RoCE v2 traffic, for Wireshark/tshark: a pcapng file whose
// packets are the UDP datagrams we send and receive, wrapped in the Ethernet, IP (v4 or v6) and
// UDP headers Linux would have put around them, so tools decode Ethernet / IP / UDP / RoCE. A
// packet may carry a comment (pcapng's opt_comment): the fault injector's drops, duplicates,
// corruptions and reorderings are captured with one, so a reader sees the loss behind a
// retransmission (tshark -Y 'frame.comment', or -T fields -e frame.comment).
//
// Format: pcapng (a Section Header Block, one Interface Description Block, LINKTYPE_ETHERNET,
// if_tsresol 9, then one Enhanced Packet Block per packet), little-endian. Nanosecond stamps
// because on loopback many packets leave within one microsecond: with microsecond stamps they
// would tie and lose their order in time-based views (I/O graphs, RTT, "time since previous").
// Wireshark, tshark, tcpdump and libpcap >= 1.1 read it.
//
// Synthesized headers: Ethernet with MAC 02:52:a:b:c:d for IPv4 a.b.c.d at both ends (for an
// IPv6 address, 02:52 and its last four bytes; or the multicast MAC the caller gives as
// destination) and ethertype 0x0800 or 0x86DD; IPv4 as our unconnected, IP_PMTUDISC_DO socket
// sends it (version 4, IHL 5, DF, protocol 17, valid header checksum), IPv6 without extension
// headers (next header 17), with the traffic class (TOS), ID (IPv4), flow label (IPv6) and
// TTL / hop limit the caller gives (IpFields: what the packet carried, as far as the receiver
// knows it; by default 0, 0, 0, 64, our own packets' values); UDP with a valid checksum.
//
// The file is created new, 0600, in a directory only its owner reaches (emu/private_files.h):
// never through a symbolic link, never truncating another file. An optional size limit stops the
// capture before the record that would take the file past it, so the file is always a valid
// capture of the first packets (the start of a connection is what tells most).
//
// Not thread-safe: one writer per host, used from its event loop. Writes are buffered and go to
// the file on flush() (the link flushes once per turn of its event loop, so a reader sees each
// packet as it happens and a killed daemon's file ends at its last whole turn), when the buffer
// fills, and on close(). Errors never throw: the first
// failure closes the file, sets error(), and that call and every later one return false. When
// the capture stops after a successful open (limit reached or a write failed), the stop handler
// given to open() is called once, with the reason, for the caller to log.
#pragma once

#include "emu/private_files.h"
#include "emu/wire/ip_address.h"
#include "net/ip_fields.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <netinet/in.h>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace nicsim {

class PcapWriter {
  public:
    static constexpr uint32_t kLinktypeEthernet = 1;
    static constexpr uint32_t kSnaplen = 262144;
    // An IPv4 datagram holds at most 65535 bytes: 20 of IPv4 header, 8 of UDP header (an IPv6
    // one a few more: one limit serves both).
    static constexpr size_t kMaxUdpPayload = 65535 - 20 - 8;
    static constexpr uint64_t kNoLimit = std::numeric_limits<uint64_t>::max();

    using StopHandler = std::function<void(const std::string& why)>;

    PcapWriter() = default;
    ~PcapWriter();
    PcapWriter(PcapWriter&&) = default;
    PcapWriter& operator=(PcapWriter&&) = delete; // would drop the buffered records
    PcapWriter(const PcapWriter&) = delete;
    PcapWriter& operator=(const PcapWriter&) = delete;

    // Creates `path` (a regular file of ours left there is replaced; anything else refused) and
    // writes the global header. The file never grows past `limit_bytes` (header included).
    // Closes any open file first.
    bool open(const std::string& path, uint64_t limit_bytes = kNoLimit, StopHandler on_stop = {});

    // Appends one UDP datagram from `src` to `dst` (both of one family) carrying `payload`,
    // stamped `timestamp` since the Unix epoch. `dst_mac`, when given, is the Ethernet
    // destination (a multicast group's MAC); `comment`, when not empty, goes with the packet;
    // `ip`: the IP header's fields that vary. Returns false when the writer is not open (never
    // opened, closed, failed or stopped at its limit) or the payload exceeds kMaxUdpPayload
    // (that one sets error() but keeps the file open).
    bool write_udp(const emu::wire::IpEndpoint& src, const emu::wire::IpEndpoint& dst,
                   std::span<const uint8_t> payload, std::chrono::nanoseconds timestamp,
                   const uint8_t* dst_mac = nullptr, std::string_view comment = {},
                   const IpFields& ip = {});
    // The same for IPv4 socket addresses (address and port in network order, as sockets give
    // them).
    bool write_udp(const sockaddr_in& src, const sockaddr_in& dst, std::span<const uint8_t> payload,
                   std::chrono::nanoseconds timestamp, const uint8_t* dst_mac = nullptr,
                   std::string_view comment = {}, const IpFields& ip = {});

    // Writes the buffered records to the file.
    bool flush();
    // Flushes and closes; true when everything written so far reached the file. Idempotent.
    bool close();

    bool is_open() const { return static_cast<bool>(fd_); }
    // Why the first failing call failed; empty while nothing failed.
    const std::string& error() const { return error_; }
    // The capture stopped because the next record would have passed the limit.
    bool limit_reached() const { return limit_reached_; }

    // CLOCK_REALTIME, the clock pcap timestamps are read against.
    static std::chrono::nanoseconds now();

  private:
    bool fail(const std::string& what, int err);
    bool stop_at_limit();
    void stopped(const std::string& why);
    bool write_all(const uint8_t* data, size_t len);

    emu::OwnedFd fd_;
    bool failed_ = false;
    bool limit_reached_ = false;
    std::string error_;
    std::string path_;
    std::vector<uint8_t> buffer_;
    uint64_t limit_ = kNoLimit;
    uint64_t file_bytes_ = 0; // header and records accepted so far, buffered or written
    StopHandler on_stop_;
};

} // namespace nicsim
