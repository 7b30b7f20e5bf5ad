// The emulated backend's implementation of each exported verb that has a backend to choose
// (the nicsim devices: one file per verbs object beside this header). The exported names
// themselves are in routed_verbs.cpp, which sends each call to this backend or to rdma-core's
// library by the device the object belongs to. Each declaration takes the public one's type.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>

namespace verbs::emulated {

decltype(::_ibv_query_gid_ex) _ibv_query_gid_ex;
decltype(::_ibv_query_gid_table) _ibv_query_gid_table;
decltype(::ibv_ack_async_event) ibv_ack_async_event;
decltype(::ibv_ack_cq_events) ibv_ack_cq_events;
decltype(::ibv_alloc_pd) ibv_alloc_pd;
decltype(::ibv_attach_mcast) ibv_attach_mcast;
decltype(::ibv_close_device) ibv_close_device;
decltype(::ibv_create_ah) ibv_create_ah;
decltype(::ibv_create_ah_from_wc) ibv_create_ah_from_wc;
decltype(::ibv_create_comp_channel) ibv_create_comp_channel;
decltype(::ibv_create_cq) ibv_create_cq;
decltype(::ibv_create_qp) ibv_create_qp;
decltype(::ibv_create_srq) ibv_create_srq;
decltype(::ibv_dealloc_pd) ibv_dealloc_pd;
decltype(::ibv_dereg_mr) ibv_dereg_mr;
decltype(::ibv_destroy_ah) ibv_destroy_ah;
decltype(::ibv_destroy_comp_channel) ibv_destroy_comp_channel;
decltype(::ibv_destroy_cq) ibv_destroy_cq;
decltype(::ibv_destroy_qp) ibv_destroy_qp;
decltype(::ibv_destroy_srq) ibv_destroy_srq;
decltype(::ibv_detach_mcast) ibv_detach_mcast;
int ibv_dofork_range(void* base, size_t size);   // not in <infiniband/verbs.h>
int ibv_dontfork_range(void* base, size_t size); // not in <infiniband/verbs.h>
decltype(::ibv_fork_init) ibv_fork_init;
decltype(::ibv_free_device_list) ibv_free_device_list;
decltype(::ibv_get_async_event) ibv_get_async_event;
decltype(::ibv_get_cq_event) ibv_get_cq_event;
decltype(::ibv_get_device_guid) ibv_get_device_guid;
decltype(::ibv_get_device_index) ibv_get_device_index;
decltype(::ibv_get_device_list) ibv_get_device_list;
decltype(::ibv_get_device_name) ibv_get_device_name;
decltype(::ibv_get_pkey_index) ibv_get_pkey_index;
decltype(::ibv_import_device) ibv_import_device;
decltype(::ibv_import_dm) ibv_import_dm;
decltype(::ibv_import_mr) ibv_import_mr;
decltype(::ibv_import_pd) ibv_import_pd;
decltype(::ibv_init_ah_from_wc) ibv_init_ah_from_wc;
decltype(::ibv_is_fork_initialized) ibv_is_fork_initialized;
decltype(::ibv_modify_qp) ibv_modify_qp;
decltype(::ibv_modify_srq) ibv_modify_srq;
decltype(::ibv_open_device) ibv_open_device;
decltype(::ibv_qp_to_qp_ex) ibv_qp_to_qp_ex;
decltype(::ibv_query_device) ibv_query_device;
decltype(::ibv_query_ece) ibv_query_ece;
decltype(::ibv_query_gid) ibv_query_gid;
decltype(::ibv_query_pkey) ibv_query_pkey;
decltype(::ibv_query_port) ibv_query_port;
decltype(::ibv_query_qp) ibv_query_qp;
decltype(::ibv_query_qp_data_in_order) ibv_query_qp_data_in_order;
decltype(::ibv_query_srq) ibv_query_srq;
decltype(::ibv_reg_dmabuf_mr) ibv_reg_dmabuf_mr;
decltype(::ibv_reg_mr) ibv_reg_mr;
decltype(::ibv_reg_mr_iova) ibv_reg_mr_iova;
decltype(::ibv_reg_mr_iova2) ibv_reg_mr_iova2;
decltype(::ibv_rereg_mr) ibv_rereg_mr;
decltype(::ibv_resize_cq) ibv_resize_cq;
decltype(::ibv_resolve_eth_l2_from_gid) ibv_resolve_eth_l2_from_gid;
decltype(::ibv_set_ece) ibv_set_ece;
decltype(::ibv_unimport_dm) ibv_unimport_dm;
decltype(::ibv_unimport_mr) ibv_unimport_mr;
decltype(::ibv_unimport_pd) ibv_unimport_pd;

} // namespace verbs::emulated
