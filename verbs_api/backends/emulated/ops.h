// The verbs that apps reach through the context's ops tables (the inline verbs of
// <infiniband/verbs.h>), installed by ibv_open_device.
#pragma once

#include "emu/ipc/protocol.h"
#include "emu/ipc/rings.h"

#include <infiniband/verbs.h>

namespace verbs {

int poll_cq(ibv_cq* cq, int num_entries, ibv_wc* wc);
int req_notify_cq(ibv_cq* cq, int solicited_only);
int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr);
int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr);
int post_srq_recv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr);
int post_srq_ops(ibv_srq* srq, ibv_ops_wr* wr, ibv_ops_wr** bad_wr);
int post_wq_recv(ibv_wq* wq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr);

ibv_qp* create_qp_ex(ibv_context* ctx, ibv_qp_init_attr_ex* attr);
ibv_qp* open_qp(ibv_context* ctx, ibv_qp_open_attr* attr);
ibv_srq* create_srq_ex(ibv_context* ctx, ibv_srq_init_attr_ex* attr);
int get_srq_num(ibv_srq* srq, uint32_t* srq_num);
ibv_xrcd* open_xrcd(ibv_context* ctx, ibv_xrcd_init_attr* attr);
int close_xrcd(ibv_xrcd* xrcd);
ibv_cq_ex* create_cq_ex(ibv_context* ctx, ibv_cq_init_attr_ex* attr);
void install_cq_ex_ops(ibv_cq_ex& cq);
int query_rt_values_ex(ibv_context* ctx, ibv_values_ex* values);

int advise_mr(ibv_pd* pd, ibv_advise_mr_advice advice, uint32_t flags, ibv_sge* sg_list,
              uint32_t num_sge);

ibv_dm* alloc_dm(ibv_context* ctx, ibv_alloc_dm_attr* attr);
int free_dm(ibv_dm* dm);
ibv_mr* reg_dm_mr(ibv_pd* pd, ibv_dm* dm, uint64_t dm_offset, size_t length, unsigned int access);

ibv_td* alloc_td(ibv_context* ctx, ibv_td_init_attr* attr);
int dealloc_td(ibv_td* td);
ibv_pd* alloc_parent_domain(ibv_context* ctx, ibv_parent_domain_init_attr* attr);

// The app's ibv_mr for an MR the NIC registered (deregistered again if that fails).
ibv_mr* wrap_mr(ibv_pd* pd, const emu::ipc::RegMrReply& r, void* addr, size_t length,
                uint64_t shared_region = 0);
ibv_mw* alloc_mw(ibv_pd* pd, ibv_mw_type type);
int dealloc_mw(ibv_mw* mw);
int bind_mw(ibv_qp* qp, ibv_mw* mw, ibv_mw_bind* bind);
// A BIND_MW WQE (fields as emu::ipc::SendWqe documents them).
void fill_bind_wqe(emu::ipc::SendWqe& w, ibv_mw* mw, uint32_t rkey, const ibv_mw_bind_info& info);
// The rkey a bind of `mw` with new rkey `rkey` gives it: the window's index (upper 24 bits),
// the consumer's key byte (the NIC takes only that from the WR, as rxe and mlx5 do).
uint32_t bound_rkey(const ibv_mw* mw, uint32_t rkey);

// Flow steering and RSS (raw packet QPs).
ibv_flow* create_flow(ibv_qp* qp, ibv_flow_attr* attr);
int destroy_flow(ibv_flow* flow);
ibv_wq* create_wq(ibv_context* ctx, ibv_wq_init_attr* attr);
int modify_wq(ibv_wq* wq, ibv_wq_attr* attr);
int destroy_wq(ibv_wq* wq);
ibv_rwq_ind_table* create_rwq_ind_table(ibv_context* ctx, ibv_rwq_ind_table_init_attr* attr);
int destroy_rwq_ind_table(ibv_rwq_ind_table* table);

int query_port(ibv_context* ctx, uint8_t port, ibv_port_attr* attr, size_t attr_size);
int query_device_ex(ibv_context* ctx, const ibv_query_device_ex_input* input,
                    ibv_device_attr_ex* attr, size_t attr_size);

} // namespace verbs
