#include "emu/wire/cm_mad.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace emu::wire::cm {
namespace {

// One field of a message: `width` bits from bit `bit` (0 = most significant) of byte `byte`.
struct Field {
    uint16_t byte;
    uint8_t bit;
    uint8_t width;
};

uint64_t get_bits(const uint8_t* msg, Field f) {
    uint64_t v = 0;
    const unsigned start = f.byte * 8u + f.bit;
    for (unsigned i = 0; i < f.width; ++i) {
        const unsigned b = start + i;
        v = (v << 1) | ((msg[b / 8] >> (7 - b % 8)) & 1u);
    }
    return v;
}

void put_bits(uint8_t* msg, Field f, uint64_t v) {
    const unsigned start = f.byte * 8u + f.bit;
    for (unsigned i = 0; i < f.width; ++i) {
        const unsigned b = start + i;
        const auto mask = static_cast<uint8_t>(1u << (7 - b % 8));
        if ((v >> (f.width - 1 - i)) & 1u)
            msg[b / 8] |= mask;
        else
            msg[b / 8] &= static_cast<uint8_t>(~mask);
    }
}

// Walks a message's fields into a MAD (encode) ...
struct Writer {
    uint8_t* msg;
    template <typename T> void operator()(Field f, const T& v) {
        put_bits(msg, f, static_cast<uint64_t>(v));
    }
    template <size_t N> void bytes(uint16_t at, const std::array<uint8_t, N>& v, size_t n = N) {
        std::memcpy(msg + at, v.data(), std::min(n, N));
    }
    void private_data(const AttrInfo& a, const PrivateData& p) {
        std::memcpy(msg + a.private_offset, p.bytes.data(),
                    std::min<size_t>(p.len, a.private_size));
    }
};

// ... or out of one (decode).
struct Reader {
    const uint8_t* msg;
    template <typename T> void operator()(Field f, T& v) { v = static_cast<T>(get_bits(msg, f)); }
    template <size_t N> void bytes(uint16_t at, std::array<uint8_t, N>& v, size_t n = N) {
        std::memcpy(v.data(), msg + at, std::min(n, N));
    }
    void private_data(const AttrInfo& a, PrivateData& p) {
        std::memcpy(p.bytes.data(), msg + a.private_offset, a.private_size);
        p.len = a.private_size;
    }
};

// The attribute table: IBA table 106 ff. give the private data's place in each message.
constexpr AttrInfo kAttrs[] = {
    {Attr::ClassPortInfo, "ClassPortInfo", 0, 0, false},
    {Attr::Req, "REQ", 140, 92, true},
    {Attr::Mra, "MRA", 10, 222, true},
    {Attr::Rej, "REJ", 84, 148, true},
    {Attr::Rep, "REP", 36, 196, true},
    {Attr::Rtu, "RTU", 8, 224, true},
    {Attr::Dreq, "DREQ", 12, 220, true},
    {Attr::Drep, "DREP", 8, 224, true},
    {Attr::SidrReq, "SIDR_REQ", 16, 216, true},
    {Attr::SidrRep, "SIDR_REP", 96, 136, true},
    {Attr::Lap, "LAP", 64, 168, false},
    {Attr::Apr, "APR", 84, 148, false},
};

const AttrInfo& info(Attr a) {
    return *attr_info(static_cast<uint16_t>(a));
}

// A REQ's path (IBA table 106): 44 bytes from `at` (52 primary, 96 alternate).
template <typename V, typename P> void path_fields(V& v, P& p, uint16_t at) {
    v(Field{static_cast<uint16_t>(at + 0), 0, 16}, p.local_lid);
    v(Field{static_cast<uint16_t>(at + 2), 0, 16}, p.remote_lid);
    v.bytes(static_cast<uint16_t>(at + 4), p.local_gid);
    v.bytes(static_cast<uint16_t>(at + 20), p.remote_gid);
    v(Field{static_cast<uint16_t>(at + 36), 0, 20}, p.flow_label);
    v(Field{static_cast<uint16_t>(at + 39), 2, 6}, p.packet_rate);
    v(Field{static_cast<uint16_t>(at + 40), 0, 8}, p.traffic_class);
    v(Field{static_cast<uint16_t>(at + 41), 0, 8}, p.hop_limit);
    v(Field{static_cast<uint16_t>(at + 42), 0, 4}, p.sl);
    v(Field{static_cast<uint16_t>(at + 42), 4, 1}, p.subnet_local);
    v(Field{static_cast<uint16_t>(at + 43), 0, 5}, p.local_ack_timeout);
}

template <typename V, typename M> void fields(V& v, M& m) {
    using Msg = std::remove_const_t<M>;
    if constexpr (std::is_same_v<Msg, Req>) { // IBA table 106
        v(Field{0, 0, 32}, m.local_comm_id);
        v(Field{8, 0, 64}, m.service_id);
        v(Field{16, 0, 64}, m.local_ca_guid);
        v(Field{28, 0, 32}, m.local_qkey);
        v(Field{32, 0, 24}, m.local_qpn);
        v(Field{35, 0, 8}, m.responder_resources);
        v(Field{36, 0, 24}, m.local_eecn);
        v(Field{39, 0, 8}, m.initiator_depth);
        v(Field{40, 0, 24}, m.remote_eecn);
        v(Field{43, 0, 5}, m.remote_cm_response_timeout);
        v(Field{43, 5, 2}, m.transport_type);
        v(Field{43, 7, 1}, m.flow_control);
        v(Field{44, 0, 24}, m.starting_psn);
        v(Field{47, 0, 5}, m.local_cm_response_timeout);
        v(Field{47, 5, 3}, m.retry_count);
        v(Field{48, 0, 16}, m.pkey);
        v(Field{50, 0, 4}, m.path_mtu);
        v(Field{50, 4, 1}, m.rdc_exists);
        v(Field{50, 5, 3}, m.rnr_retry_count);
        v(Field{51, 0, 4}, m.max_cm_retries);
        v(Field{51, 4, 1}, m.srq);
        v(Field{51, 5, 3}, m.extended_transport_type);
        path_fields(v, m.primary, 52);
        path_fields(v, m.alternate, 96);
        v(Field{139, 5, 1}, m.sap_supported);
    } else if constexpr (std::is_same_v<Msg, Mra>) { // IBA table 107
        v(Field{0, 0, 32}, m.local_comm_id);
        v(Field{4, 0, 32}, m.remote_comm_id);
        v(Field{8, 0, 2}, m.message_mraed);
        v(Field{9, 0, 5}, m.service_timeout);
    } else if constexpr (std::is_same_v<Msg, Rej>) { // IBA table 108
        v(Field{0, 0, 32}, m.local_comm_id);
        v(Field{4, 0, 32}, m.remote_comm_id);
        v(Field{8, 0, 2}, m.message_rejected);
        v(Field{9, 0, 7}, m.ari_length);
        v(Field{10, 0, 16}, m.reason);
        v.bytes(12, m.ari);
    } else if constexpr (std::is_same_v<Msg, Rep>) { // IBA table 110
        v(Field{0, 0, 32}, m.local_comm_id);
        v(Field{4, 0, 32}, m.remote_comm_id);
        v(Field{8, 0, 32}, m.local_qkey);
        v(Field{12, 0, 24}, m.local_qpn);
        v(Field{16, 0, 24}, m.local_eecn);
        v(Field{20, 0, 24}, m.starting_psn);
        v(Field{24, 0, 8}, m.responder_resources);
        v(Field{25, 0, 8}, m.initiator_depth);
        v(Field{26, 0, 5}, m.target_ack_delay);
        v(Field{26, 5, 2}, m.failover_accepted);
        v(Field{26, 7, 1}, m.flow_control);
        v(Field{27, 0, 3}, m.rnr_retry_count);
        v(Field{27, 3, 1}, m.srq);
        v(Field{28, 0, 64}, m.local_ca_guid);
    } else if constexpr (std::is_same_v<Msg, Rtu> || std::is_same_v<Msg, Drep>) {
        v(Field{0, 0, 32}, m.local_comm_id); // IBA tables 111 and 113
        v(Field{4, 0, 32}, m.remote_comm_id);
    } else if constexpr (std::is_same_v<Msg, Dreq>) { // IBA table 112
        v(Field{0, 0, 32}, m.local_comm_id);
        v(Field{4, 0, 32}, m.remote_comm_id);
        v(Field{8, 0, 24}, m.remote_qpn);
    } else if constexpr (std::is_same_v<Msg, SidrReq>) { // IBA table 119
        v(Field{0, 0, 32}, m.request_id);
        v(Field{4, 0, 16}, m.pkey);
        v(Field{8, 0, 64}, m.service_id);
    } else if constexpr (std::is_same_v<Msg, SidrRep>) { // IBA table 120
        v(Field{0, 0, 32}, m.request_id);
        v(Field{4, 0, 8}, m.status);
        v(Field{5, 0, 8}, m.additional_info_length);
        v(Field{8, 0, 24}, m.qpn);
        v(Field{12, 0, 64}, m.service_id);
        v(Field{20, 0, 32}, m.qkey);
        v.bytes(24, m.additional_info);
    } else {
        static_assert(sizeof(Msg) == 0, "not a CM message");
    }
    v.private_data(info(Msg::kAttr), m.private_data);
}

void put16(uint8_t* p, uint16_t v) {
    p[0] = static_cast<uint8_t>(v >> 8);
    p[1] = static_cast<uint8_t>(v);
}
void put32(uint8_t* p, uint32_t v) {
    put16(p, static_cast<uint16_t>(v >> 16));
    put16(p + 2, static_cast<uint16_t>(v));
}
uint16_t get16(const uint8_t* p) {
    return static_cast<uint16_t>(p[0] << 8 | p[1]);
}
uint32_t get32(const uint8_t* p) {
    return static_cast<uint32_t>(get16(p)) << 16 | get16(p + 2);
}

} // namespace

const AttrInfo* attr_info(uint16_t attr_id) {
    for (const AttrInfo& a : kAttrs)
        if (static_cast<uint16_t>(a.attr) == attr_id) return &a;
    return nullptr;
}

const char* describe(MadCheck c) {
    switch (c) {
    case MadCheck::Ok:
        return "ok";
    case MadCheck::WrongSize:
        return "not a 256-byte MAD";
    case MadCheck::NotCm:
        return "not a CM MAD (base version or management class)";
    case MadCheck::BadClassVersion:
        return "unsupported CM class version";
    case MadCheck::BadMethod:
        return "method is not Send";
    case MadCheck::UnknownAttribute:
        return "unknown attribute ID";
    case MadCheck::Unsupported:
        return "attribute not taken on RoCE";
    }
    return "?";
}

void encode_header(const MadHeader& h, uint8_t* mad) {
    mad[0] = h.base_version;
    mad[1] = h.mgmt_class;
    mad[2] = h.class_version;
    mad[3] = h.method;
    put16(mad + 4, h.status);
    put16(mad + 6, h.class_specific);
    put32(mad + 8, static_cast<uint32_t>(h.tid >> 32));
    put32(mad + 12, static_cast<uint32_t>(h.tid));
    put16(mad + 16, h.attr_id);
    put16(mad + 18, 0);
    put32(mad + 20, h.attr_mod);
}

MadCheck check(const uint8_t* mad, size_t len, MadHeader& h) {
    if (len != kMadSize) return MadCheck::WrongSize;
    h.base_version = mad[0];
    h.mgmt_class = mad[1];
    h.class_version = mad[2];
    h.method = mad[3];
    h.status = get16(mad + 4);
    h.class_specific = get16(mad + 6);
    h.tid = static_cast<uint64_t>(get32(mad + 8)) << 32 | get32(mad + 12);
    h.attr_id = get16(mad + 16);
    h.attr_mod = get32(mad + 20);
    if (h.base_version != kBaseVersion || h.mgmt_class != kClassCm) return MadCheck::NotCm;
    if (h.class_version != kClassVersion) return MadCheck::BadClassVersion;
    if (h.method != kMethodSend) return MadCheck::BadMethod;
    const AttrInfo* a = attr_info(h.attr_id);
    if (!a) return MadCheck::UnknownAttribute;
    return a->supported ? MadCheck::Ok : MadCheck::Unsupported;
}

template <typename Msg> void encode(const Msg& m, uint64_t tid, uint8_t* mad) {
    std::memset(mad, 0, kMadSize);
    MadHeader h;
    h.tid = tid;
    h.attr_id = static_cast<uint16_t>(Msg::kAttr);
    encode_header(h, mad);
    Writer w{mad + kMadHeaderSize};
    fields(w, m);
}

template <typename Msg> Msg decode(const uint8_t* mad) {
    Msg m;
    Reader r{mad + kMadHeaderSize};
    fields(r, m);
    return m;
}

#define EMU_CM_MESSAGE(Msg)                                                                        \
    template void encode<Msg>(const Msg&, uint64_t, uint8_t*);                                     \
    template Msg decode<Msg>(const uint8_t*);
EMU_CM_MESSAGE(Req)
EMU_CM_MESSAGE(Mra)
EMU_CM_MESSAGE(Rej)
EMU_CM_MESSAGE(Rep)
EMU_CM_MESSAGE(Rtu)
EMU_CM_MESSAGE(Dreq)
EMU_CM_MESSAGE(Drep)
EMU_CM_MESSAGE(SidrReq)
EMU_CM_MESSAGE(SidrRep)
#undef EMU_CM_MESSAGE

} // namespace emu::wire::cm
