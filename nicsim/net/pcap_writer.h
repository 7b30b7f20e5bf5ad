// A packet capture of a host's RoCE v2 traffic, for Wireshark/tshark: a classic pcap file whose
// records are the UDP datagrams we send and receive, wrapped in the Ethernet, IPv4 and UDP
// headers Linux would have put around them, so tools decode Ethernet / IPv4 / UDP / RoCE.
//
// Format: pcap with nanosecond timestamps (magic 0xa1b23c4d), little-endian, LINKTYPE_ETHERNET.
// Nanoseconds because on loopback many packets leave within one microsecond: with microsecond
// stamps they would tie and lose their order in time-based views (I/O graphs, RTT, "time since
// previous"). Wireshark, tshark, tcpdump and libpcap >= 1.5 all read it.
//
// Synthesized headers: Ethernet with MAC 02:52:a:b:c:d for IPv4 a.b.c.d at both ends (or the
// multicast MAC the caller gives as destination) and ethertype 0x0800; IPv4 as our unconnected,
// IP_PMTUDISC_DO socket sends it (version 4, IHL 5, TOS 0, ID 0, DF, TTL 64, protocol 17, valid
// header checksum); UDP with a valid checksum.
//
// Not thread-safe: one writer per host, used from its event loop. Writes are buffered and go to
// the file when the buffer fills, on flush() and on close(). Errors never throw: the first
// failure closes the file, sets error(), and that call and every later one return false, so the
// caller logs once, when a call first returns false.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <netinet/in.h>
#include <span>
#include <string>
#include <vector>

namespace nicsim {

class PcapWriter {
  public:
    static constexpr uint32_t kMagicNanoseconds = 0xa1b23c4d;
    static constexpr uint32_t kLinktypeEthernet = 1;
    static constexpr uint32_t kSnaplen = 262144;
    // An IPv4 datagram holds at most 65535 bytes: 20 of IPv4 header, 8 of UDP header.
    static constexpr size_t kMaxUdpPayload = 65535 - 20 - 8;

    PcapWriter() = default;
    ~PcapWriter();
    PcapWriter(const PcapWriter&) = delete;
    PcapWriter& operator=(const PcapWriter&) = delete;

    // Creates (or truncates) `path` and writes the global header. Closes any open file first.
    bool open(const std::string& path);

    // Appends one UDP datagram from `src` to `dst` (addresses and ports in network byte order,
    // as sockets use them) carrying `payload`, stamped `timestamp` since the Unix epoch.
    // `dst_mac`, when given, is the Ethernet destination (a multicast group's MAC).
    // Returns false when the writer is not open (never opened, closed, or failed) or the
    // payload exceeds kMaxUdpPayload (that one sets error() but keeps the file open).
    bool write_udp(const sockaddr_in& src, const sockaddr_in& dst, std::span<const uint8_t> payload,
                   std::chrono::nanoseconds timestamp, const uint8_t* dst_mac = nullptr);

    // Writes the buffered records to the file.
    bool flush();
    // Flushes and closes; true when everything written so far reached the file. Idempotent.
    bool close();

    bool is_open() const { return fd_ >= 0; }
    // Why the first failing call failed; empty while nothing failed.
    const std::string& error() const { return error_; }

    // CLOCK_REALTIME, the clock pcap timestamps are read against.
    static std::chrono::nanoseconds now();

  private:
    bool fail(const std::string& what, int err);
    bool write_all(const uint8_t* data, size_t len);

    int fd_ = -1;
    bool failed_ = false;
    std::string error_;
    std::string path_;
    std::vector<uint8_t> buffer_;
};

} // namespace nicsim
