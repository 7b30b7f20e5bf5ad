// How the trace shows librdmacm's arguments and events (emu/cm_trace_text.h).
#include "emu/cm_trace_text.h"

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <cstring>

namespace text = emu::cm_text;

TEST_CASE("CM addresses print as a.b.c.d:port and [v6]:port, port spaces and options by name") {
    sockaddr_in in{};
    in.sin_family = AF_INET;
    in.sin_port = htons(7471);
    inet_pton(AF_INET, "127.0.0.2", &in.sin_addr);
    CHECK(text::addr(reinterpret_cast<sockaddr*>(&in)) == "127.0.0.2:7471");
    sockaddr_in6 in6{};
    in6.sin6_family = AF_INET6;
    in6.sin6_port = htons(20079);
    inet_pton(AF_INET6, "::ffff:127.0.0.1", &in6.sin6_addr);
    CHECK(text::addr(reinterpret_cast<sockaddr*>(&in6)) == "[::ffff:127.0.0.1]:20079");
    CHECK(text::addr(nullptr) == "NULL");
    CHECK(text::port_space(RDMA_PS_TCP) == "RDMA_PS_TCP");
    CHECK(text::port_space(RDMA_PS_UDP) == "RDMA_PS_UDP");
    CHECK(text::port_space(0x99) == "153");
    CHECK(text::option(RDMA_OPTION_ID, RDMA_OPTION_ID_TOS) == "RDMA_OPTION_ID_TOS");
    CHECK(text::option(RDMA_OPTION_IB, RDMA_OPTION_IB_PATH) == "RDMA_OPTION_IB_PATH");
    CHECK(text::option(7, 9) == "7/9");
    CHECK(text::ai_flags(RAI_PASSIVE | RAI_NUMERICHOST) == "RAI_PASSIVE|RAI_NUMERICHOST");
    CHECK(text::ai_flags(0) == "0");
}

TEST_CASE("CM events print their name, ID, status and the parameters they carry") {
    rdma_cm_event e{};
    e.event = RDMA_CM_EVENT_CONNECT_REQUEST;
    e.param.conn.private_data_len = 56;
    e.param.conn.responder_resources = 1;
    e.param.conn.initiator_depth = 2;
    e.param.conn.flow_control = 1;
    e.param.conn.retry_count = 7;
    e.param.conn.rnr_retry_count = 7;
    e.param.conn.qp_num = 0x11;
    CHECK(text::event(e, "cm_id(4)", "cm_id(2)", false) ==
          "RDMA_CM_EVENT_CONNECT_REQUEST id=cm_id(4) listen_id=cm_id(2) status=0 "
          "conn={private_data_len=56 responder_resources=1 initiator_depth=2 flow_control=1 "
          "retry_count=7 rnr_retry_count=7 srq=0 qp_num=0x11}");
    e = {};
    e.event = RDMA_CM_EVENT_ESTABLISHED;
    e.param.ud.qp_num = 0x12;
    e.param.ud.qkey = 0x11111111;
    CHECK(text::event(e, "cm_id(3)", "NULL", true) ==
          "RDMA_CM_EVENT_ESTABLISHED id=cm_id(3) status=0 "
          "ud={private_data_len=0 qp_num=0x12 qkey=0x11111111}");
    e = {};
    e.event = RDMA_CM_EVENT_ADDR_ERROR;
    e.status = -110;
    CHECK(text::event(e, "cm_id(1)", "NULL", false) ==
          "RDMA_CM_EVENT_ADDR_ERROR id=cm_id(1) status=-110");
    e = {};
    e.event = RDMA_CM_EVENT_REJECTED;
    e.status = 28;
    e.param.conn.private_data_len = 8;
    CHECK(text::event(e, "cm_id(1)", "NULL", false) ==
          "RDMA_CM_EVENT_REJECTED id=cm_id(1) status=28 private_data_len=8");
}

TEST_CASE("a QP's init attributes print as the verbs lines show them") {
    ibv_qp_init_attr a{};
    a.qp_type = IBV_QPT_RC;
    a.cap.max_send_wr = 10;
    a.cap.max_recv_wr = 20;
    a.cap.max_send_sge = 1;
    a.cap.max_recv_sge = 2;
    CHECK(text::qp_init_attr(&a) ==
          "{type=IBV_QPT_RC send_wr=10 recv_wr=20 send_sge=1 recv_sge=2 inline=0 sig_all=0}");
    CHECK(text::qp_init_attr(nullptr) == "NULL");
}

TEST_CASE("an SRQ's init attributes print as the verbs lines show them, with its type") {
    ibv_srq_init_attr a{};
    a.attr.max_wr = 64;
    a.attr.max_sge = 2;
    a.attr.srq_limit = 4;
    CHECK(text::srq_init_attr(&a) == "{max_wr=64 max_sge=2 limit=4}");
    ibv_srq_init_attr_ex x{};
    x.attr = a.attr;
    CHECK(text::srq_init_attr_ex(&x) == "{type=IBV_SRQT_BASIC max_wr=64 max_sge=2 limit=4}");
    x.comp_mask = IBV_SRQ_INIT_ATTR_TYPE;
    x.srq_type = IBV_SRQT_XRC;
    CHECK(text::srq_init_attr_ex(&x) == "{type=IBV_SRQT_XRC max_wr=64 max_sge=2 limit=4}");
    CHECK(text::srq_init_attr(nullptr) == "NULL");
}
