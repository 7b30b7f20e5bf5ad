// rdmaemu timeline's merge: two hosts' traces and captures of one exchange become one diagram,
// each packet an arrow from its sender's capture to its receiver's, with the DMA it caused.
#include "model.h"
#include "net/pcap_writer.h"
#include "render.h"
#include "temp_dir.h"
#include "timeline_packets.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <iterator>

using namespace rdmaemu::timeline;
namespace wire = emu::wire;
namespace tp = timeline_packets;

namespace {

constexpr uint64_t kEpoch = 1700000000000000000ull; // the run's wall clock, ns
constexpr const char* kDrop = "rdmaemu: dropped by the fault injector (--drop): never sent";

CaptureFile
capture(const TempDir& dir, const std::string& name,
        const std::vector<std::tuple<bool, std::vector<uint8_t>, uint64_t, std::string>>& packets) {
    const auto h1 = tp::endpoint("127.0.0.1"), h2 = tp::endpoint("127.0.0.2");
    nicsim::PcapWriter w;
    REQUIRE(w.open(dir / name));
    for (const auto& [one_to_two, bytes, at, comment] : packets)
        REQUIRE(w.write_udp(one_to_two ? h1 : h2, one_to_two ? h2 : h1, bytes,
                            std::chrono::nanoseconds(kEpoch + at), nullptr, comment));
    REQUIRE(w.close());
    std::ifstream in(dir / name, std::ios::binary);
    std::vector<uint8_t> b{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    CaptureFile c;
    c.path = name;
    REQUIRE_FALSE(parse_pcapng(b, c));
    return c;
}

TraceFile trace(const std::string& text) {
    TraceFile t;
    REQUIRE_FALSE(parse_trace(text, t));
    return t;
}

// Host 1 SENDs twice (the second lost on the wire) and WRITEs with a wrong rkey; host 2 has a
// receive posted into its MR.
struct Exchange {
    TempDir dir{"timeline_model"};
    std::vector<CaptureFile> captures;
    std::vector<TraceFile> traces;
    Exchange() {
        auto send1 = tp::rc(wire::opcode::kRcSendOnly, 1, 0x12, 64);
        auto send2 = tp::rc(wire::opcode::kRcSendOnly, 2, 0x12, 64);
        auto ack1 = tp::ack(1, 0x11, wire::aeth_ack());
        auto write = tp::write_only(3, 0x12, 0x9000, 0xbad, 16);
        auto nak = tp::ack(3, 0x11, wire::aeth_nak(wire::NakCode::RemoteAccessError));
        captures.push_back(capture(dir, "host1.pcap",
                                   {{true, send1, 1000, ""},
                                    {true, send2, 1500, kDrop},
                                    {false, ack1, 2100, ""},
                                    {true, write, 3000, ""},
                                    {false, nak, 3300, ""}}));
        captures.push_back(capture(dir, "host2.pcap",
                                   {{true, send1, 1100, ""},
                                    {false, ack1, 2000, ""},
                                    {true, write, 3100, ""},
                                    {false, nak, 3200, ""}}));
        traces.push_back(trace(
            "# rdmaemu verbs trace: pid 10, mode emulated, program client\n"
            "# clock realtime=1700000000.000000000 host=1\n"
            "    0.000000500      10 wr send qp=0x11 wr_id=1 opcode=IBV_WR_SEND flags=0 sge=1 "
            "len=64 sg_list[0]={addr=0x1000 length=64 lkey=0x111}\n"
            "    0.000002500      10 wc IBV_WC_SUCCESS opcode=IBV_WC_SEND qp=0x11 wr_id=1 len=0\n"
            "    0.000003500      10 wc IBV_WC_REM_ACCESS_ERR opcode=- qp=0x11 wr_id=3 len=0\n"));
        traces.push_back(trace("# rdmaemu verbs trace: pid 20, mode emulated, program server\n"
                               "# clock realtime=1700000000.000000000 host=2\n"
                               "    0.000000100      20 verb ibv_reg_mr(pd(1), 0x5000, 4096, "
                               "IBV_ACCESS_LOCAL_WRITE) = mr(len=4096 lkey=0x222 rkey=0x333)\n"
                               "    0.000000200      20 wr recv qp=0x12 wr_id=7 sge=1 len=4096 "
                               "sg_list[0]={addr=0x5000 length=4096 lkey=0x222}\n"));
    }
};

const Event* find(const Timeline& t, EventKind kind, const std::string& label_part) {
    for (const Event& e : t.events)
        if (e.kind == kind && e.label.find(label_part) != std::string::npos) return &e;
    return nullptr;
}

} // namespace

TEST_CASE("A trace's header, clock line, MRs and QPs are read", "[timeline]") {
    TraceFile t =
        trace("# rdmaemu verbs trace: pid 4242, mode emulated, program ibv_rc_pingpong -g 0\n"
              "# clock realtime=1700000001.000000250 host=2\n"
              "    0.000294    4242 verb ibv_reg_mr(pd(1), 0x5595e0445000, 4096, "
              "IBV_ACCESS_LOCAL_WRITE) = mr(len=4096 lkey=0xf3ec172d rkey=0x7570c148)\n"
              "    0.000400    4242 verb ibv_create_qp(pd(1), {...}) = qp(qpn=0x8b0393 "
              "type=IBV_QPT_RC)\n");
    CHECK(t.pid == 4242);
    CHECK(t.program == "ibv_rc_pingpong -g 0");
    CHECK(t.host == 2);
    CHECK(t.realtime_ns == 1700000001000000250ull);
    REQUIRE(t.mrs.size() == 1);
    CHECK(t.mrs[0].addr == 0x5595e0445000);
    CHECK(t.mrs[0].length == 4096);
    CHECK(t.mrs[0].lkey == 0xf3ec172d);
    CHECK(t.mrs[0].rkey == 0x7570c148);
    CHECK(t.qpns == std::vector<uint32_t>{0x8b0393});
    REQUIRE(t.events.size() == 2);
    CHECK(t.events[0].ns == 294000);
    CHECK(event_label(t.events[0]) == "ibv_reg_mr = mr(len=4096 lkey=0xf3ec172d rkey=0x7570c148)");

    TraceFile not_one;
    CHECK(parse_trace("root:x:0:0:root:/root:/bin/bash\n", not_one));
}

TEST_CASE("Packets become arrows from sender to receiver, with their DMA and losses",
          "[timeline]") {
    Exchange x;
    Timeline t = build_timeline(x.traces, x.captures);
    REQUIRE(t.lanes.size() == 2);
    CHECK(t.lanes[0].name == "host 1 (127.0.0.1)");
    CHECK(t.lanes[1].name == "host 2 (127.0.0.2)");
    CHECK(std::is_sorted(t.events.begin(), t.events.end(),
                         [](const Event& a, const Event& b) { return a.ns < b.ns; }));
    // Each packet once, though both captures hold it.
    CHECK(std::count_if(t.events.begin(), t.events.end(),
                        [](const Event& e) { return is_packet(e.kind); }) == 5);

    const Event* send = find(t, EventKind::Packet, "RC_SEND_ONLY psn 0x1 ");
    REQUIRE(send);
    CHECK(send->lane == 0);
    CHECK(send->to_lane == 1);
    CHECK(send->ns == kEpoch + 1000);
    CHECK(send->arrive_ns == kEpoch + 1100);

    const Event* lost = find(t, EventKind::Dropped, "psn 0x2");
    REQUIRE(lost);
    CHECK(lost->arrive_ns == 0);
    CHECK(lost->detail == kDrop);

    const Event* ack = find(t, EventKind::Ack, "ACK psn 0x1");
    REQUIRE(ack);
    CHECK(ack->lane == 1);
    CHECK(ack->to_lane == 0);
    CHECK(find(t, EventKind::Nak, "NAK remote access error psn 0x3"));

    // The SEND landed in the receive host 2 posted, in its MR; the WRITE was refused.
    const Event* dma = find(t, EventKind::Dma, "receive buffer of MR lkey 0x222 rkey 0x333");
    REQUIRE(dma);
    CHECK(dma->lane == 1);
    CHECK(dma->ns > send->arrive_ns);
    CHECK(find(t, EventKind::Dma, "refused: NAK remote access error psn 0x3"));

    const Event* wqe = find(t, EventKind::Wqe, "post_send qp 0x11 SEND wr_id=1 64 B");
    REQUIRE(wqe);
    CHECK(wqe->lane == 0);
    CHECK(wqe->ns == kEpoch + 500);
    CHECK(find(t, EventKind::Cqe, "CQE SUCCESS SEND qp 0x11 wr_id=1"));
    CHECK(find(t, EventKind::CqeError, "CQE REM_ACCESS_ERR qp 0x11 wr_id=3"));
}

TEST_CASE("The diagram draws arrows, losses and boxes as text and SVG", "[timeline]") {
    Exchange x;
    Timeline t = build_timeline(x.traces, x.captures);
    std::string text = render_text(t, 100);
    INFO(text);
    CHECK(text.find("h1 = host 1 (127.0.0.1)") != std::string::npos);
    CHECK(text.find("*---------->|   RC_SEND_ONLY psn 0x1 64 B") != std::string::npos);
    CHECK(text.find("|<----------*   ACK psn 0x1") != std::string::npos);
    CHECK(text.find("*-----X     |   RC_SEND_ONLY psn 0x2 64 B  DROPPED  (" + std::string(kDrop) +
                    ")") != std::string::npos);
    CHECK(text.find("|           *   h2 DMA SEND payload into receive buffer") !=
          std::string::npos);

    std::string svg = render_svg(t, 100);
    CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
    CHECK(svg.find("</svg>") == svg.size() - 7);
    CHECK(svg.find("<g class=\"ev dropped\">") != std::string::npos);
    CHECK(svg.find("<g class=\"ev nak\">") != std::string::npos);
    CHECK(svg.find("<g class=\"ev dma\">") != std::string::npos);
    CHECK(svg.find("host 2 (127.0.0.2)</text>") != std::string::npos);

    SECTION("a limit cuts the diagram and says so") {
        std::string cut = render_text(t, 3);
        CHECK(cut.find("more events not drawn (--limit)") != std::string::npos);
    }
}
