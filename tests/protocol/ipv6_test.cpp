// A host on an IPv6 address (issue 16): the GID table a RoCE v2 port shows (nic/device.h), the
// address vectors the NIC takes and refuses, where an RC QP's packets go, and the IPv6 header
// a UD receive finds in its 40-byte GRH area.
#include "emu/wire/ip_address.h"
#include "protocol_rig.h"
#include "transport/ud.h"

using namespace proto;

namespace {

constexpr const char* kSelf6 = "fd00:214::1";
constexpr const char* kPeer6 = "fd00:214::2";

struct Gid {
    bool valid;
    std::string text;
    uint32_t type;
};

Gid query(Rig& rig, uint32_t index) {
    ipc::QueryGidReply r{};
    REQUIRE(nicsim::query_gid(rig.ctx, {1, index}, r) == 0);
    return {r.valid != 0, wire::IpAddress::from_gid(r.gid).gid_text(), r.gid_type};
}

// Creates an AH to `dgid` from GID `sgid_index`: the errno, and why when refused.
std::pair<int, std::string> make_ah(Rig& rig, const char* dgid, uint8_t sgid_index = 0) {
    ipc::CreateAhReq q{};
    q.pd = rig.pd;
    q.attr.is_global = 1;
    q.attr.port_num = 1;
    q.attr.grh.sgid_index = sgid_index;
    q.attr.grh.hop_limit = 64;
    std::memcpy(q.attr.grh.dgid.raw, address(dgid).data(), 16);
    ipc::HandleReply r{};
    rig.ctx.reason.clear();
    int err = nicsim::create_ah(rig.ctx, q, r);
    return {err, rig.ctx.reason};
}

} // namespace

TEST_CASE("gid table: an IPv4 host lists its IPv4-mapped GID at index 0 and nothing else",
          "[gid]") {
    Rig rig("10.213.7.1");
    Gid g0 = query(rig, 0);
    CHECK(g0.valid);
    CHECK(g0.text == "::ffff:10.213.7.1");
    CHECK(g0.type == IBV_GID_TYPE_ROCE_V2);
    for (uint32_t i = 1; i < 16; ++i) {
        INFO("index " << i);
        CHECK_FALSE(query(rig, i).valid);
    }
    ipc::QueryGidReply r{};
    CHECK(nicsim::query_gid(rig.ctx, {1, 16}, r) == EINVAL); // past gid_tbl_len
    CHECK(nicsim::query_gid(rig.ctx, {2, 0}, r) == EINVAL);  // no port 2
    CHECK(rig.nic.device().port_attr().gid_tbl_len == 16);
}

TEST_CASE("gid table: an IPv6 host lists its address at index 0, its link-local GID at 1",
          "[gid][ipv6]") {
    Rig rig(kSelf6);
    Gid g0 = query(rig, 0);
    CHECK(g0.valid);
    CHECK(g0.text == kSelf6);
    CHECK(g0.type == IBV_GID_TYPE_ROCE_V2);
    // The MAC is 02:52 and the address's last four bytes (00:00:00:01); its modified EUI-64
    // (RFC 4291 appendix A: ff:fe in the middle, the universal/local bit inverted) after fe80::.
    Gid g1 = query(rig, 1);
    CHECK(g1.valid);
    CHECK(g1.text == "fe80::52:ff:fe00:1");
    CHECK(g1.type == IBV_GID_TYPE_ROCE_V2);
    for (uint32_t i = 2; i < 16; ++i)
        CHECK_FALSE(query(rig, i).valid);
    // The node GUID is the same EUI-64, universal/local bit as is.
    uint8_t guid[8];
    const uint64_t node_guid = rig.nic.device().node_guid();
    std::memcpy(guid, &node_guid, 8);
    CHECK(std::vector<uint8_t>(guid, guid + 8) ==
          std::vector<uint8_t>{0x02, 0x52, 0x00, 0xff, 0xfe, 0x00, 0x00, 0x01});
}

TEST_CASE("address vectors: an IPv6 host sends from its address to IPv6 GIDs only, and says why",
          "[gid][ipv6]") {
    Rig rig(kSelf6);
    CHECK(make_ah(rig, kPeer6).first == 0);
    CHECK(make_ah(rig, "ff0e::1:2").first == 0); // a multicast group: no family to match
    auto [err, why] = make_ah(rig, kPeer6, 1);
    CHECK(err == EINVAL);
    CHECK(why == "attr.grh.sgid_index 1 is the link-local GID fe80::52:ff:fe00:1, listed as a "
                 "real port lists its interface's; this emulated host sends from its address "
                 "alone: use index 0 (fd00:214::1)");
    std::tie(err, why) = make_ah(rig, kPeer6, 2);
    CHECK(err == EINVAL);
    CHECK(why == "attr.grh.sgid_index 2 names no GID: emu0 has 2 (fd00:214::1 at index 0)");
    std::tie(err, why) = make_ah(rig, "10.213.7.2");
    CHECK(err == EINVAL);
    CHECK(why == "attr.grh.dgid ::ffff:10.213.7.2 is an IPv4 GID and emu0's GID fd00:214::1 is "
                 "IPv6: an emulated host reaches hosts of its own IP version only");
}

TEST_CASE("address vectors: an IPv4 host refuses an IPv6 destination and a second GID index",
          "[gid][ipv6]") {
    Rig rig;
    CHECK(make_ah(rig, kPeerAddress).first == 0);
    auto [err, why] = make_ah(rig, kPeer6);
    CHECK(err == EINVAL);
    CHECK(why == "attr.grh.dgid fd00:214::2 is an IPv6 GID and emu0's GID ::ffff:127.0.0.1 is "
                 "IPv4: an emulated host reaches hosts of its own IP version only");
    std::tie(err, why) = make_ah(rig, kPeerAddress, 1);
    CHECK(err == EINVAL);
    CHECK(why == "attr.grh.sgid_index 1 names no GID: emu0 has one (::ffff:127.0.0.1 at index 0)");
    // The QP's path too: the same check at INIT -> RTR.
    QpOptions o;
    o.state = IBV_QPS_INIT;
    Qp& qp = rig.create_qp(o);
    ipc::ModifyQpReq m{};
    ipc::Empty e;
    m.qp = qp.handle;
    m.attr.qp_state = IBV_QPS_RTR;
    m.attr.path_mtu = IBV_MTU_1024;
    m.attr.dest_qp_num = kPeerQpn;
    m.attr.ah_attr.is_global = 1;
    m.attr.ah_attr.port_num = 1;
    std::memcpy(m.attr.ah_attr.grh.dgid.raw, address(kPeer6).data(), 16);
    m.mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
             IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    rig.ctx.reason.clear();
    CHECK(nicsim::modify_qp(rig.ctx, m, e) == EINVAL);
    CHECK(rig.ctx.reason.find("ah_attr.grh.dgid fd00:214::2 is an IPv6 GID") != std::string::npos);
}

TEST_CASE("ipv6: an RC QP's packets go to its peer's IPv6 address", "[ipv6]") {
    Rig rig(kSelf6);
    QpOptions o;
    o.peer_address = kPeer6;
    Qp& qp = rig.create_qp(o);
    auto data = pattern(100);
    Mr& mr = rig.reg_mr(data.data(), data.size(), 0);
    rig.post_send(qp, wqe(1, IBV_WR_SEND), {sge(data.data(), data.size(), mr)});
    auto sent = rig.env.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].dst == address(kPeer6));
    CHECK(sent[0].dst_addr == 0);
    CHECK(sent[0].payload == data);
}

// RoCE v2 over IPv6: the receive buffer's first 40 bytes are the packet's IPv6 header, which has
// the GRH's layout (IBA A17.4.5.1); wc.sl says so as mlx5 does (RoCE v2, L3 type 1: IPv6).
TEST_CASE("ipv6: a UD receive's GRH area holds the packet's IPv6 header", "[ipv6][ud]") {
    Rig rig(kSelf6);
    Qp& qp = ud_qp(rig, 0x11111111, 0);
    auto data = pattern(32);
    std::vector<uint8_t> buf(40 + 64, 0);
    Mr& rmr = rig.reg_mr(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    rig.post_recv(qp, 2, {sge(buf.data(), buf.size(), rmr)});
    wire::Headers h;
    h.opcode = wire::opcode::kUdSendOnly;
    h.dest_qpn = qp.qpn;
    h.deth = {0x11111111, 0x77};
    nicsim::IpFields ip;
    ip.tos = 0xb8;
    ip.ttl = 61;
    ip.flow_label = 0xabcde;
    const size_t udp_payload = 12 + 8 + data.size() + 4;
    nicsim::ud::receive(rig.env, qp, address(kPeer6), address(kSelf6), h, data.data(), data.size(),
                        udp_payload, ip);
    auto wcs = expect_wcs(*qp.recv_cq, {{.byte_len = 40 + 32}});
    CHECK(wcs[0].sl == 0x9);
    CHECK((wcs[0].wc_flags & IBV_WC_GRH) != 0);
    CHECK(buf[0] == 0x6b); // version 6, traffic class 0xb8, flow label 0xabcde
    CHECK(buf[1] == 0x8a);
    CHECK(buf[2] == 0xbc);
    CHECK(buf[3] == 0xde);
    CHECK(static_cast<size_t>(buf[4] << 8 | buf[5]) == 8 + udp_payload); // the UDP datagram
    CHECK(buf[6] == 17);
    CHECK(buf[7] == 61);
    CHECK(std::memcmp(&buf[8], address(kPeer6).data(), 16) == 0);
    CHECK(std::memcmp(&buf[24], address(kSelf6).data(), 16) == 0);
    CHECK(bytes_of(buf, 40, 32) == data);
}
