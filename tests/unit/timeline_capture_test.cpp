// rdmaemu timeline's readers: a capture written by nicsimd's PcapWriter read back (packets,
// time stamps, the fault injector's comments, a file cut short) and its RoCE packets decoded.
#include "capture_file.h"
#include "net/pcap_writer.h"
#include "packet_summary.h"
#include "temp_dir.h"
#include "timeline_packets.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>

using namespace rdmaemu::timeline;
namespace wire = emu::wire;

namespace {

std::vector<uint8_t> read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

} // namespace

TEST_CASE("A capture nicsimd wrote reads back with its times and comments", "[timeline]") {
    TempDir dir("timeline_capture");
    std::string path = dir / "host1.pcap";
    nicsim::PcapWriter w;
    REQUIRE(w.open(path));
    auto send = timeline_packets::rc(wire::opcode::kRcSendOnly, 0x3e8, 0x11, 64);
    auto ack = timeline_packets::ack(0x3e8, 0x12, wire::aeth_ack());
    const auto h1 = timeline_packets::endpoint("127.0.0.1"),
               h2 = timeline_packets::endpoint("127.0.0.2");
    REQUIRE(w.write_udp(h1, h2, send, std::chrono::nanoseconds(1700000000123456789ll), nullptr,
                        "rdmaemu: dropped by the fault injector (--drop): never sent"));
    REQUIRE(w.write_udp(h2, h1, ack, std::chrono::nanoseconds(1700000000123999999ll)));
    REQUIRE(w.close());

    std::vector<uint8_t> bytes = read_bytes(path);
    REQUIRE(looks_like_pcapng(bytes));
    CaptureFile c;
    REQUIRE_FALSE(parse_pcapng(bytes, c));
    REQUIRE(c.frames.size() == 2);
    CHECK(c.frames[0].ns == 1700000000123456789ull);
    CHECK(c.frames[1].ns == 1700000000123999999ull);
    CHECK(c.frames[0].comment == "rdmaemu: dropped by the fault injector (--drop): never sent");
    CHECK(c.frames[1].comment.empty());

    auto sent = summarize(c.frames[0]);
    REQUIRE(sent);
    CHECK(sent->src == 0x7f000001);
    CHECK(sent->dst == 0x7f000002);
    CHECK(sent->opcode_name == "RC_SEND_ONLY");
    CHECK(sent->psn == 0x3e8);
    CHECK(sent->dest_qpn == 0x11);
    CHECK(sent->payload_len == 64);
    CHECK(sent->dropped);
    CHECK(packet_label(*sent) == "RC_SEND_ONLY psn 0x3e8 64 B  DROPPED");
    auto acked = summarize(c.frames[1]);
    REQUIRE(acked);
    CHECK(acked->kind == PacketKind::Ack);
    CHECK(packet_label(*acked) == "ACK psn 0x3e8");

    SECTION("a file cut inside its last block keeps the packets before it") {
        bytes.resize(bytes.size() - 10);
        CaptureFile cut;
        REQUIRE_FALSE(parse_pcapng(bytes, cut));
        CHECK(cut.frames.size() == 1);
    }
    SECTION("a block whose lengths disagree is refused") {
        bytes[bytes.size() - 1] ^= 0x40;
        CaptureFile bad;
        CHECK(parse_pcapng(bytes, bad));
    }
}

TEST_CASE("NAKs, RNR NAKs and a WRITE's RETH are read from captured packets", "[timeline]") {
    TempDir dir("timeline_naks");
    std::string path = dir / "host2.pcap";
    nicsim::PcapWriter w;
    REQUIRE(w.open(path));
    const auto h1 = timeline_packets::endpoint("127.0.0.1"),
               h2 = timeline_packets::endpoint("127.0.0.2");
    auto nak = timeline_packets::ack(7, 0x11, wire::aeth_nak(wire::NakCode::RemoteAccessError));
    auto rnr = timeline_packets::ack(8, 0x11, wire::aeth_rnr_nak(14));
    auto write = timeline_packets::write_only(9, 0x12, 0x7f00d000, 0xd53a826c, 16);
    REQUIRE(w.write_udp(h2, h1, nak, std::chrono::nanoseconds(1)));
    REQUIRE(w.write_udp(h2, h1, rnr, std::chrono::nanoseconds(2)));
    REQUIRE(w.write_udp(h1, h2, write, std::chrono::nanoseconds(3)));
    REQUIRE(w.close());
    CaptureFile c;
    REQUIRE_FALSE(parse_pcapng(read_bytes(path), c));
    REQUIRE(c.frames.size() == 3);
    auto n = summarize(c.frames[0]), r = summarize(c.frames[1]), wr = summarize(c.frames[2]);
    REQUIRE((n && r && wr));
    CHECK(n->kind == PacketKind::Nak);
    CHECK(packet_label(*n) == "NAK remote access error psn 0x7");
    CHECK(r->kind == PacketKind::RnrNak);
    CHECK(packet_label(*r) == "RNR NAK psn 0x8 (receiver not ready)");
    CHECK(wr->has_remote);
    CHECK(wr->rkey == 0xd53a826c);
    CHECK(wr->remote_va == 0x7f00d000);
    CHECK(wr->dma_length == 16);
}

TEST_CASE("Frames that are not RoCE v2 are not packets of the timeline", "[timeline]") {
    CapturedFrame arp;
    arp.bytes.assign(60, 0);
    arp.bytes[12] = 0x08;
    arp.bytes[13] = 0x06;
    CHECK_FALSE(summarize(arp));
    CapturedFrame empty;
    CHECK_FALSE(summarize(empty));
    CaptureFile c;
    CHECK(parse_pcapng({'n', 'o', 'p', 'e'}, c));
}
