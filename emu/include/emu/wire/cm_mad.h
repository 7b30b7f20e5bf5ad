// The InfiniBand Communication Manager's messages (IBA vol. 1 ch. 12.6) in their MADs (ch. 13.4):
// what two CM agents send each other on QP1 (the GSI) to set up, refuse and tear down
// connections (REQ, MRA, REJ, REP, RTU, DREQ, DREP) and to find a UD service (SIDR_REQ,
// SIDR_REP). On RoCE v2 each MAD is the 256-byte payload of a UD SEND Only packet to QP 1 with
// Q_Key 0x80010000.
//
// Every field is where IBA table 106 ff. put it: a byte offset into the message (the MAD's data,
// after its 24-byte header), a bit offset from that byte's most significant bit and a width,
// big-endian. Each message has one field list that both encode() and decode() walk, so the two
// cannot disagree. No allocation, no exceptions: safe on untrusted bytes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace emu::wire::cm {

inline constexpr size_t kMadSize = 256;      // every GSI MAD (IBA 13.4.2)
inline constexpr size_t kMadHeaderSize = 24; // common MAD header (IBA 13.4.2, table 145)
inline constexpr size_t kMessageSize = kMadSize - kMadHeaderSize;
inline constexpr uint32_t kGsiQpn = 1;
inline constexpr uint32_t kGsiQkey = 0x80010000; // IBA 10.2.4: the Q_Key of QP1
inline constexpr uint8_t kBaseVersion = 1;
inline constexpr uint8_t kClassCm = 0x07;    // management class of the CM (IBA table 140)
inline constexpr uint8_t kClassVersion = 2;  // CM class version (IBA 12.11)
inline constexpr uint8_t kMethodSend = 0x03; // every CM message is a Send (IBA 12.6.1)
// Private data fields are at most this long (RTU and DREP: 224 bytes).
inline constexpr size_t kMaxPrivateData = 224;

enum class Attr : uint16_t {
    ClassPortInfo = 0x0001,
    Req = 0x0010,
    Mra = 0x0011,
    Rej = 0x0012,
    Rep = 0x0013,
    Rtu = 0x0014,
    Dreq = 0x0015,
    Drep = 0x0016,
    SidrReq = 0x0017,
    SidrRep = 0x0018,
    Lap = 0x0019,
    Apr = 0x001A,
};

// The CM's attributes: the name, where the private data lies in the message, and whether this
// CM takes the message (LAP and APR, alternate paths, do not exist on RoCE; Linux drops them).
struct AttrInfo {
    Attr attr;
    const char* name;
    uint8_t private_offset; // bytes into the message
    uint8_t private_size;
    bool supported;
};
// nullptr when `attr_id` (host order) is no CM message.
const AttrInfo* attr_info(uint16_t attr_id);

// Which message an MRA or REJ answers (IBA 12.6.6, 12.6.7).
enum class MsgResponse : uint8_t { Req = 0, Rep = 1, Other = 2 };

// REJ reasons (IBA table 112), the ones this CM sends or that apps see most.
enum class RejReason : uint16_t {
    NoQp = 1,
    NoResources = 3,
    Timeout = 4,
    Unsupported = 5,
    InvalidCommId = 6,
    InvalidServiceId = 8,
    InvalidTransportType = 9,
    StaleConnection = 10,
    InvalidGid = 12,
    ConsumerDefined = 28,
    VendorOptionNotSupported = 35,
};

// SIDR_REP status (IBA table 119).
enum class SidrStatus : uint8_t {
    Success = 0,
    Unsupported = 1, // no service of that ID
    Reject = 2,
    NoQp = 3,
    Redirect = 4,
    UnsupportedVersion = 5,
};

// Transport service type of a REQ (IBA 12.6.5): RC 0, UC 1; 3 says "see the extended transport
// type", whose 1 is XRC (Linux cm.c's cm_req_set_qp_type / cm_req_get_qp_type).
inline constexpr uint8_t kTransportRc = 0;
inline constexpr uint8_t kTransportUc = 1;
inline constexpr uint8_t kTransportExtended = 3;
inline constexpr uint8_t kExtendedTransportXrc = 1;

using Gid = std::array<uint8_t, 16>;

struct PrivateData {
    std::array<uint8_t, kMaxPrivateData> bytes{};
    uint8_t len = 0; // encode: bytes to send; decode: the whole field (its length is not sent)
};

struct MadHeader {
    uint8_t base_version = kBaseVersion;
    uint8_t mgmt_class = kClassCm;
    uint8_t class_version = kClassVersion;
    uint8_t method = kMethodSend;
    uint16_t status = 0;
    uint16_t class_specific = 0;
    uint64_t tid = 0; // transaction ID
    uint16_t attr_id = 0;
    uint32_t attr_mod = 0;
};

// A path as a REQ carries it (primary or alternate). On RoCE the LIDs are the permissive LID
// 0xFFFF and the GIDs are the ends' addresses.
struct Path {
    uint16_t local_lid = 0;
    uint16_t remote_lid = 0;
    Gid local_gid{};
    Gid remote_gid{};
    uint32_t flow_label = 0; // 20 bits
    uint8_t packet_rate = 0; // 6 bits
    uint8_t traffic_class = 0;
    uint8_t hop_limit = 0;
    uint8_t sl = 0; // 4 bits
    bool subnet_local = false;
    uint8_t local_ack_timeout = 0; // 5 bits
};

struct Req {
    static constexpr Attr kAttr = Attr::Req;
    uint32_t local_comm_id = 0;
    uint64_t service_id = 0;
    uint64_t local_ca_guid = 0; // host order here, like every other field
    uint32_t local_qkey = 0;
    uint32_t local_qpn = 0; // 24 bits
    uint8_t responder_resources = 0;
    uint32_t local_eecn = 0; // 24 bits
    uint8_t initiator_depth = 0;
    uint32_t remote_eecn = 0;               // 24 bits
    uint8_t remote_cm_response_timeout = 0; // 5 bits
    uint8_t transport_type = kTransportRc;  // 2 bits
    bool flow_control = false;
    uint32_t starting_psn = 0;             // 24 bits
    uint8_t local_cm_response_timeout = 0; // 5 bits
    uint8_t retry_count = 0;               // 3 bits
    uint16_t pkey = 0xFFFF;
    uint8_t path_mtu = 0; // 4 bits, enum ibv_mtu
    bool rdc_exists = false;
    uint8_t rnr_retry_count = 0; // 3 bits
    uint8_t max_cm_retries = 0;  // 4 bits
    bool srq = false;
    uint8_t extended_transport_type = 0; // 3 bits
    Path primary;
    Path alternate;
    bool sap_supported = false;
    PrivateData private_data;
};

struct Mra {
    static constexpr Attr kAttr = Attr::Mra;
    uint32_t local_comm_id = 0;
    uint32_t remote_comm_id = 0;
    uint8_t message_mraed = 0;   // MsgResponse, 2 bits
    uint8_t service_timeout = 0; // 5 bits
    PrivateData private_data;
};

struct Rej {
    static constexpr Attr kAttr = Attr::Rej;
    uint32_t local_comm_id = 0;
    uint32_t remote_comm_id = 0;
    uint8_t message_rejected = 0;  // MsgResponse, 2 bits
    uint8_t ari_length = 0;        // 7 bits
    uint16_t reason = 0;           // RejReason
    std::array<uint8_t, 72> ari{}; // additional rejection information
    PrivateData private_data;
};

struct Rep {
    static constexpr Attr kAttr = Attr::Rep;
    uint32_t local_comm_id = 0;
    uint32_t remote_comm_id = 0;
    uint32_t local_qkey = 0;
    uint32_t local_qpn = 0;    // 24 bits
    uint32_t local_eecn = 0;   // 24 bits
    uint32_t starting_psn = 0; // 24 bits
    uint8_t responder_resources = 0;
    uint8_t initiator_depth = 0;
    uint8_t target_ack_delay = 0;  // 5 bits
    uint8_t failover_accepted = 0; // 2 bits
    bool flow_control = false;
    uint8_t rnr_retry_count = 0; // 3 bits
    bool srq = false;
    uint64_t local_ca_guid = 0;
    PrivateData private_data;
};

struct Rtu {
    static constexpr Attr kAttr = Attr::Rtu;
    uint32_t local_comm_id = 0;
    uint32_t remote_comm_id = 0;
    PrivateData private_data;
};

struct Dreq {
    static constexpr Attr kAttr = Attr::Dreq;
    uint32_t local_comm_id = 0;
    uint32_t remote_comm_id = 0;
    uint32_t remote_qpn = 0; // 24 bits: the receiver's QP
    PrivateData private_data;
};

struct Drep {
    static constexpr Attr kAttr = Attr::Drep;
    uint32_t local_comm_id = 0;
    uint32_t remote_comm_id = 0;
    PrivateData private_data;
};

struct SidrReq {
    static constexpr Attr kAttr = Attr::SidrReq;
    uint32_t request_id = 0;
    uint16_t pkey = 0xFFFF;
    uint64_t service_id = 0;
    PrivateData private_data;
};

struct SidrRep {
    static constexpr Attr kAttr = Attr::SidrRep;
    uint32_t request_id = 0;
    uint8_t status = 0; // SidrStatus
    uint8_t additional_info_length = 0;
    uint32_t qpn = 0; // 24 bits
    uint64_t service_id = 0;
    uint32_t qkey = 0;
    std::array<uint8_t, 72> additional_info{};
    PrivateData private_data;
};

// What a received MAD is, before its message is decoded.
enum class MadCheck : uint8_t {
    Ok,
    WrongSize,        // not exactly kMadSize bytes
    NotCm,            // another base version or management class
    BadClassVersion,  // a CM class version other than 2
    BadMethod,        // not a Send (Get/Set of ClassPortInfo, or garbage)
    UnknownAttribute, // no CM message has this attribute ID
    Unsupported,      // LAP, APR, ClassPortInfo: valid, but not taken here
};
const char* describe(MadCheck c);

// Checks a received MAD and fills `h`. Never reads outside [mad, mad + len).
MadCheck check(const uint8_t* mad, size_t len, MadHeader& h);

void encode_header(const MadHeader& h, uint8_t* mad);

// Writes the whole MAD, header included (attribute ID from Msg::kAttr), into `mad`, which must
// have kMadSize bytes. Unused bytes are zero. private_data.len is clamped to the field's size.
template <typename Msg> void encode(const Msg& m, uint64_t tid, uint8_t* mad);

// Reads the message of a MAD that check() passed with this message's attribute.
template <typename Msg> Msg decode(const uint8_t* mad);

} // namespace emu::wire::cm
