// Raw packet QPs and flow steering: frames sent by one raw QP loop back through the NIC's
// flows to the QPs they name (docs/features.md); RSS QPs spread them over work queues by the
// Toeplitz hash.
#include "protocol_rig.h"

#include "emu/flow_match.h"

#include <set>

using namespace proto;
using nicsim::Wq;

namespace {

const uint8_t kDstMac[6] = {0x01, 0x50, 0x56, 0x19, 0x20, 0xa7};

// Ethernet | IPv4 | UDP | payload, `len` bytes in all.
std::vector<uint8_t> frame(size_t len = 128, uint8_t src_last = 1, uint8_t dst_mac_last = 0xa7) {
    std::vector<uint8_t> f(len, 'a');
    std::memcpy(f.data(), kDstMac, 6);
    f[5] = dst_mac_last;
    const uint8_t src_mac[6] = {0x24, 0x8a, 0x07, 0xa5, 0x28, 0xc8};
    std::memcpy(f.data() + 6, src_mac, 6);
    f[12] = 0x08;
    f[13] = 0x00;
    uint8_t* ip = f.data() + 14;
    std::memset(ip, 0, 28);
    ip[0] = 0x45;
    ip[2] = static_cast<uint8_t>((len - 14) >> 8);
    ip[3] = static_cast<uint8_t>(len - 14);
    ip[8] = 64;
    ip[9] = emu::flow::kProtoUdp;
    const uint8_t src[4] = {1, 1, 1, src_last}, dst[4] = {2, 2, 2, 2};
    std::memcpy(ip + 12, src, 4);
    std::memcpy(ip + 16, dst, 4);
    ip[20] = 0x04; // source port 1234
    ip[21] = 0xd2;
    ip[22] = 0x16; // destination port 5678
    ip[23] = 0x2e;
    return f;
}

ibv_flow_spec_eth eth_spec() {
    ibv_flow_spec_eth s{};
    s.type = IBV_FLOW_SPEC_ETH;
    s.size = sizeof s;
    std::memcpy(s.val.dst_mac, kDstMac, 6);
    std::memset(s.mask.dst_mac, 0xff, 6);
    return s;
}

ibv_flow_spec_ipv4_ext ipv4_spec() {
    ibv_flow_spec_ipv4_ext s{};
    s.type = IBV_FLOW_SPEC_IPV4_EXT;
    s.size = sizeof s;
    s.val.dst_ip = ipv4("2.2.2.2");
    s.mask.dst_ip = 0xffffffff;
    return s;
}

// ibv_create_qp's request for a raw packet QP on the rig's PD.
ipc::CreateQpReq raw_qp_req(const Rig& rig, const Cq& scq, const Cq& rcq) {
    ipc::CreateQpReq q{};
    q.pd = rig.pd;
    q.send_cq = scq.handle;
    q.recv_cq = rcq.handle;
    q.qp_type = IBV_QPT_RAW_PACKET;
    q.cap = {16, 16, 2, 2, 64};
    return q;
}

// A raw packet QP with its own CQs, taken to `state` with the masks the suite uses (INIT: the
// port; RTR and RTS: the state alone).
Qp& raw_qp(Rig& rig, ibv_qp_state state = IBV_QPS_RTS) {
    Cq& scq = rig.create_cq();
    Cq& rcq = rig.create_cq();
    ipc::CreateQpReply r{};
    REQUIRE(nicsim::create_qp(rig.ctx, raw_qp_req(rig, scq, rcq), r) == 0);
    Qp& qp = *rig.objects.qps.get(r.handle);
    ipc::Empty e;
    ipc::ModifyQpReq m{};
    m.qp = qp.handle;
    m.attr.qp_state = IBV_QPS_INIT;
    m.attr.port_num = 1;
    m.mask = IBV_QP_STATE | IBV_QP_PORT;
    REQUIRE(nicsim::modify_qp(rig.ctx, m, e) == 0);
    for (ibv_qp_state s : {IBV_QPS_RTR, IBV_QPS_RTS}) {
        if (s > state) break;
        m.attr = {};
        m.attr.qp_state = s;
        m.mask = IBV_QP_STATE;
        REQUIRE(nicsim::modify_qp(rig.ctx, m, e) == 0);
    }
    return qp;
}

// ibv_create_flow's request with the specs given; the NIC's answer.
struct FlowReq {
    ipc::CreateFlowReq req{};
    explicit FlowReq(const Qp& qp) {
        req.qp = qp.handle;
        req.type = IBV_FLOW_ATTR_NORMAL;
        req.port = 1;
    }
    template <typename S> FlowReq& add(const S& s) {
        std::memcpy(req.specs + req.spec_bytes, &s, sizeof s);
        req.spec_bytes += sizeof s;
        ++req.num_of_specs;
        return *this;
    }
    int create(Rig& rig, uint32_t* handle = nullptr) {
        ipc::HandleReply r{};
        int err = nicsim::create_flow(rig.ctx, req, r);
        if (handle) *handle = r.handle;
        return err;
    }
};

uint32_t flow(Rig& rig, const Qp& qp) {
    uint32_t h = 0;
    REQUIRE(FlowReq(qp).add(eth_spec()).create(rig, &h) == 0);
    return h;
}

// Sends `f` from `qp` (as ibv_post_send with one SGE) and runs the NIC.
void send_frame(Rig& rig, Qp& qp, const std::vector<uint8_t>& f, uint64_t wr_id = 1,
                ibv_wr_opcode opcode = IBV_WR_SEND) {
    Mr& mr = rig.reg_mr(f.data(), f.size(), 0);
    rig.post_send(qp, wqe(wr_id, opcode), {sge(f.data(), f.size(), mr)});
}

const nicsim::RawCounters& counters(Rig& rig) {
    return rig.nic.raw_counters();
}

} // namespace

TEST_CASE("raw: a frame a flow matches arrives whole at that QP, the sender's WR completes",
          "[raw]") {
    Rig rig;
    Qp& a = raw_qp(rig);
    Qp& b = raw_qp(rig);
    flow(rig, b);
    std::vector<uint8_t> buf(256, 0);
    Mr& mr = rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    rig.post_recv(b, 7, {sge(buf.data(), buf.size(), mr)});
    rig.post_recv(a, 8, {sge(buf.data(), buf.size(), mr)}); // the sender has no flow

    auto f = frame(200);
    send_frame(rig, a, f);
    auto sent = expect_wcs(*a.send_cq, {{.opcode = IBV_WC_SEND}});
    auto got = expect_wcs(*b.recv_cq, {{.wr_id = 7, .opcode = IBV_WC_RECV}});
    CHECK(got[0].qp_num == b.qpn);
    CHECK(got[0].byte_len == f.size());
    CHECK(bytes_of(buf, 0, f.size()) == f);
    CHECK(Rig::poll(*a.recv_cq).empty());
    CHECK(rig.env.sent.empty()); // nothing on the wire: the port loops frames back
    CHECK(counters(rig).tx_frames == 1);
    CHECK(counters(rig).delivered == 1);
}

TEST_CASE("raw: frames no flow matches, or that find no receive, are dropped and counted",
          "[raw]") {
    Rig rig;
    Qp& a = raw_qp(rig);
    Qp& b = raw_qp(rig);
    flow(rig, b);
    send_frame(rig, a, frame(128, 1, 0xa8), 1); // another destination MAC
    CHECK(counters(rig).no_flow_drops == 1);
    send_frame(rig, a, frame(), 2); // matches, but b posted no receive
    CHECK(counters(rig).no_wqe_drops == 1);
    CHECK(b.counters.rx_no_wqe == 1);
    auto sent = Rig::poll(*a.send_cq);
    REQUIRE(sent.size() == 2); // sending succeeds either way: Ethernet has no receipts
    CHECK(sent[0].status == IBV_WC_SUCCESS);
    CHECK(sent[1].status == IBV_WC_SUCCESS);
    CHECK(Rig::poll(*b.recv_cq).empty());

    // A QP still in INIT receives nothing either, even with a receive posted.
    Qp& c = raw_qp(rig, IBV_QPS_INIT);
    flow(rig, c);
    std::vector<uint8_t> buf(256);
    Mr& mr = rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    rig.post_recv(c, 9, {sge(buf.data(), buf.size(), mr)});
    send_frame(rig, a, frame(), 3);
    CHECK(Rig::poll(*c.recv_cq).empty());
    CHECK(c.counters.rx_no_wqe == 1);
}

TEST_CASE("raw: every QP with a matching flow gets one copy", "[raw]") {
    Rig rig;
    Qp& a = raw_qp(rig);
    Qp& b = raw_qp(rig);
    Qp& c = raw_qp(rig);
    flow(rig, b);
    REQUIRE(FlowReq(b).add(ipv4_spec()).create(rig) == 0); // a second rule, same QP
    REQUIRE(FlowReq(c).add(eth_spec()).add(ipv4_spec()).create(rig) == 0);
    std::vector<uint8_t> buf(512);
    Mr& mr = rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    for (uint64_t i = 0; i < 2; ++i) {
        rig.post_recv(b, 10 + i, {sge(&buf[i * 128], 128, mr)});
        rig.post_recv(c, 20 + i, {sge(&buf[256 + i * 128], 128, mr)});
    }
    auto f = frame(100);
    send_frame(rig, a, f);
    CHECK(Rig::poll(*b.recv_cq).size() == 1);
    CHECK(Rig::poll(*c.recv_cq).size() == 1);
    CHECK(bytes_of(buf, 0, f.size()) == f);
    CHECK(bytes_of(buf, 256, f.size()) == f);
    CHECK(counters(rig).delivered == 2);
}

TEST_CASE("raw: a flow holds its QP; once destroyed, its frames are no longer steered", "[raw]") {
    Rig rig;
    Qp& a = raw_qp(rig);
    Qp& b = raw_qp(rig);
    uint32_t h = flow(rig, b);
    ipc::Empty e;
    CHECK(nicsim::destroy_qp(rig.ctx, {b.handle, 0}, e) == EBUSY);
    CHECK(rig.ctx.reason.find("still used by 1 flow(s) steering to it") != std::string::npos);
    REQUIRE(nicsim::destroy_flow(rig.ctx, {h, 0}, e) == 0);
    CHECK(nicsim::destroy_flow(rig.ctx, {h, 0}, e) == ENOENT);
    CHECK(rig.nic.flows().empty());
    send_frame(rig, a, frame());
    CHECK(counters(rig).no_flow_drops == 1);
    uint32_t bh = b.handle;
    CHECK(nicsim::destroy_qp(rig.ctx, {bh, 0}, e) == 0);

    // Session teardown frees flows before their QPs.
    flow(rig, a);
    free_session_objects(rig.nic, rig.objects);
    CHECK(rig.nic.flows().empty());
    CHECK(rig.objects.count() == 0);
}

TEST_CASE("raw: create_flow checks the QP, the attr and the specs like the kernel", "[raw]") {
    Rig rig;
    Qp& raw = raw_qp(rig);
    Qp& rc = rig.create_qp();
    CHECK(FlowReq(rc).add(eth_spec()).create(rig) == EINVAL); // not a raw packet QP
    FlowReq unknown(raw);
    unknown.req.qp = 999;
    CHECK(unknown.create(rig) == EINVAL);
    FlowReq port(raw);
    port.req.port = 2;
    CHECK(port.add(eth_spec()).create(rig) == EINVAL);
    FlowReq sniffer(raw);
    sniffer.req.type = IBV_FLOW_ATTR_SNIFFER;
    CHECK(sniffer.create(rig) == EOPNOTSUPP);
    FlowReq dont_trap(raw);
    dont_trap.req.flags = IBV_FLOW_ATTR_FLAGS_DONT_TRAP;
    CHECK(dont_trap.create(rig) == EOPNOTSUPP);
    FlowReq bad_flags(raw);
    bad_flags.req.flags = 1u << 20;
    CHECK(bad_flags.create(rig) == EINVAL);
    FlowReq comp(raw);
    comp.req.comp_mask = 1;
    CHECK(comp.create(rig) == EINVAL);
    ibv_flow_spec_tunnel vxlan{};
    vxlan.type = IBV_FLOW_SPEC_VXLAN_TUNNEL;
    vxlan.size = sizeof vxlan;
    CHECK(FlowReq(raw).add(vxlan).create(rig) == EOPNOTSUPP);
    FlowReq oversized(raw);
    oversized.req.spec_bytes = ipc::kMaxFlowSpecBytes + 1; // a lie about the buffer
    CHECK(oversized.create(rig) == EINVAL);
    FlowReq miscounted(raw);
    miscounted.add(eth_spec()).req.num_of_specs = 2;
    CHECK(miscounted.create(rig) == EINVAL);
    CHECK(rig.objects.flows.empty());
}

TEST_CASE("raw: a runt frame, a non-SEND opcode and a short receive complete with errors",
          "[raw]") {
    Rig rig;
    Qp& a = raw_qp(rig);
    std::vector<uint8_t> runt(13, 1);
    send_frame(rig, a, runt, 1);
    expect_wcs(*a.send_cq, {{.status = IBV_WC_LOC_LEN_ERR}});

    Qp& b = raw_qp(rig);
    send_frame(rig, b, frame(), 2, IBV_WR_RDMA_WRITE);
    expect_wcs(*b.send_cq, {{.status = IBV_WC_LOC_QP_OP_ERR}});

    Qp& c = raw_qp(rig);
    Qp& d = raw_qp(rig);
    flow(rig, d);
    std::vector<uint8_t> buf(64);
    Mr& mr = rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    rig.post_recv(d, 3, {sge(buf.data(), buf.size(), mr)});
    send_frame(rig, c, frame(128), 4);
    expect_wcs(*d.recv_cq, {{.status = IBV_WC_LOC_LEN_ERR}});
}

TEST_CASE("raw: without CAP_NET_RAW, raw packet QPs, RSS QPs and flows are EPERM", "[raw]") {
    Rig rig;
    Qp& raw = raw_qp(rig); // made while the session could
    rig.ctx.net_raw = false;
    Cq& cq = rig.create_cq();
    ipc::CreateQpReq q = raw_qp_req(rig, cq, cq);
    ipc::CreateQpReply r{};
    size_t qps = rig.objects.qps.size();
    CHECK(nicsim::create_qp(rig.ctx, q, r) == EPERM);
    ipc::CreateRssQpReq rss{};
    rss.pd = rig.pd;
    CHECK(nicsim::create_rss_qp(rig.ctx, rss, r) == EPERM);
    CHECK(rig.objects.qps.size() == qps);
    CHECK(FlowReq(raw).add(eth_spec()).create(rig) == EPERM);
    FlowReq comp(raw); // the kernel's order: comp_mask before the capability
    comp.req.comp_mask = 1;
    CHECK(comp.create(rig) == EINVAL);
    CHECK(rig.objects.flows.empty());
    q.qp_type = IBV_QPT_UD; // other QP types need no capability
    CHECK(nicsim::create_qp(rig.ctx, q, r) == 0);
}

TEST_CASE("rss: frames spread over the WQs by the Toeplitz hash; WQ states gate receives",
          "[raw][rss]") {
    Rig rig;
    Qp& sender = raw_qp(rig);
    Cq& cq0 = rig.create_cq();
    Cq& cq1 = rig.create_cq();
    ipc::Empty e;
    std::vector<Wq*> wqs;
    for (int i = 0; i < 4; ++i) {
        ipc::CreateWqReq q{rig.pd, (i % 2 ? cq1 : cq0).handle, IBV_WQT_RQ, 8, 1, 0, 0, 0};
        ipc::CreateWqReply r{};
        REQUIRE(nicsim::create_wq(rig.ctx, q, r) == 0);
        Wq& wq = *rig.objects.wqs.get(r.handle);
        CHECK(r.wq_num == wq.wq_num);
        if (i != 3)
            REQUIRE(nicsim::modify_wq(rig.ctx, {wq.handle, IBV_WQ_ATTR_STATE, IBV_WQS_RDY, 0, 0, 0},
                                      e) == 0);
        wqs.push_back(&wq);
    }
    ipc::CreateRwqIndTableReq t{};
    t.log_size = 2;
    for (int i = 0; i < 4; ++i)
        t.wqs[i] = wqs[size_t(i)]->handle;
    ipc::CreateRwqIndTableReply tr{};
    REQUIRE(nicsim::create_rwq_ind_table(rig.ctx, t, tr) == 0);
    ipc::CreateRssQpReq rq{};
    rq.pd = rig.pd;
    rq.ind_table = tr.handle;
    rq.hash_function = IBV_RX_HASH_FUNC_TOEPLITZ;
    rq.key_len = 40;
    for (int i = 0; i < 40; ++i)
        rq.key[i] = static_cast<uint8_t>(i * 37 + 11);
    rq.fields_mask = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4;
    ipc::CreateQpReply qr{};
    REQUIRE(nicsim::create_rss_qp(rig.ctx, rq, qr) == 0);
    Qp& rss = *rig.objects.qps.get(qr.handle);
    CHECK(qr.sq_entries == 0);
    CHECK(qr.rq_entries == 0);
    REQUIRE(FlowReq(rss).add(eth_spec()).create(rig) == 0);

    // An RSS QP has no queues to modify; what it uses cannot go while it does.
    ipc::ModifyQpReq m{};
    m.qp = rss.handle;
    m.attr.qp_state = IBV_QPS_INIT;
    m.attr.port_num = 1;
    m.mask = IBV_QP_STATE | IBV_QP_PORT;
    CHECK(nicsim::modify_qp(rig.ctx, m, e) == EOPNOTSUPP);
    CHECK(nicsim::destroy_rwq_ind_table(rig.ctx, {tr.handle, 0}, e) == EBUSY);
    CHECK(nicsim::destroy_wq(rig.ctx, {wqs[0]->handle, 0}, e) == EBUSY);

    std::vector<uint8_t> buf(4 * 256);
    Mr& mr = rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    std::set<size_t> used;
    uint64_t no_wqe = 0;
    for (uint8_t src = 1; src <= 16; ++src) {
        auto f = frame(96, src);
        emu::flow::Frame fields;
        REQUIRE(emu::flow::parse_frame(f.data(), f.size(), fields));
        size_t want = emu::flow::rss_hash(rq.key, rq.key_len, rq.fields_mask, fields) & 3;
        used.insert(want);
        Wq& wq = *wqs[want];
        rig.post_to(wq.ring, 100 + src, {sge(&buf[want * 256], 256, mr)});
        send_frame(rig, sender, f, src);
        Cq& cq = want % 2 ? cq1 : cq0;
        auto wc = Rig::poll(cq);
        if (want == 3) { // still in RESET: the frame is dropped, the receive stays posted
            CHECK(wc.empty());
            ++no_wqe;
            CHECK(counters(rig).no_wqe_drops == no_wqe);
            continue;
        }
        REQUIRE(wc.size() == 1);
        CHECK(wc[0].status == IBV_WC_SUCCESS);
        CHECK(wc[0].wr_id == 100u + src);
        CHECK(wc[0].qp_num == wq.wq_num);
        CHECK(bytes_of(buf, want * 256, f.size()) == f);
        CHECK(Rig::poll(want % 2 ? cq0 : cq1).empty());
    }
    CHECK(used.size() > 1); // sixteen source addresses do not all hash alike

    // RDY -> ERR flushes the posted receives to the WQ's CQ.
    rig.post_to(wqs[0]->ring, 77, {sge(buf.data(), 64, mr)});
    REQUIRE(nicsim::modify_wq(rig.ctx, {wqs[0]->handle, IBV_WQ_ATTR_STATE, IBV_WQS_ERR, 0, 0, 0},
                              e) == 0);
    expect_wcs(cq0, {{.wr_id = 77, .status = IBV_WC_WR_FLUSH_ERR}});
    // ERR -> RDY is not a transition; ERR -> RESET -> RDY is.
    CHECK(nicsim::modify_wq(rig.ctx, {wqs[0]->handle, IBV_WQ_ATTR_STATE, IBV_WQS_RDY, 0, 0, 0},
                            e) == EINVAL);
    CHECK(nicsim::modify_wq(rig.ctx, {wqs[0]->handle, IBV_WQ_ATTR_STATE, IBV_WQS_RESET, 0, 0, 0},
                            e) == 0);

    free_session_objects(rig.nic, rig.objects);
    CHECK(rig.objects.count() == 0);
}
