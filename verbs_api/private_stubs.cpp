// IBVERBS_PRIVATE_34: the interface between libibverbs and its providers (rdma-core's
// libibverbs/driver.h and cmd_ioctl.h, which are not installed). Real providers are loaded next
// to us even though we never use them: perftest binaries have libmlx5.so.1 and libefa.so.1 as
// NEEDED, and those bind these names at load time (BIND_NOW) and call verbs_register_driver_34
// from their constructors. So every name must exist; none of it needs to work, because we never
// hand a provider a device, so it never gets to create a context or an object.
//
// Conventions kept from rdma-core so a caller that does get here sees an ordinary failure:
// ibv_cmd_* and execute_ioctl return an errno value (EOPNOTSUPP), ibv_cmd_poll_cq returns -1, the
// post calls also point *bad_wr at the first work request, pointer returns are NULL; errno is
// EOPNOTSUPP in all these cases.
//
// ibv_query_gid_type (also private) lives with the GID code; ibv_read_ibdev_sysfs_file with the
// other sysfs readers in sysfs.cpp.

#include "export.h"

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

// Provider-side types from driver.h; only pointers to them pass through here.
struct verbs_device_ops;
struct verbs_context_ops;
struct verbs_mr;
struct verbs_xrcd;
struct verbs_cq;
struct verbs_srq;
struct verbs_qp;
struct verbs_flow_action;
struct verbs_dm;
struct verbs_counters;

// The write()-ABI command structs of rdma-core's kern-abi.h (header + ib_uverbs_* payload).
struct ibv_get_context;
struct ibv_query_port;
struct ibv_alloc_pd;
struct ibv_open_xrcd;
struct ibv_reg_mr;
struct ibv_rereg_mr;
struct ibv_alloc_mw;
struct ibv_create_cq;
struct ibv_create_cq_ex;
struct ibv_resize_cq;
struct ibv_modify_cq;
struct ibv_create_srq;
struct ibv_create_xsrq;
struct ibv_modify_srq;
struct ibv_query_srq;
struct ibv_create_qp;
struct ibv_create_qp_ex;
struct ibv_open_qp;
struct ibv_query_qp;
struct ibv_modify_qp;
struct ibv_modify_qp_ex;
struct ibv_create_wq;
struct ibv_modify_wq;

namespace rdma_core {

// cmd_ioctl.h's command buffer: a chain of blocks of ioctl attributes that execute_ioctl would
// linearize. Only its head is read here (by __ioctl_final_num_attrs).
struct ibv_command_buffer {
    ibv_command_buffer* next;
    ib_uverbs_attr* next_attr;
    ib_uverbs_attr* last_attr;
    uint8_t uhw_in_idx;
    uint8_t uhw_out_idx;
    uint8_t uhw_in_headroom_dwords;
    uint8_t uhw_out_headroom_dwords;
    uint8_t buffer_error : 1;
    uint8_t fallback_require_ex : 1;
    uint8_t fallback_ioctl_only : 1;
    ib_uverbs_ioctl_hdr hdr; // ends in the flexible array attrs[]
};
static_assert(offsetof(ibv_command_buffer, hdr) == 32, "rdma-core 44 layout");

} // namespace rdma_core

using rdma_core::ibv_command_buffer;

namespace {

int unsupported() {
    errno = EOPNOTSUPP;
    return EOPNOTSUPP;
}

template <typename T> T* unsupported_null() {
    errno = EOPNOTSUPP;
    return nullptr;
}

} // namespace

// Provider registration and contexts.

// A provider's constructor announces itself here. We never match it to a device.
VERBS_EXPORT void verbs_register_driver_34(const verbs_device_ops*) {}

// Providers set this to let destroy calls succeed after a device was disassociated.
extern "C" {
__attribute__((visibility("default"))) bool verbs_allow_disassociate_destroy = false;
}

VERBS_EXPORT void* _verbs_init_and_alloc_context(ibv_device*, int /*cmd_fd*/, size_t /*alloc_size*/,
                                                 verbs_context* /*context_offset*/,
                                                 uint32_t /*driver_id*/) {
    return unsupported_null<void>();
}

VERBS_EXPORT ibv_context* verbs_open_device(ibv_device*, void* /*private_data*/) {
    return unsupported_null<ibv_context>();
}

// Only reached by a provider tearing down a context it got from _verbs_init_and_alloc_context.
VERBS_EXPORT void verbs_uninit_context(verbs_context*) {}

VERBS_EXPORT void verbs_set_ops(verbs_context*, const verbs_context_ops*) {}

// Initializes the core part of a CQ after ibv_cmd_create_cq*; those never succeed here.
VERBS_EXPORT void verbs_init_cq(ibv_cq*, ibv_context*, ibv_comp_channel*, void* /*cq_context*/) {}

VERBS_EXPORT void __verbs_log(verbs_context*, uint32_t /*level*/, const char* /*fmt*/, ...) {}

VERBS_EXPORT int ibv_cmd_get_context(verbs_context*, struct ibv_get_context*, size_t,
                                     ib_uverbs_get_context_resp*, size_t) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_query_context(ibv_context*, ibv_command_buffer*) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_query_device_any(ibv_context*, const ibv_query_device_ex_input*,
                                          ibv_device_attr_ex*, size_t,
                                          ib_uverbs_ex_query_device_resp*, size_t*) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_query_port(ibv_context*, uint8_t, ibv_port_attr*, struct ibv_query_port*,
                                    size_t) {
    return unsupported();
}

// The ioctl() command path.

// Number of attributes in a command and in all the blocks linked to it.
VERBS_EXPORT unsigned int __ioctl_final_num_attrs(unsigned int num_attrs,
                                                  ibv_command_buffer* link) {
    for (; link; link = link->next)
        num_attrs += static_cast<unsigned int>(link->next_attr - link->hdr.attrs);
    return num_attrs;
}

VERBS_EXPORT int execute_ioctl(ibv_context*, ibv_command_buffer*) {
    return unsupported();
}

// Protection domains, XRC domains, memory regions and windows, device memory.

VERBS_EXPORT int ibv_cmd_alloc_pd(ibv_context*, ibv_pd*, struct ibv_alloc_pd*, size_t,
                                  ib_uverbs_alloc_pd_resp*, size_t) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_dealloc_pd(ibv_pd*) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_open_xrcd(ibv_context*, verbs_xrcd*, int, ibv_xrcd_init_attr*,
                                   struct ibv_open_xrcd*, size_t, ib_uverbs_open_xrcd_resp*,
                                   size_t) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_close_xrcd(verbs_xrcd*) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_reg_mr(ibv_pd*, void*, size_t, uint64_t, int, verbs_mr*,
                                struct ibv_reg_mr*, size_t, ib_uverbs_reg_mr_resp*, size_t) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_rereg_mr(verbs_mr*, uint32_t, void*, size_t, uint64_t, int, ibv_pd*,
                                  struct ibv_rereg_mr*, size_t, ib_uverbs_rereg_mr_resp*, size_t) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_dereg_mr(verbs_mr*) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_query_mr(ibv_pd*, verbs_mr*, uint32_t) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_advise_mr(ibv_pd*, ibv_advise_mr_advice, uint32_t, ibv_sge*, uint32_t) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_reg_dmabuf_mr(ibv_pd*, uint64_t, size_t, uint64_t, int, int, verbs_mr*) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_alloc_mw(ibv_pd*, ibv_mw_type, ibv_mw*, struct ibv_alloc_mw*, size_t,
                                  ib_uverbs_alloc_mw_resp*, size_t) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_dealloc_mw(ibv_mw*) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_alloc_dm(ibv_context*, const ibv_alloc_dm_attr*, verbs_dm*,
                                  ibv_command_buffer*) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_free_dm(verbs_dm*) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_reg_dm_mr(ibv_pd*, verbs_dm*, uint64_t, size_t, unsigned int, verbs_mr*,
                                   ibv_command_buffer*) {
    return unsupported();
}

// Completion queues.

VERBS_EXPORT int ibv_cmd_create_cq(ibv_context*, int, ibv_comp_channel*, int, ibv_cq*,
                                   struct ibv_create_cq*, size_t, ib_uverbs_create_cq_resp*,
                                   size_t) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_create_cq_ex(ibv_context*, const ibv_cq_init_attr_ex*, verbs_cq*,
                                      struct ibv_create_cq_ex*, size_t,
                                      ib_uverbs_ex_create_cq_resp*, size_t,
                                      uint32_t /*cmd_flags*/) {
    return unsupported();
}

// Returns a completion count, so failure is -1, as in rdma-core.
VERBS_EXPORT int ibv_cmd_poll_cq(ibv_cq*, int, ibv_wc*) {
    errno = EOPNOTSUPP;
    return -1;
}

VERBS_EXPORT int ibv_cmd_req_notify_cq(ibv_cq*, int) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_resize_cq(ibv_cq*, int, struct ibv_resize_cq*, size_t,
                                   ib_uverbs_resize_cq_resp*, size_t) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_modify_cq(ibv_cq*, ibv_modify_cq_attr*, struct ibv_modify_cq*, size_t) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_destroy_cq(ibv_cq*) {
    return unsupported();
}

// Shared receive queues.

VERBS_EXPORT int ibv_cmd_create_srq(ibv_pd*, ibv_srq*, ibv_srq_init_attr*, struct ibv_create_srq*,
                                    size_t, ib_uverbs_create_srq_resp*, size_t) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_create_srq_ex(ibv_context*, verbs_srq*, ibv_srq_init_attr_ex*,
                                       struct ibv_create_xsrq*, size_t, ib_uverbs_create_srq_resp*,
                                       size_t) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_modify_srq(ibv_srq*, ibv_srq_attr*, int, struct ibv_modify_srq*, size_t) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_query_srq(ibv_srq*, ibv_srq_attr*, struct ibv_query_srq*, size_t) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_destroy_srq(ibv_srq*) {
    return unsupported();
}

// Queue pairs and work requests.

VERBS_EXPORT int ibv_cmd_create_qp(ibv_pd*, ibv_qp*, ibv_qp_init_attr*, struct ibv_create_qp*,
                                   size_t, ib_uverbs_create_qp_resp*, size_t) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_create_qp_ex(ibv_context*, verbs_qp*, ibv_qp_init_attr_ex*,
                                      struct ibv_create_qp*, size_t, ib_uverbs_create_qp_resp*,
                                      size_t) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_create_qp_ex2(ibv_context*, verbs_qp*, ibv_qp_init_attr_ex*,
                                       struct ibv_create_qp_ex*, size_t,
                                       ib_uverbs_ex_create_qp_resp*, size_t) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_open_qp(ibv_context*, verbs_qp*, int, ibv_qp_open_attr*,
                                 struct ibv_open_qp*, size_t, ib_uverbs_create_qp_resp*, size_t) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_query_qp(ibv_qp*, ibv_qp_attr*, int, ibv_qp_init_attr*,
                                  struct ibv_query_qp*, size_t) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_modify_qp(ibv_qp*, ibv_qp_attr*, int, struct ibv_modify_qp*, size_t) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_modify_qp_ex(ibv_qp*, ibv_qp_attr*, int, struct ibv_modify_qp_ex*, size_t,
                                      ib_uverbs_ex_modify_qp_resp*, size_t) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_destroy_qp(ibv_qp*) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_post_send(ibv_qp*, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
    if (bad_wr) *bad_wr = wr;
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_post_recv(ibv_qp*, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
    if (bad_wr) *bad_wr = wr;
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_post_srq_recv(ibv_srq*, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
    if (bad_wr) *bad_wr = wr;
    return unsupported();
}

// Address handles and multicast.

VERBS_EXPORT int ibv_cmd_create_ah(ibv_pd*, ibv_ah*, ibv_ah_attr*, ib_uverbs_create_ah_resp*,
                                   size_t) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_destroy_ah(ibv_ah*) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_attach_mcast(ibv_qp*, const ibv_gid*, uint16_t) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_detach_mcast(ibv_qp*, const ibv_gid*, uint16_t) {
    return unsupported();
}

// Flow steering, flow actions, work queues, RSS indirection tables, counters.

VERBS_EXPORT int ibv_cmd_create_flow(ibv_qp*, ibv_flow*, ibv_flow_attr*, void* /*ucmd*/,
                                     size_t /*ucmd_size*/) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_destroy_flow(ibv_flow*) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_create_flow_action_esp(ibv_context*, ibv_flow_action_esp_attr*,
                                                verbs_flow_action*, ibv_command_buffer*) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_modify_flow_action_esp(verbs_flow_action*, ibv_flow_action_esp_attr*,
                                                ibv_command_buffer*) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_destroy_flow_action(verbs_flow_action*) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_create_wq(ibv_context*, ibv_wq_init_attr*, ibv_wq*, struct ibv_create_wq*,
                                   size_t, ib_uverbs_ex_create_wq_resp*, size_t) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_modify_wq(ibv_wq*, ibv_wq_attr*, struct ibv_modify_wq*, size_t) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_destroy_wq(ibv_wq*) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_create_rwq_ind_table(ibv_context*, ibv_rwq_ind_table_init_attr*,
                                              ibv_rwq_ind_table*,
                                              ib_uverbs_ex_create_rwq_ind_table_resp*, size_t) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_destroy_rwq_ind_table(ibv_rwq_ind_table*) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_create_counters(ibv_context*, ibv_counters_init_attr*, verbs_counters*,
                                         ibv_command_buffer*) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_destroy_counters(verbs_counters*) {
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_read_counters(verbs_counters*, uint64_t*, uint32_t, uint32_t,
                                       ibv_command_buffer*) {
    return unsupported();
}
