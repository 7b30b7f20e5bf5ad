#include "emu/wire/cm_mad.h"
#include "emu/wire/ip_cm.h"

#include <catch2/catch.hpp>

#include <arpa/inet.h>

#include <cstring>
#include <random>
#include <vector>

using namespace emu::wire;
using Bytes = std::vector<uint8_t>;

namespace {

Bytes mad_of(const auto& msg, uint64_t tid = 0x0000000112345678ull) {
    Bytes b(cm::kMadSize, 0xEE);
    cm::encode(msg, tid, b.data());
    return b;
}

cm::Gid gid(const char* ipv4) {
    cm::Gid g{};
    g[10] = g[11] = 0xff;
    uint32_t a = inet_addr(ipv4);
    std::memcpy(g.data() + 12, &a, 4);
    return g;
}

template <typename T> T bits(std::mt19937_64& rng, unsigned width) {
    return static_cast<T>(rng() & ((width >= 64 ? 0 : 1ull << width) - 1));
}

} // namespace

TEST_CASE("a REQ lands where IBA table 106 and Wireshark put its fields") {
    cm::Req r;
    r.local_comm_id = 0x12345678;
    r.service_id = ipcm::service_id(ipcm::kPsTcp, 7174);
    r.local_ca_guid = 0x0252007f00030100ull;
    r.local_qpn = 0xabcdef;
    r.responder_resources = 1;
    r.initiator_depth = 1;
    r.remote_cm_response_timeout = 20;
    r.starting_psn = 0x123456;
    r.local_cm_response_timeout = 20;
    r.retry_count = 7;
    r.path_mtu = 3; // IBV_MTU_1024
    r.rnr_retry_count = 7;
    r.max_cm_retries = 15;
    r.primary.local_lid = r.primary.remote_lid = 0xFFFF;
    r.primary.local_gid = gid("127.0.3.2");
    r.primary.remote_gid = gid("127.0.3.1");
    r.primary.packet_rate = 16;
    r.primary.hop_limit = 64;
    r.primary.local_ack_timeout = 17;
    Bytes b = mad_of(r);
    // MAD header (IBA 13.4.2): base version 1, class CM 0x07, class version 2, Send, the
    // transaction ID, attribute 0x0010.
    CHECK(Bytes(b.begin(), b.begin() + 24) == Bytes{1, 7,    2, 3, 0,    0,    0,    0,
                                                    0, 0,    0, 1, 0x12, 0x34, 0x56, 0x78,
                                                    0, 0x10, 0, 0, 0,    0,    0,    0});
    const uint8_t* m = b.data() + 24;
    CHECK(Bytes(m, m + 16) ==
          Bytes{0x12, 0x34, 0x56, 0x78, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0x06, 0x1c, 0x06});
    CHECK(Bytes(m + 32, m + 36) == Bytes{0xab, 0xcd, 0xef, 1}); // QPN, responder resources
    CHECK(m[43] == 20 << 3);                                    // remote CM timeout, RC, no FC
    CHECK(Bytes(m + 44, m + 48) == Bytes{0x12, 0x34, 0x56, 20 << 3 | 7});
    CHECK(Bytes(m + 48, m + 52) == Bytes{0xff, 0xff, 3 << 4 | 7, 15 << 4});
    CHECK(Bytes(m + 52, m + 56) == Bytes{0xff, 0xff, 0xff, 0xff}); // permissive LIDs
    CHECK(std::memcmp(m + 56, gid("127.0.3.2").data(), 16) == 0);
    CHECK(std::memcmp(m + 72, gid("127.0.3.1").data(), 16) == 0);
    CHECK(m[91] == 16);      // packet rate: the low 6 bits
    CHECK(m[93] == 64);      // hop limit
    CHECK(m[95] == 17 << 3); // local ACK timeout
    CHECK(b[24 + 140] == 0); // private data starts at byte 140 of the message
}

TEST_CASE("every CM message survives encode and decode with random field values") {
    std::mt19937_64 rng(11);
    for (int round = 0; round < 50; ++round) {
        cm::Req r;
        r.local_comm_id = bits<uint32_t>(rng, 32);
        r.service_id = rng();
        r.local_ca_guid = rng();
        r.local_qkey = bits<uint32_t>(rng, 32);
        r.local_qpn = bits<uint32_t>(rng, 24);
        r.responder_resources = bits<uint8_t>(rng, 8);
        r.local_eecn = bits<uint32_t>(rng, 24);
        r.initiator_depth = bits<uint8_t>(rng, 8);
        r.remote_eecn = bits<uint32_t>(rng, 24);
        r.remote_cm_response_timeout = bits<uint8_t>(rng, 5);
        r.transport_type = bits<uint8_t>(rng, 2);
        r.flow_control = rng() & 1;
        r.starting_psn = bits<uint32_t>(rng, 24);
        r.local_cm_response_timeout = bits<uint8_t>(rng, 5);
        r.retry_count = bits<uint8_t>(rng, 3);
        r.pkey = bits<uint16_t>(rng, 16);
        r.path_mtu = bits<uint8_t>(rng, 4);
        r.rdc_exists = rng() & 1;
        r.rnr_retry_count = bits<uint8_t>(rng, 3);
        r.max_cm_retries = bits<uint8_t>(rng, 4);
        r.srq = rng() & 1;
        r.extended_transport_type = bits<uint8_t>(rng, 3);
        for (cm::Path* p : {&r.primary, &r.alternate}) {
            p->local_lid = bits<uint16_t>(rng, 16);
            p->remote_lid = bits<uint16_t>(rng, 16);
            for (auto& x : p->local_gid)
                x = bits<uint8_t>(rng, 8);
            for (auto& x : p->remote_gid)
                x = bits<uint8_t>(rng, 8);
            p->flow_label = bits<uint32_t>(rng, 20);
            p->packet_rate = bits<uint8_t>(rng, 6);
            p->traffic_class = bits<uint8_t>(rng, 8);
            p->hop_limit = bits<uint8_t>(rng, 8);
            p->sl = bits<uint8_t>(rng, 4);
            p->subnet_local = rng() & 1;
            p->local_ack_timeout = bits<uint8_t>(rng, 5);
        }
        r.sap_supported = rng() & 1;
        r.private_data.len = 92;
        for (size_t i = 0; i < 92; ++i)
            r.private_data.bytes[i] = bits<uint8_t>(rng, 8);
        Bytes b = mad_of(r);
        cm::MadHeader h;
        REQUIRE(cm::check(b.data(), b.size(), h) == cm::MadCheck::Ok);
        CHECK(h.tid == 0x0000000112345678ull);
        cm::Req d = cm::decode<cm::Req>(b.data());
        CHECK(mad_of(d) == b); // every field read back as written
        CHECK(d.primary.flow_label == r.primary.flow_label);
        CHECK(d.alternate.local_ack_timeout == r.alternate.local_ack_timeout);
        CHECK(d.private_data.len == 92);

        cm::Rep p;
        p.local_comm_id = bits<uint32_t>(rng, 32);
        p.remote_comm_id = bits<uint32_t>(rng, 32);
        p.local_qpn = bits<uint32_t>(rng, 24);
        p.starting_psn = bits<uint32_t>(rng, 24);
        p.target_ack_delay = bits<uint8_t>(rng, 5);
        p.failover_accepted = bits<uint8_t>(rng, 2);
        p.flow_control = rng() & 1;
        p.rnr_retry_count = bits<uint8_t>(rng, 3);
        p.srq = rng() & 1;
        p.local_ca_guid = rng();
        Bytes pb = mad_of(p);
        CHECK(mad_of(cm::decode<cm::Rep>(pb.data())) == pb);

        cm::Rej j;
        j.local_comm_id = bits<uint32_t>(rng, 32);
        j.message_rejected = bits<uint8_t>(rng, 2);
        j.ari_length = bits<uint8_t>(rng, 7);
        j.reason = bits<uint16_t>(rng, 16);
        j.ari[0] = 0x42;
        Bytes jb = mad_of(j);
        CHECK(mad_of(cm::decode<cm::Rej>(jb.data())) == jb);

        cm::Mra a;
        a.message_mraed = bits<uint8_t>(rng, 2);
        a.service_timeout = bits<uint8_t>(rng, 5);
        Bytes ab = mad_of(a);
        CHECK(mad_of(cm::decode<cm::Mra>(ab.data())) == ab);

        cm::Dreq q;
        q.remote_qpn = bits<uint32_t>(rng, 24);
        Bytes qb = mad_of(q);
        CHECK(mad_of(cm::decode<cm::Dreq>(qb.data())) == qb);

        cm::SidrRep s;
        s.request_id = bits<uint32_t>(rng, 32);
        s.status = bits<uint8_t>(rng, 8);
        s.qpn = bits<uint32_t>(rng, 24);
        s.service_id = rng();
        s.qkey = bits<uint32_t>(rng, 32);
        Bytes sb = mad_of(s);
        CHECK(mad_of(cm::decode<cm::SidrRep>(sb.data())) == sb);
    }
}

TEST_CASE("private data sits where each message keeps it and is clamped to its field") {
    cm::Rtu r;
    r.private_data.len = 224;
    r.private_data.bytes.fill(0x5A);
    Bytes b = mad_of(r);
    CHECK(b[24 + 7] == 0);
    CHECK(b[24 + 8] == 0x5A);
    CHECK(b[255] == 0x5A);
    cm::Rep p;
    p.private_data.len = 224; // the REP's field holds 196
    p.private_data.bytes.fill(0x5A);
    Bytes pb = mad_of(p);
    CHECK(pb[24 + 36] == 0x5A);
    CHECK(pb[24 + 36 + 195] == 0x5A);
    CHECK(cm::decode<cm::Rep>(pb.data()).private_data.len == 196);
    CHECK(cm::attr_info(0x0013)->private_size == 196);
}

TEST_CASE("check() sorts out what is no CM message") {
    cm::Drep d;
    Bytes b = mad_of(d);
    cm::MadHeader h;
    CHECK(cm::check(b.data(), b.size(), h) == cm::MadCheck::Ok);
    CHECK(cm::check(b.data(), 255, h) == cm::MadCheck::WrongSize);
    CHECK(cm::check(b.data(), 0, h) == cm::MadCheck::WrongSize);
    Bytes bad = b;
    bad[1] = 0x03; // subnet administration
    CHECK(cm::check(bad.data(), bad.size(), h) == cm::MadCheck::NotCm);
    bad = b;
    bad[2] = 1;
    CHECK(cm::check(bad.data(), bad.size(), h) == cm::MadCheck::BadClassVersion);
    bad = b;
    bad[3] = 0x01; // Get
    CHECK(cm::check(bad.data(), bad.size(), h) == cm::MadCheck::BadMethod);
    bad = b;
    bad[17] = 0x42;
    CHECK(cm::check(bad.data(), bad.size(), h) == cm::MadCheck::UnknownAttribute);
    bad[17] = 0x19; // LAP: no alternate paths on RoCE
    CHECK(cm::check(bad.data(), bad.size(), h) == cm::MadCheck::Unsupported);
}

TEST_CASE("the IP CM header and service IDs follow the RDMA IP CM annex") {
    CHECK(ipcm::service_id(ipcm::kPsTcp, 7174) == 0x0000000001061c06ull);
    CHECK(ipcm::service_id(ipcm::kPsUdp, 1) == 0x0000000001110001ull);
    CHECK(ipcm::is_ip_service(0x0000000001061c06ull));
    CHECK_FALSE(ipcm::is_ip_service(0x1000000000000001ull));
    CHECK(ipcm::port_of(0x0000000001061c06ull) == 7174);
    CHECK(ipcm::port_space_of(0x0000000001061c06ull) == ipcm::kPsTcp);

    ipcm::Header h;
    h.src_port = 40000;
    h.src = ipcm::from_ipv4(inet_addr("127.0.3.2"));
    h.dst = ipcm::from_ipv4(inet_addr("127.0.3.1"));
    uint8_t out[ipcm::kHeaderSize];
    ipcm::encode(h, out);
    CHECK(out[0] == 0);
    CHECK(out[1] == 0x40);
    CHECK(out[2] == 0x9c);
    CHECK(out[3] == 0x40);
    CHECK(out[4 + 12] == 127);
    CHECK(out[20 + 15] == 1);
    ipcm::Header back;
    REQUIRE(ipcm::decode(out, back) == ipcm::HeaderCheck::Ok);
    CHECK(ipcm::to_ipv4(back.dst) == inet_addr("127.0.3.1"));
    CHECK(back.src_port == 40000);
    out[1] = 0x50;
    CHECK(ipcm::decode(out, back) == ipcm::HeaderCheck::BadIpVersion);
    out[0] = 1;
    CHECK(ipcm::decode(out, back) == ipcm::HeaderCheck::BadVersion);
}
