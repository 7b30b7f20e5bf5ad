// How the trace (RDMAEMU_TRACE) shows librdmacm's arguments and events: names for port spaces,
// QP types, options and events, addresses as a.b.c.d:port ([v6]:port), QP numbers in hex as the
// verbs lines show them. librdmacm writes `verb rdma_NAME(ARGS) = RESULT` and, for each event
// rdma_get_cm_event returns, `cm EVENT_TEXT`.
#pragma once

#include <rdma/rdma_cma.h>

#include <cstdint>
#include <string>

namespace emu::cm_text {

std::string addr(const sockaddr* sa);             // 10.0.0.2:7471, [fe80::1]:7471, NULL
std::string port_space(int ps);                   // RDMA_PS_TCP
std::string option(int level, int optname);       // RDMA_OPTION_ID_TOS, or LEVEL/NAME numbers
std::string ai_flags(int flags);                  // RAI_PASSIVE|RAI_NUMERICHOST, or 0
std::string conn_param(const rdma_conn_param* p); // {private_data_len=... qp_num=0x11}
std::string ud_param(const rdma_ud_param* p);     // {private_data_len=... qp_num=0x11 qkey=0x...}
std::string qp_init_attr(const ibv_qp_init_attr* a);   // as the verbs lines show it
std::string srq_init_attr(const ibv_srq_init_attr* a); // {max_wr=... max_sge=... limit=...}
// {type=IBV_SRQT_XRC max_wr=... max_sge=... limit=...}
std::string srq_init_attr_ex(const ibv_srq_init_attr_ex* a);
std::string
addrinfo(const rdma_addrinfo* ai); // {flags=... qp_type=... port_space=... src=... dst=...}
// "cm_id(HANDLE)": `handle` is the NIC's number of the ID (0 before it has one).
std::string id(const void* id, uint32_t handle);
// An event: its name, its ID (and for a request the listening one), its status and, for those
// that carry them, the connection's or the datagram's parameters. `ud`: the ID's port space is
// RDMA_PS_UDP or RDMA_PS_IPOIB (rdma-core fills param.ud then).
std::string event(const rdma_cm_event& e, const std::string& id, const std::string& listen_id,
                  bool ud);

} // namespace emu::cm_text
