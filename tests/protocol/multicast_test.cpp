// UD multicast (IBA 10.5): ibv_attach_mcast / ibv_detach_mcast as the NIC runs them, sends to a
// multicast GID, and delivery of a group's packet to every attached QP of the NIC.
#include "emu/wire/multicast.h"
#include "nic/device_limits.h"
#include "protocol_rig.h"
#include "transport/ud.h"

using namespace proto;
using nicsim::Mgid;

namespace {

constexpr uint32_t kQkey = 0x11111111; // perftest's
constexpr uint32_t kSenderQpn = 0x77;

Mgid ff_mgid(uint8_t low = 0) { // perftest's default MGID ff01:0:0:2:c985:: (low byte varied)
    return {0xff, 0x01, 0, 0, 0, 0, 0, 0x02, 0xc9, 0x85, 0, 0, 0, 0, 0, low};
}

Mgid v4_group(const char* ip) { // ::ffff:<ip>
    Mgid g{};
    g[10] = g[11] = 0xff;
    ::inet_pton(AF_INET, ip, g.data() + 12);
    return g;
}

ipc::McastReq mcast_req(const Qp& qp, const Mgid& g, uint16_t lid = 0) {
    ipc::McastReq q{};
    q.qp = qp.handle;
    q.lid = lid;
    std::memcpy(q.gid, g.data(), 16);
    return q;
}

int attach(Rig& rig, const Qp& qp, const Mgid& g) {
    ipc::Empty e;
    return nicsim::attach_mcast(rig.ctx, mcast_req(qp, g), e);
}

int detach(Rig& rig, const Qp& qp, const Mgid& g) {
    ipc::Empty e;
    return nicsim::detach_mcast(rig.ctx, mcast_req(qp, g), e);
}

size_t members(Rig& rig, const Mgid& g) {
    const std::vector<uint32_t>* m = rig.nic.mcast_members(g.data());
    return m ? m->size() : 0;
}

// A UD SEND ONLY to group `g` from `src` (QPN kSenderQpn) with Q_Key `qkey`, handed to the NIC
// as the Engine does after the link stripped the trailer.
void deliver_mcast(Rig& rig, const Mgid& g, const std::vector<uint8_t>& payload,
                   uint32_t qkey = kQkey, const char* src = kPeerAddress) {
    wire::Headers h;
    h.opcode = wire::opcode::kUdSendOnly;
    h.dest_qpn = wire::kMulticastQpn;
    h.psn = 5;
    h.deth = {qkey, kSenderQpn};
    std::vector<uint8_t> buf(wire::packet_length(h.opcode, payload.size()));
    REQUIRE(wire::build(h, payload.data(), payload.size(), buf.data()) == buf.size());
    wire::Headers parsed;
    const uint8_t* p = nullptr;
    size_t plen = 0;
    REQUIRE(wire::parse(buf.data(), buf.size(), parsed, &p, &plen) == wire::ParseResult::Ok);
    nicsim::ud::receive_multicast(rig.env, address(src),
                                  wire::multicast_group_address(g.data(), false), g.data(), parsed,
                                  p, plen, buf.size());
    rig.env.drain();
}

// A receive buffer for one datagram: 40 bytes of GRH, then the payload.
struct RecvBuf {
    std::vector<uint8_t> bytes = std::vector<uint8_t>(40 + 256, 0xee);
    Mr* mr = nullptr;
    void post(Rig& rig, Qp& qp, uint64_t wr_id) {
        if (!mr) mr = &rig.reg_mr(bytes.data(), bytes.size(), IBV_ACCESS_LOCAL_WRITE);
        rig.post_recv(qp, wr_id, {sge(bytes.data(), bytes.size(), *mr)});
    }
    uint32_t ip_src() const { return word(20 + 12); }
    uint32_t ip_dst() const { return word(20 + 16); }
    uint32_t word(size_t at) const {
        uint32_t v;
        std::memcpy(&v, bytes.data() + at, 4);
        return v;
    }
};

} // namespace

TEST_CASE("mcast: attach and detach follow the kernel's rules", "[mcast]") {
    Rig rig;
    Qp& ud = ud_qp(rig);
    Qp& rc = rig.create_qp();
    const Mgid g = ff_mgid();

    // Only UD QPs, only multicast GIDs (ff00::/8 or ::ffff:224.0.0.0/4): EINVAL otherwise.
    CHECK(attach(rig, rc, g) == EINVAL);
    CHECK(attach(rig, ud, v4_group("127.0.0.2")) == EINVAL);
    CHECK(attach(rig, ud, Mgid{}) == EINVAL);
    ipc::McastReq bad = mcast_req(ud, g);
    bad.qp = 9999;
    ipc::Empty e;
    CHECK(nicsim::attach_mcast(rig.ctx, bad, e) == EINVAL);
    CHECK(rig.nic.mcast_group_count() == 0);

    // Attaching twice is a no-op; the MLID is ignored on a RoCE port.
    CHECK(attach(rig, ud, g) == 0);
    ipc::McastReq other_lid = mcast_req(ud, g, 0xc001);
    CHECK(nicsim::attach_mcast(rig.ctx, other_lid, e) == 0);
    CHECK(members(rig, g) == 1);
    CHECK(rig.nic.mcast_attachments() == 1);
    CHECK(attach(rig, ud, v4_group("239.1.2.3")) == 0);
    CHECK(rig.nic.mcast_group_count() == 2);

    // Detaching from a group the QP is not in: EINVAL; the second detach too.
    CHECK(detach(rig, ud, ff_mgid(9)) == EINVAL);
    CHECK(detach(rig, rc, g) == EINVAL);
    CHECK(detach(rig, ud, g) == 0);
    CHECK(detach(rig, ud, g) == EINVAL);
    CHECK(members(rig, g) == 0);
    CHECK(rig.nic.mcast_group_count() == 1);

    // Destroying the QP detaches it from the groups it is still in.
    ipc::HandleReq d{ud.handle, 0};
    CHECK(nicsim::destroy_qp(rig.ctx, d, e) == 0);
    CHECK(rig.nic.mcast_group_count() == 0);
    CHECK(rig.nic.mcast_attachments() == 0);
}

TEST_CASE("mcast: the device limits are enforced with ENOMEM", "[mcast]") {
    Rig rig;
    // QPs per group: max_mcast_qp_attach.
    std::vector<Qp*> qps;
    for (uint32_t i = 0; i <= nicsim::limits::kMaxMcastQpAttach; ++i)
        qps.push_back(&ud_qp(rig));
    const Mgid g = ff_mgid(1);
    for (uint32_t i = 0; i < nicsim::limits::kMaxMcastQpAttach; ++i)
        REQUIRE(attach(rig, *qps[i], g) == 0);
    CHECK(attach(rig, *qps.back(), g) == ENOMEM);
    CHECK(members(rig, g) == nicsim::limits::kMaxMcastQpAttach);
    CHECK(attach(rig, *qps.back(), ff_mgid(2)) == 0); // another group still takes it

    // Groups: max_mcast_grp (two are in use above).
    Qp& one = *qps.back();
    uint32_t made = 2;
    for (uint32_t i = 0; made < nicsim::limits::kMaxMcastGrp; ++i, ++made) {
        Mgid m{0xff, 0x0e, static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i)};
        REQUIRE(attach(rig, one, m) == 0);
    }
    CHECK(rig.nic.mcast_group_count() == nicsim::limits::kMaxMcastGrp);
    CHECK(attach(rig, one, ff_mgid(3)) == ENOMEM);
    CHECK(attach(rig, *qps[0], ff_mgid(2)) == 0); // an existing group takes another QP

    // The device reports the limits it enforces.
    ipc::QueryDeviceReply r{};
    CHECK(nicsim::query_device(rig.ctx, ipc::Empty{}, r) == 0);
    CHECK(r.attr.max_mcast_grp == static_cast<int>(nicsim::limits::kMaxMcastGrp));
    CHECK(r.attr.max_mcast_qp_attach == static_cast<int>(nicsim::limits::kMaxMcastQpAttach));
    CHECK(r.attr.max_total_mcast_qp_attach ==
          static_cast<int>(nicsim::limits::kMaxTotalMcastQpAttach));
}

TEST_CASE("mcast: a group's packet reaches every attached QP whose Q_Key matches", "[mcast]") {
    Rig rig;
    Qp& a = ud_qp(rig);
    Qp& b = ud_qp(rig);
    Qp& wrong_key = ud_qp(rig, 0x22222222);
    Qp& outsider = ud_qp(rig);
    const Mgid g = v4_group("239.1.2.3");
    REQUIRE(attach(rig, a, g) == 0);
    REQUIRE(attach(rig, b, g) == 0);
    REQUIRE(attach(rig, wrong_key, g) == 0);
    RecvBuf ba, bb, bw, bo;
    ba.post(rig, a, 1);
    bb.post(rig, b, 2);
    bw.post(rig, wrong_key, 3);
    bo.post(rig, outsider, 4);

    std::vector<uint8_t> data = pattern(100);
    deliver_mcast(rig, g, data);

    for (auto [qp, buf, wr_id] : {std::tuple{&a, &ba, 1}, std::tuple{&b, &bb, 2}}) {
        auto wcs = expect_wcs(*qp->recv_cq,
                              {{.wr_id = static_cast<uint64_t>(wr_id), .opcode = IBV_WC_RECV}});
        CHECK(wcs[0].qp_num == qp->qpn);
        CHECK(wcs[0].src_qp == kSenderQpn);
        CHECK((wcs[0].wc_flags & IBV_WC_GRH));
        CHECK(wcs[0].sl == 0xA); // RoCE v2 (UDP), IPv4 header in the GRH area, as mlx5 says
        CHECK(wcs[0].byte_len == 40 + data.size());
        CHECK(bytes_of(buf->bytes, 40, data.size()) == data);
        // The GRH (RoCE v2 over IPv4: 20 unused bytes, the IPv4 header) names the group as the
        // destination and the sender as the source.
        CHECK(buf->bytes[20] == 0x45);
        CHECK(buf->ip_dst() == ipv4("239.1.2.3"));
        CHECK(buf->ip_src() == ipv4(kPeerAddress));
    }
    CHECK(Rig::poll(*wrong_key.recv_cq).empty());
    CHECK(wrong_key.counters.qkey_violations == 1);
    CHECK(Rig::poll(*outsider.recv_cq).empty());
    CHECK(outsider.counters.rx_packets == 0);
    const nicsim::McastCounters& c = rig.nic.mcast_counters();
    CHECK(c.rx_packets == 1);
    CHECK(c.rx_delivered == 3);
    CHECK(c.no_member == 0);
}

TEST_CASE("ud: a datagram's completion names its network header in wc.sl as mlx5 does", "[ud]") {
    // UCX (uct_ud_iface_check_grh) takes (wc.sl & 7) == 2 to mean an IPv4 header at byte 20 of
    // the GRH area, anything else a GRH or IPv6 header with the DGID at byte 24; bit 3 says UDP.
    Rig rig;
    Qp& qp = ud_qp(rig);
    RecvBuf buf;
    buf.post(rig, qp, 9);
    std::vector<uint8_t> data = pattern(64);
    wire::Headers h;
    h.opcode = wire::opcode::kUdSendOnly;
    h.dest_qpn = qp.qpn;
    h.psn = 1;
    h.deth = {kQkey, kSenderQpn};
    std::vector<uint8_t> pkt(wire::packet_length(h.opcode, data.size()));
    REQUIRE(wire::build(h, data.data(), data.size(), pkt.data()) == pkt.size());
    wire::Headers parsed;
    const uint8_t* p = nullptr;
    size_t plen = 0;
    REQUIRE(wire::parse(pkt.data(), pkt.size(), parsed, &p, &plen) == wire::ParseResult::Ok);
    nicsim::ud::receive(rig.env, qp, address(kPeerAddress), address("127.0.9.1"), parsed, p, plen,
                        pkt.size());
    rig.env.drain();
    auto wcs = expect_wcs(*qp.recv_cq, {{}});
    CHECK((wcs[0].sl & 0x7) == 0x2);
    CHECK((wcs[0].sl & 0x8) == 0x8);
    CHECK(buf.bytes[20] == 0x45);
    CHECK(buf.ip_dst() == ipv4("127.0.9.1"));
    CHECK(bytes_of(buf.bytes, 40, data.size()) == data);
}

TEST_CASE("mcast: after detach a QP gets nothing; no member is a counted drop", "[mcast]") {
    Rig rig;
    Qp& a = ud_qp(rig);
    Qp& b = ud_qp(rig);
    const Mgid g = ff_mgid();
    REQUIRE(attach(rig, a, g) == 0);
    REQUIRE(attach(rig, b, g) == 0);
    RecvBuf ba, bb;
    ba.post(rig, a, 1);
    bb.post(rig, b, 2);

    REQUIRE(detach(rig, a, g) == 0);
    deliver_mcast(rig, g, pattern(8));
    CHECK(Rig::poll(*a.recv_cq).empty());
    CHECK(Rig::poll(*b.recv_cq).size() == 1);
    // An ff00::/8 group has no IPv4 address: the GRH shows the MGID's low 32 bits.
    CHECK(bb.ip_dst() == 0);

    REQUIRE(detach(rig, b, g) == 0);
    bb.post(rig, b, 3);
    deliver_mcast(rig, g, pattern(8));
    deliver_mcast(rig, ff_mgid(5), pattern(8)); // a group nobody ever joined
    CHECK(Rig::poll(*a.recv_cq).empty());
    CHECK(Rig::poll(*b.recv_cq).empty());
    CHECK(rig.nic.mcast_counters().rx_packets == 3);
    CHECK(rig.nic.mcast_counters().no_member == 2);
    CHECK(rig.nic.mcast_counters().rx_delivered == 1);
}

TEST_CASE("mcast: a QP not yet ready to receive drops the group's packet", "[mcast]") {
    Rig rig;
    Cq& cq = rig.create_cq();
    ipc::CreateQpReq q{};
    q.pd = rig.pd;
    q.send_cq = q.recv_cq = cq.handle;
    q.qp_type = IBV_QPT_UD;
    q.cap = {4, 4, 1, 1, 0};
    ipc::CreateQpReply r{};
    REQUIRE(nicsim::create_qp(rig.ctx, q, r) == 0);
    rig.ctx.pass_fds.clear();
    Qp& reset = *rig.objects.qps.get(r.handle);
    const Mgid g = ff_mgid();
    CHECK(attach(rig, reset, g) == 0); // attaching in RESET is allowed, as with the kernel
    RecvBuf buf;
    buf.post(rig, reset, 1);
    deliver_mcast(rig, g, pattern(8));
    CHECK(Rig::poll(cq).empty());
}

TEST_CASE("mcast: a send to a multicast AH goes to the group with DestQP 0xFFFFFF", "[mcast]") {
    Rig rig;
    Qp& sender = ud_qp(rig);
    const Mgid g = v4_group("224.0.0.7");
    ipc::CreateAhReq ahq{};
    ahq.pd = rig.pd;
    ahq.attr.is_global = 1;
    ahq.attr.port_num = 1;
    ahq.attr.dlid = 0; // perftest's MLID on Ethernet
    std::memcpy(ahq.attr.grh.dgid.raw, g.data(), 16);
    ipc::HandleReply ahr{};
    REQUIRE(nicsim::create_ah(rig.ctx, ahq, ahr) == 0); // a multicast DGID is a valid AH

    std::vector<uint8_t> data = pattern(64, 3);
    Mr& mr = rig.reg_mr(data.data(), data.size(), 0);
    ipc::SendWqe w = wqe(7, IBV_WR_SEND);
    w.ah = ahr.handle;
    w.remote_qpn = 0x123; // not 0xFFFFFF: the NIC still sends to the multicast QPN
    w.remote_qkey = kQkey;
    rig.post_send(sender, w, {sge(data.data(), data.size(), mr)});

    auto sent = rig.env.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].multicast);
    CHECK(sent[0].mgid == g);
    CHECK(sent[0].dst_addr == ipv4("224.0.0.7"));
    CHECK(sent[0].h.opcode == wire::opcode::kUdSendOnly);
    CHECK(sent[0].h.dest_qpn == wire::kMulticastQpn);
    CHECK(sent[0].h.deth.qkey == kQkey);
    CHECK(sent[0].h.deth.src_qpn == sender.qpn);
    CHECK(sent[0].payload == data);
    CHECK(rig.nic.mcast_counters().tx_packets == 1);
    expect_wcs(*sender.send_cq, {{}});

    // The same packet back from the fabric (local loopback): the sender receives its own
    // multicast when it is attached, as rxe's receive path delivers to every attached QP.
    REQUIRE(attach(rig, sender, g) == 0);
    RecvBuf buf;
    buf.post(rig, sender, 9);
    wire::Headers h;
    const uint8_t* p = nullptr;
    size_t plen = 0;
    REQUIRE(wire::parse(sent[0].bytes.data(), sent[0].bytes.size(), h, &p, &plen) ==
            wire::ParseResult::Ok);
    nicsim::ud::receive_multicast(rig.env, rig.nic.device().config().address,
                                  wire::multicast_group_address(g.data(), false), g.data(), h, p,
                                  plen, sent[0].bytes.size());
    auto got = Rig::poll(*sender.recv_cq);
    REQUIRE(got.size() == 1);
    CHECK(got[0].src_qp == sender.qpn);
    CHECK(bytes_of(buf.bytes, 40, data.size()) == data);
    CHECK(buf.ip_dst() == ipv4("224.0.0.7"));
}
