// What each send work-request opcode (enum ibv_wr_opcode) means, in one table as Linux rxe's
// rxe_wr_opcode_info: the QP types whose NIC executes it and whose ibv_post_send takes it, the
// wire operation it becomes (a BTH opcode family, emu/wire/opcodes.h), the opcode of its send
// completion and its properties. The library and the NIC test these bits, not lists of opcodes.
#pragma once

#include "emu/wire/opcodes.h"

#include <infiniband/verbs.h>

#include <array>
#include <cstdint>
#include <optional>

namespace emu {

// A set of QP types, one bit per enum ibv_qp_type value.
using QpTypes = uint32_t;

constexpr QpTypes qp_type_bit(ibv_qp_type type) {
    return static_cast<uint32_t>(type) < 32 ? 1u << type : 0;
}

// --- WR property bits ---
inline constexpr uint32_t kWrSend = 1u << 0;   // a SEND: consumes a receive WQE at the responder
inline constexpr uint32_t kWrRead = 1u << 1;   // RDMA READ: the responder answers with the data
inline constexpr uint32_t kWrAtomic = 1u << 2; // compare-swap, fetch-add: 8 bytes come back
inline constexpr uint32_t kWrLocal = 1u << 3;  // run by the local NIC alone, no packet (IBA 10.6.7)
inline constexpr uint32_t kWrInline = 1u << 4; // its data may be inline (IBV_SEND_INLINE)
inline constexpr uint32_t kWrImm = 1u << 5;    // carries immediate data (imm_data)
inline constexpr uint32_t kWrInvalidate = 1u << 6; // carries an rkey to invalidate
inline constexpr uint32_t kWrRemote = 1u << 7;     // names remote memory (remote_addr, rkey)
inline constexpr uint32_t kWrDataInWqe = 1u << 8;  // its 8 bytes travel in the WQE, not in SGEs

struct WrOpcodeInfo {
    uint32_t opcode;       // its enum ibv_wr_opcode value
    const char* name;      // "IBV_WR_RDMA_WRITE"; nullptr for a value verbs.h does not define
    const char* operation; // what explanations call it: "WRITE", "READ", "atomic", ...
    QpTypes executes_on;   // the NIC executes it on these; elsewhere IBV_WC_LOC_QP_OP_ERR
    QpTypes posts_on;      // ibv_post_send takes it on these; elsewhere EINVAL
    uint32_t flags;        // kWr* bits
    std::optional<wire::Operation> wire; // the BTH opcode family; none without packets
    wire::Modifier modifier;             // what the message's last packet carries besides data
    ibv_wc_opcode wc_opcode;             // the opcode of its send completion
    uint64_t send_op;                    // IBV_QP_EX_WITH_*: its ibv_wr_* call; 0 when none
};

namespace detail {

inline constexpr QpTypes kRc = qp_type_bit(IBV_QPT_RC);
inline constexpr QpTypes kUc = qp_type_bit(IBV_QPT_UC);
inline constexpr QpTypes kUd = qp_type_bit(IBV_QPT_UD);
inline constexpr QpTypes kRaw = qp_type_bit(IBV_QPT_RAW_PACKET);
// XRC sends RC's operations, to an XRC SRQ (IBA 14.2); XRC_RECV QPs have no send queue.
inline constexpr QpTypes kReliable = kRc | qp_type_bit(IBV_QPT_XRC_SEND);
inline constexpr QpTypes kConnected = kReliable | kUc;
// A UD QP's ibv_post_send takes every classic opcode, as mlx5 posts any of its table and rxe any
// its provider knows; the NIC completes those UD does not execute with IBV_WC_LOC_QP_OP_ERR.
inline constexpr QpTypes kAlsoPostedOnUd = kUd;

using wire::Modifier;
using wire::Operation;

#define EMU_WR(op) op, #op
// clang-format off
// Executed on: the operations IBA table 38 gives each transport (RC and XRC all, UC SEND and
// WRITE, UD SEND), the memory-window ones on connected QPs (IBA 10.6.7), and a whole Ethernet
// frame on a raw packet QP. rxe's rxe_wr_opcode_info agrees but for SEND with invalidate, which
// it takes on UC and UD too (table 38 gives them no opcode for it), and LOCAL_INV, RC only there.
inline constexpr WrOpcodeInfo kWrOpcodeDefs[] = {
    {EMU_WR(IBV_WR_RDMA_WRITE), "WRITE", kConnected, kConnected | kAlsoPostedOnUd,
     kWrInline | kWrRemote, Operation::Write, Modifier::None, IBV_WC_RDMA_WRITE,
     IBV_QP_EX_WITH_RDMA_WRITE},
    {EMU_WR(IBV_WR_RDMA_WRITE_WITH_IMM), "WRITE", kConnected, kConnected | kAlsoPostedOnUd,
     kWrInline | kWrRemote | kWrImm, Operation::Write, Modifier::Imm, IBV_WC_RDMA_WRITE,
     IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM},
    {EMU_WR(IBV_WR_SEND), "SEND", kConnected | kUd | kRaw, kConnected | kUd | kRaw,
     kWrSend | kWrInline, Operation::Send, Modifier::None, IBV_WC_SEND,
     IBV_QP_EX_WITH_SEND},
    {EMU_WR(IBV_WR_SEND_WITH_IMM), "SEND", kConnected | kUd, kConnected | kUd,
     kWrSend | kWrInline | kWrImm, Operation::Send, Modifier::Imm, IBV_WC_SEND,
     IBV_QP_EX_WITH_SEND_WITH_IMM},
    {EMU_WR(IBV_WR_RDMA_READ), "READ", kReliable, kReliable | kAlsoPostedOnUd,
     kWrRead | kWrRemote, Operation::ReadRequest, Modifier::None, IBV_WC_RDMA_READ,
     IBV_QP_EX_WITH_RDMA_READ},
    {EMU_WR(IBV_WR_ATOMIC_CMP_AND_SWP), "atomic", kReliable, kReliable | kAlsoPostedOnUd,
     kWrAtomic | kWrRemote, Operation::CompareSwap, Modifier::None, IBV_WC_COMP_SWAP,
     IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP},
    {EMU_WR(IBV_WR_ATOMIC_FETCH_AND_ADD), "atomic", kReliable, kReliable | kAlsoPostedOnUd,
     kWrAtomic | kWrRemote, Operation::FetchAdd, Modifier::None, IBV_WC_FETCH_ADD,
     IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD},
    {EMU_WR(IBV_WR_LOCAL_INV), "local invalidate", kConnected, kConnected | kAlsoPostedOnUd,
     kWrLocal | kWrInvalidate, std::nullopt, Modifier::None, IBV_WC_LOCAL_INV,
     IBV_QP_EX_WITH_LOCAL_INV},
    {EMU_WR(IBV_WR_BIND_MW), "bind", kConnected, kConnected | kAlsoPostedOnUd,
     kWrLocal, std::nullopt, Modifier::None, IBV_WC_BIND_MW,
     IBV_QP_EX_WITH_BIND_MW},
    // Not posted on UC: mlx5 and rxe take it there, but nothing could execute it.
    {EMU_WR(IBV_WR_SEND_WITH_INV), "SEND", kReliable, kReliable | kAlsoPostedOnUd,
     kWrSend | kWrInline | kWrInvalidate, Operation::Send, Modifier::Inv, IBV_WC_SEND,
     IBV_QP_EX_WITH_SEND_WITH_INV},
    // An Ethernet offload this device does not offer.
    {EMU_WR(IBV_WR_TSO), "TSO", 0, 0,
     0, std::nullopt, Modifier::None, IBV_WC_TSO,
     IBV_QP_EX_WITH_TSO},
    // A provider's own operation (mlx5's UMR); this device has none.
    {EMU_WR(IBV_WR_DRIVER1), "driver operation", 0, 0,
     0, std::nullopt, Modifier::None, IBV_WC_DRIVER1,
     0},
    // Its 8 bytes have no field in ibv_send_wr: only ibv_wr_atomic_write posts it.
    {EMU_WR(IBV_WR_ATOMIC_WRITE), "ATOMIC WRITE", kReliable, 0,
     kWrRemote | kWrDataInWqe, Operation::AtomicWrite, Modifier::None, IBV_WC_ATOMIC_WRITE,
     IBV_QP_EX_WITH_ATOMIC_WRITE},
};
#undef EMU_WR

// A value outside enum ibv_wr_opcode: executed nowhere; its error completion says IBV_WC_SEND.
inline constexpr WrOpcodeInfo kUnknownWr{
    ~0u, nullptr, "unknown operation", 0, 0, 0, std::nullopt, Modifier::None, IBV_WC_SEND, 0};
// clang-format on

inline constexpr size_t kWrOpcodeCount = IBV_WR_ATOMIC_WRITE + 1;

constexpr std::array<WrOpcodeInfo, kWrOpcodeCount> make_wr_table() {
    std::array<WrOpcodeInfo, kWrOpcodeCount> table{};
    for (auto& e : table)
        e = kUnknownWr;
    for (const auto& d : kWrOpcodeDefs)
        table[d.opcode] = d;
    return table;
}

inline constexpr std::array<WrOpcodeInfo, kWrOpcodeCount> kWrTable = make_wr_table();

} // namespace detail

// The entry of `opcode` (as a WQE carries it: any 32-bit value); kUnknownWr's for values
// verbs.h does not define.
constexpr const WrOpcodeInfo& wr_opcode_info(uint32_t opcode) {
    return opcode < detail::kWrOpcodeCount ? detail::kWrTable[opcode] : detail::kUnknownWr;
}
// True when `opcode` has every bit of `flags`.
constexpr bool wr_has(uint32_t opcode, uint32_t flags) {
    return (wr_opcode_info(opcode).flags & flags) == flags;
}
constexpr bool wr_has_any(uint32_t opcode, uint32_t flags) {
    return (wr_opcode_info(opcode).flags & flags) != 0;
}
constexpr bool wr_executes_on(uint32_t opcode, ibv_qp_type type) {
    return (wr_opcode_info(opcode).executes_on & qp_type_bit(type)) != 0;
}
constexpr bool wr_posts_on(uint32_t opcode, ibv_qp_type type) {
    return (wr_opcode_info(opcode).posts_on & qp_type_bit(type)) != 0;
}
// The IBV_QP_EX_WITH_* operations a QP of `type` may be created with: those it executes.
constexpr uint64_t send_ops_of(ibv_qp_type type) {
    uint64_t ops = 0;
    for (const auto& d : detail::kWrOpcodeDefs)
        if (wr_executes_on(d.opcode, type)) ops |= d.send_op;
    return ops;
}

} // namespace emu
