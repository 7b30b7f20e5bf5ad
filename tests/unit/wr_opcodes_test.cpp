#include "emu/wr_opcodes.h"

#include <catch2/catch.hpp>

#include <string>

using namespace emu;
namespace wire = emu::wire;

namespace {

// Every value of enum ibv_wr_opcode in rdma-core 44's verbs.h.
constexpr ibv_wr_opcode kAllOpcodes[] = {IBV_WR_RDMA_WRITE,
                                         IBV_WR_RDMA_WRITE_WITH_IMM,
                                         IBV_WR_SEND,
                                         IBV_WR_SEND_WITH_IMM,
                                         IBV_WR_RDMA_READ,
                                         IBV_WR_ATOMIC_CMP_AND_SWP,
                                         IBV_WR_ATOMIC_FETCH_AND_ADD,
                                         IBV_WR_LOCAL_INV,
                                         IBV_WR_BIND_MW,
                                         IBV_WR_SEND_WITH_INV,
                                         IBV_WR_TSO,
                                         IBV_WR_DRIVER1,
                                         IBV_WR_ATOMIC_WRITE};

constexpr ibv_qp_type kSendingTypes[] = {IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD, IBV_QPT_RAW_PACKET,
                                         IBV_QPT_XRC_SEND};

// The transport whose BTH opcodes a QP type sends.
wire::Transport transport_of(ibv_qp_type type) {
    switch (type) {
    case IBV_QPT_UC:
        return wire::Transport::UC;
    case IBV_QPT_UD:
        return wire::Transport::UD;
    case IBV_QPT_XRC_SEND:
        return wire::Transport::XRC;
    default:
        return wire::Transport::RC;
    }
}

} // namespace

TEST_CASE("wr opcodes: every opcode of verbs.h has an entry with its name", "[wr_opcodes]") {
    for (ibv_wr_opcode op : kAllOpcodes) {
        const WrOpcodeInfo& info = wr_opcode_info(op);
        REQUIRE(info.name != nullptr);
        CHECK(info.opcode == static_cast<uint32_t>(op));
        CHECK(std::string(info.name).starts_with("IBV_WR_"));
    }
    CHECK(std::string(wr_opcode_info(IBV_WR_RDMA_READ).name) == "IBV_WR_RDMA_READ");
    CHECK(std::string(wr_opcode_info(IBV_WR_ATOMIC_WRITE).name) == "IBV_WR_ATOMIC_WRITE");
}

TEST_CASE("wr opcodes: a value verbs.h does not define is executed and posted nowhere",
          "[wr_opcodes]") {
    for (uint32_t op : {12u, 13u, 14u, 16u, 255u, 0xffffffffu}) {
        CAPTURE(op);
        CHECK(wr_opcode_info(op).name == nullptr);
        for (ibv_qp_type type : kSendingTypes) {
            CHECK_FALSE(wr_executes_on(op, type));
            CHECK_FALSE(wr_posts_on(op, type));
        }
        CHECK(wr_opcode_info(op).wc_opcode == IBV_WC_SEND);
    }
}

TEST_CASE("wr opcodes: READ and atomics are RC's and XRC's alone (IBA table 38)", "[wr_opcodes]") {
    for (ibv_wr_opcode op : {IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP,
                             IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_WRITE}) {
        CAPTURE(wr_opcode_info(op).name);
        CHECK(wr_executes_on(op, IBV_QPT_RC));
        CHECK(wr_executes_on(op, IBV_QPT_XRC_SEND));
        CHECK_FALSE(wr_executes_on(op, IBV_QPT_UC));
        CHECK_FALSE(wr_executes_on(op, IBV_QPT_UD));
        CHECK_FALSE(wr_executes_on(op, IBV_QPT_RAW_PACKET));
        CHECK_FALSE(wr_executes_on(op, IBV_QPT_XRC_RECV));
    }
}

TEST_CASE("wr opcodes: which QP types execute each operation", "[wr_opcodes]") {
    CHECK(wr_executes_on(IBV_WR_SEND, IBV_QPT_RAW_PACKET)); // one whole Ethernet frame
    CHECK_FALSE(wr_executes_on(IBV_WR_SEND_WITH_IMM, IBV_QPT_RAW_PACKET));
    CHECK(wr_executes_on(IBV_WR_SEND_WITH_IMM, IBV_QPT_UD));
    CHECK(wr_executes_on(IBV_WR_RDMA_WRITE_WITH_IMM, IBV_QPT_UC));
    CHECK_FALSE(wr_executes_on(IBV_WR_RDMA_WRITE, IBV_QPT_UD));
    CHECK_FALSE(wr_executes_on(IBV_WR_SEND_WITH_INV, IBV_QPT_UC)); // no UC opcode for it
    CHECK(wr_executes_on(IBV_WR_BIND_MW, IBV_QPT_UC));
    CHECK(wr_executes_on(IBV_WR_LOCAL_INV, IBV_QPT_UC));
    CHECK_FALSE(wr_executes_on(IBV_WR_BIND_MW, IBV_QPT_UD));
    CHECK_FALSE(wr_executes_on(IBV_WR_SEND, IBV_QPT_XRC_RECV)); // it has no send queue
    for (ibv_qp_type type : kSendingTypes) {
        CHECK_FALSE(wr_executes_on(IBV_WR_TSO, type));
        CHECK_FALSE(wr_executes_on(IBV_WR_DRIVER1, type));
    }
}

TEST_CASE("wr opcodes: ibv_post_send takes every classic opcode on UD, and ATOMIC WRITE nowhere",
          "[wr_opcodes]") {
    for (ibv_wr_opcode op : kAllOpcodes) {
        CAPTURE(wr_opcode_info(op).name);
        CHECK(wr_posts_on(op, IBV_QPT_UD) == (op <= IBV_WR_SEND_WITH_INV));
        for (ibv_qp_type type : kSendingTypes) {
            if (type == IBV_QPT_UD || op == IBV_WR_ATOMIC_WRITE) continue;
            CHECK(wr_posts_on(op, type) == wr_executes_on(op, type));
        }
    }
    CHECK_FALSE(wr_posts_on(IBV_WR_ATOMIC_WRITE, IBV_QPT_RC)); // ibv_wr_atomic_write only
}

TEST_CASE("wr opcodes: the completion each operation makes", "[wr_opcodes]") {
    CHECK(wr_opcode_info(IBV_WR_RDMA_WRITE).wc_opcode == IBV_WC_RDMA_WRITE);
    CHECK(wr_opcode_info(IBV_WR_RDMA_WRITE_WITH_IMM).wc_opcode == IBV_WC_RDMA_WRITE);
    CHECK(wr_opcode_info(IBV_WR_SEND).wc_opcode == IBV_WC_SEND);
    CHECK(wr_opcode_info(IBV_WR_SEND_WITH_IMM).wc_opcode == IBV_WC_SEND);
    CHECK(wr_opcode_info(IBV_WR_SEND_WITH_INV).wc_opcode == IBV_WC_SEND);
    CHECK(wr_opcode_info(IBV_WR_RDMA_READ).wc_opcode == IBV_WC_RDMA_READ);
    CHECK(wr_opcode_info(IBV_WR_ATOMIC_CMP_AND_SWP).wc_opcode == IBV_WC_COMP_SWAP);
    CHECK(wr_opcode_info(IBV_WR_ATOMIC_FETCH_AND_ADD).wc_opcode == IBV_WC_FETCH_ADD);
    CHECK(wr_opcode_info(IBV_WR_ATOMIC_WRITE).wc_opcode == IBV_WC_ATOMIC_WRITE);
    CHECK(wr_opcode_info(IBV_WR_BIND_MW).wc_opcode == IBV_WC_BIND_MW);
    CHECK(wr_opcode_info(IBV_WR_LOCAL_INV).wc_opcode == IBV_WC_LOCAL_INV);
}

TEST_CASE("wr opcodes: what the explanations call each operation", "[wr_opcodes]") {
    CHECK(std::string(wr_opcode_info(IBV_WR_RDMA_WRITE_WITH_IMM).operation) == "WRITE");
    CHECK(std::string(wr_opcode_info(IBV_WR_SEND_WITH_INV).operation) == "SEND");
    CHECK(std::string(wr_opcode_info(IBV_WR_RDMA_READ).operation) == "READ");
    CHECK(std::string(wr_opcode_info(IBV_WR_ATOMIC_FETCH_AND_ADD).operation) == "atomic");
    CHECK(std::string(wr_opcode_info(IBV_WR_ATOMIC_WRITE).operation) == "ATOMIC WRITE");
}

TEST_CASE("wr opcodes: the flags agree with the wire operation", "[wr_opcodes]") {
    using wire::Operation;
    for (ibv_wr_opcode op : kAllOpcodes) {
        const WrOpcodeInfo& info = wr_opcode_info(op);
        CAPTURE(info.name);
        CHECK(wr_has(op, kWrRead) == (info.wire == Operation::ReadRequest));
        CHECK(wr_has(op, kWrAtomic) ==
              (info.wire == Operation::CompareSwap || info.wire == Operation::FetchAdd));
        CHECK(wr_has(op, kWrSend) == (info.wire == Operation::Send));
        CHECK(wr_has(op, kWrImm) == (info.modifier == wire::Modifier::Imm));
        CHECK(wr_has(op, kWrDataInWqe) == (info.wire == Operation::AtomicWrite));
        // An operation that goes on the wire is not local, and one executed without packets is.
        if (info.executes_on) CHECK(wr_has(op, kWrLocal) == !info.wire.has_value());
        // Inline data is what a SEND or WRITE sends; a READ's or atomic's SGEs take the answer.
        CHECK(wr_has(op, kWrInline) ==
              (info.wire == Operation::Send || info.wire == Operation::Write));
    }
    CHECK(wr_has(IBV_WR_LOCAL_INV, kWrInvalidate));
    CHECK(wr_has(IBV_WR_SEND_WITH_INV, kWrInvalidate));
    CHECK(wr_opcode_info(IBV_WR_SEND_WITH_INV).modifier == wire::Modifier::Inv);
    static_assert(wr_has(IBV_WR_RDMA_READ, kWrRead | kWrRemote), "usable at compile time");
}

TEST_CASE("wr opcodes: each executed operation has its BTH opcodes on each transport",
          "[wr_opcodes]") {
    for (ibv_wr_opcode op : kAllOpcodes) {
        const WrOpcodeInfo& info = wr_opcode_info(op);
        if (!info.wire) continue;
        for (ibv_qp_type type : kSendingTypes) {
            if (type == IBV_QPT_RAW_PACKET || !wr_executes_on(op, type)) continue;
            CAPTURE(info.name, type);
            CHECK(wire::opcode_for(transport_of(type), *info.wire, wire::Position::Only,
                                   info.modifier)
                      .has_value());
        }
    }
}

TEST_CASE("wr opcodes: the new post-send operations each QP type may be created with",
          "[wr_opcodes]") {
    constexpr uint64_t send = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
    constexpr uint64_t write = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM;
    constexpr uint64_t window = IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV;
    constexpr uint64_t rc = send | write | window | IBV_QP_EX_WITH_RDMA_READ |
                            IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
                            IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_ATOMIC_WRITE |
                            IBV_QP_EX_WITH_SEND_WITH_INV;
    CHECK(send_ops_of(IBV_QPT_RC) == rc);
    CHECK(send_ops_of(IBV_QPT_XRC_SEND) == rc);
    CHECK(send_ops_of(IBV_QPT_UC) == (send | write | window));
    CHECK(send_ops_of(IBV_QPT_UD) == send);
    CHECK(send_ops_of(IBV_QPT_RAW_PACKET) == IBV_QP_EX_WITH_SEND); // no TSO
    CHECK(send_ops_of(IBV_QPT_XRC_RECV) == 0);
}
