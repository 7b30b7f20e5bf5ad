// The librdmacm calls without their trace line: each exported rdma_* call is defined in
// cm_trace.cpp, which traces it and calls its untraced_* body here. A call the library makes
// itself through the exported name (rdma_create_qp calling rdma_create_qp_ex) is nested in the
// outer one and so not traced.
#pragma once

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

int untraced_rdma_bind_addr(rdma_cm_id* id, sockaddr* addr);
int untraced_rdma_resolve_addr(rdma_cm_id* id, sockaddr* src_addr, sockaddr* dst_addr,
                               int timeout_ms);
int untraced_rdma_resolve_route(rdma_cm_id* id, int timeout_ms);
int untraced_rdma_getaddrinfo(const char* node, const char* service, const rdma_addrinfo* hints,
                              rdma_addrinfo** res);
void untraced_rdma_freeaddrinfo(rdma_addrinfo* res);
int untraced_rdma_create_ep(rdma_cm_id** id, rdma_addrinfo* res, ibv_pd* pd,
                            ibv_qp_init_attr* qp_init_attr);
void untraced_rdma_destroy_ep(rdma_cm_id* id);
int untraced_rdma_init_qp_attr(rdma_cm_id* id, ibv_qp_attr* qp_attr, int* qp_attr_mask);
int untraced_rdma_connect(rdma_cm_id* id, rdma_conn_param* conn_param);
int untraced_rdma_listen(rdma_cm_id* id, int backlog);
int untraced_rdma_get_request(rdma_cm_id* listen, rdma_cm_id** id);
int untraced_rdma_accept(rdma_cm_id* id, rdma_conn_param* conn_param);
int untraced_rdma_reject(rdma_cm_id* id, const void* private_data, uint8_t private_data_len);
int untraced_rdma_reject_ece(rdma_cm_id* id, const void* private_data, uint8_t private_data_len);
int untraced_rdma_notify(rdma_cm_id* id, ibv_event_type event);
int untraced_rdma_disconnect(rdma_cm_id* id);
int untraced_rdma_establish(rdma_cm_id* id);
int untraced_rdma_set_option(rdma_cm_id* id, int level, int optname, void* optval, size_t optlen);
rdma_event_channel* untraced_rdma_create_event_channel();
void untraced_rdma_destroy_event_channel(rdma_event_channel* channel);
int untraced_rdma_get_cm_event(rdma_event_channel* channel, rdma_cm_event** event);
int untraced_rdma_ack_cm_event(rdma_cm_event* event);
int untraced_rdma_create_id(rdma_event_channel* channel, rdma_cm_id** id, void* context,
                            rdma_port_space ps);
int untraced_rdma_destroy_id(rdma_cm_id* id);
int untraced_rdma_migrate_id(rdma_cm_id* id, rdma_event_channel* channel);
int untraced_rdma_join_multicast(rdma_cm_id* id, sockaddr* addr, void* context);
int untraced_rdma_join_multicast_ex(rdma_cm_id* id, rdma_cm_join_mc_attr_ex* attr, void* context);
int untraced_rdma_leave_multicast(rdma_cm_id* id, sockaddr* addr);
int untraced_rdma_create_qp_ex(rdma_cm_id* id, ibv_qp_init_attr_ex* attr);
int untraced_rdma_create_qp(rdma_cm_id* id, ibv_pd* pd, ibv_qp_init_attr* qp_init_attr);
void untraced_rdma_destroy_qp(rdma_cm_id* id);
int untraced_rdma_create_srq_ex(rdma_cm_id* id, ibv_srq_init_attr_ex* attr);
int untraced_rdma_create_srq(rdma_cm_id* id, ibv_pd* pd, ibv_srq_init_attr* attr);
void untraced_rdma_destroy_srq(rdma_cm_id* id);
