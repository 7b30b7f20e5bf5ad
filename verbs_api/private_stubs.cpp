// IBVERBS_PRIVATE_34: the interface between libibverbs and its providers (rdma-core's
// libibverbs/driver.h and cmd_ioctl.h, which are not installed). Real providers are loaded next
// to us: perftest binaries have libmlx5.so.1 and libefa.so.1 as NEEDED, and those bind these names
// at load time (BIND_NOW) and call verbs_register_driver_34 from their constructors; in hardware
// and mixed mode rdma-core's own library loads the provider of each real device. So every name
// must exist. Once rdma-core's library is loaded (hardware backend) each call is a provider's and
// goes to the real definition with all its arguments; before that, and in emulated mode, the stub
// answers, because we never hand a provider an emulated device.
//
// Conventions kept from rdma-core so a caller that does get here sees an ordinary failure:
// ibv_cmd_* and execute_ioctl return an errno value (EOPNOTSUPP), ibv_cmd_poll_cq returns -1, the
// post calls also point *bad_wr at the first work request, pointer returns are NULL; errno is
// EOPNOTSUPP in all these cases.
//
// ibv_query_gid_type (also private) lives with the GID code; ibv_read_ibdev_sysfs_file with the
// other sysfs readers in sysfs.cpp.

#include "backends/hardware/real_library.h"
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

// A provider's constructor announces itself here: for rdma-core's library when it is loaded, or
// kept for it until it is (a provider a program links is loaded first).
VERBS_EXPORT void verbs_register_driver_34(const verbs_device_ops* ops) {
    FORWARD_TO_REAL_LIBRARY(verbs_register_driver_34, ops);
    verbs::hardware::defer_driver_registration(ops);
}

// Providers set this to let destroy calls succeed after a device was disassociated.
extern "C" {
__attribute__((visibility("default"))) bool verbs_allow_disassociate_destroy = false;
}

VERBS_EXPORT void* _verbs_init_and_alloc_context(ibv_device* a0, int cmd_fd, size_t alloc_size,
                                                 verbs_context* context_offset,
                                                 uint32_t driver_id) {
    FORWARD_TO_REAL_LIBRARY(_verbs_init_and_alloc_context, a0, cmd_fd, alloc_size, context_offset,
                            driver_id);
    return unsupported_null<void>();
}

VERBS_EXPORT ibv_context* verbs_open_device(ibv_device* a0, void* private_data) {
    FORWARD_TO_REAL_LIBRARY(verbs_open_device, a0, private_data);
    return unsupported_null<ibv_context>();
}

// Only reached by a provider tearing down a context it got from _verbs_init_and_alloc_context.
VERBS_EXPORT void verbs_uninit_context(verbs_context* a0) {
    FORWARD_TO_REAL_LIBRARY(verbs_uninit_context, a0);
}

VERBS_EXPORT void verbs_set_ops(verbs_context* a0, const verbs_context_ops* a1) {
    FORWARD_TO_REAL_LIBRARY(verbs_set_ops, a0, a1);
}

// Initializes the core part of a CQ after ibv_cmd_create_cq*; those never succeed here.
VERBS_EXPORT void verbs_init_cq(ibv_cq* a0, ibv_context* a1, ibv_comp_channel* a2,
                                void* cq_context) {
    FORWARD_TO_REAL_LIBRARY(verbs_init_cq, a0, a1, a2, cq_context);
}

VERBS_EXPORT int ibv_cmd_get_context(verbs_context* a0, struct ibv_get_context* a1, size_t a2,
                                     ib_uverbs_get_context_resp* a3, size_t a4) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_get_context, a0, a1, a2, a3, a4);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_query_context(ibv_context* a0, ibv_command_buffer* a1) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_query_context, a0, a1);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_query_device_any(ibv_context* a0, const ibv_query_device_ex_input* a1,
                                          ibv_device_attr_ex* a2, size_t a3,
                                          ib_uverbs_ex_query_device_resp* a4, size_t* a5) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_query_device_any, a0, a1, a2, a3, a4, a5);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_query_port(ibv_context* a0, uint8_t a1, ibv_port_attr* a2,
                                    struct ibv_query_port* a3, size_t a4) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_query_port, a0, a1, a2, a3, a4);
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

VERBS_EXPORT int execute_ioctl(ibv_context* a0, ibv_command_buffer* a1) {
    FORWARD_TO_REAL_LIBRARY(execute_ioctl, a0, a1);
    return unsupported();
}

// Protection domains, XRC domains, memory regions and windows, device memory.

VERBS_EXPORT int ibv_cmd_alloc_pd(ibv_context* a0, ibv_pd* a1, struct ibv_alloc_pd* a2, size_t a3,
                                  ib_uverbs_alloc_pd_resp* a4, size_t a5) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_alloc_pd, a0, a1, a2, a3, a4, a5);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_dealloc_pd(ibv_pd* a0) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_dealloc_pd, a0);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_open_xrcd(ibv_context* a0, verbs_xrcd* a1, int a2, ibv_xrcd_init_attr* a3,
                                   struct ibv_open_xrcd* a4, size_t a5,
                                   ib_uverbs_open_xrcd_resp* a6, size_t a7) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_open_xrcd, a0, a1, a2, a3, a4, a5, a6, a7);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_close_xrcd(verbs_xrcd* a0) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_close_xrcd, a0);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_reg_mr(ibv_pd* a0, void* a1, size_t a2, uint64_t a3, int a4, verbs_mr* a5,
                                struct ibv_reg_mr* a6, size_t a7, ib_uverbs_reg_mr_resp* a8,
                                size_t a9) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_reg_mr, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_rereg_mr(verbs_mr* a0, uint32_t a1, void* a2, size_t a3, uint64_t a4,
                                  int a5, ibv_pd* a6, struct ibv_rereg_mr* a7, size_t a8,
                                  ib_uverbs_rereg_mr_resp* a9, size_t a10) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_rereg_mr, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_dereg_mr(verbs_mr* a0) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_dereg_mr, a0);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_query_mr(ibv_pd* a0, verbs_mr* a1, uint32_t a2) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_query_mr, a0, a1, a2);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_advise_mr(ibv_pd* a0, ibv_advise_mr_advice a1, uint32_t a2, ibv_sge* a3,
                                   uint32_t a4) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_advise_mr, a0, a1, a2, a3, a4);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_reg_dmabuf_mr(ibv_pd* a0, uint64_t a1, size_t a2, uint64_t a3, int a4,
                                       int a5, verbs_mr* a6) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_reg_dmabuf_mr, a0, a1, a2, a3, a4, a5, a6);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_alloc_mw(ibv_pd* a0, ibv_mw_type a1, ibv_mw* a2, struct ibv_alloc_mw* a3,
                                  size_t a4, ib_uverbs_alloc_mw_resp* a5, size_t a6) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_alloc_mw, a0, a1, a2, a3, a4, a5, a6);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_dealloc_mw(ibv_mw* a0) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_dealloc_mw, a0);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_alloc_dm(ibv_context* a0, const ibv_alloc_dm_attr* a1, verbs_dm* a2,
                                  ibv_command_buffer* a3) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_alloc_dm, a0, a1, a2, a3);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_free_dm(verbs_dm* a0) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_free_dm, a0);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_reg_dm_mr(ibv_pd* a0, verbs_dm* a1, uint64_t a2, size_t a3,
                                   unsigned int a4, verbs_mr* a5, ibv_command_buffer* a6) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_reg_dm_mr, a0, a1, a2, a3, a4, a5, a6);
    return unsupported();
}

// Completion queues.

VERBS_EXPORT int ibv_cmd_create_cq(ibv_context* a0, int a1, ibv_comp_channel* a2, int a3,
                                   ibv_cq* a4, struct ibv_create_cq* a5, size_t a6,
                                   ib_uverbs_create_cq_resp* a7, size_t a8) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_create_cq, a0, a1, a2, a3, a4, a5, a6, a7, a8);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_create_cq_ex(ibv_context* a0, const ibv_cq_init_attr_ex* a1, verbs_cq* a2,
                                      struct ibv_create_cq_ex* a3, size_t a4,
                                      ib_uverbs_ex_create_cq_resp* a5, size_t a6,
                                      uint32_t cmd_flags) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_create_cq_ex, a0, a1, a2, a3, a4, a5, a6, cmd_flags);
    return unsupported();
}

// Returns a completion count, so failure is -1, as in rdma-core.
VERBS_EXPORT int ibv_cmd_poll_cq(ibv_cq* a0, int a1, ibv_wc* a2) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_poll_cq, a0, a1, a2);
    errno = EOPNOTSUPP;
    return -1;
}

VERBS_EXPORT int ibv_cmd_req_notify_cq(ibv_cq* a0, int a1) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_req_notify_cq, a0, a1);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_resize_cq(ibv_cq* a0, int a1, struct ibv_resize_cq* a2, size_t a3,
                                   ib_uverbs_resize_cq_resp* a4, size_t a5) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_resize_cq, a0, a1, a2, a3, a4, a5);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_modify_cq(ibv_cq* a0, ibv_modify_cq_attr* a1, struct ibv_modify_cq* a2,
                                   size_t a3) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_modify_cq, a0, a1, a2, a3);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_destroy_cq(ibv_cq* a0) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_destroy_cq, a0);
    return unsupported();
}

// Shared receive queues.

VERBS_EXPORT int ibv_cmd_create_srq(ibv_pd* a0, ibv_srq* a1, ibv_srq_init_attr* a2,
                                    struct ibv_create_srq* a3, size_t a4,
                                    ib_uverbs_create_srq_resp* a5, size_t a6) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_create_srq, a0, a1, a2, a3, a4, a5, a6);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_create_srq_ex(ibv_context* a0, verbs_srq* a1, ibv_srq_init_attr_ex* a2,
                                       struct ibv_create_xsrq* a3, size_t a4,
                                       ib_uverbs_create_srq_resp* a5, size_t a6) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_create_srq_ex, a0, a1, a2, a3, a4, a5, a6);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_modify_srq(ibv_srq* a0, ibv_srq_attr* a1, int a2,
                                    struct ibv_modify_srq* a3, size_t a4) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_modify_srq, a0, a1, a2, a3, a4);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_query_srq(ibv_srq* a0, ibv_srq_attr* a1, struct ibv_query_srq* a2,
                                   size_t a3) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_query_srq, a0, a1, a2, a3);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_destroy_srq(ibv_srq* a0) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_destroy_srq, a0);
    return unsupported();
}

// Queue pairs and work requests.

VERBS_EXPORT int ibv_cmd_create_qp(ibv_pd* a0, ibv_qp* a1, ibv_qp_init_attr* a2,
                                   struct ibv_create_qp* a3, size_t a4,
                                   ib_uverbs_create_qp_resp* a5, size_t a6) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_create_qp, a0, a1, a2, a3, a4, a5, a6);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_create_qp_ex(ibv_context* a0, verbs_qp* a1, ibv_qp_init_attr_ex* a2,
                                      struct ibv_create_qp* a3, size_t a4,
                                      ib_uverbs_create_qp_resp* a5, size_t a6) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_create_qp_ex, a0, a1, a2, a3, a4, a5, a6);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_create_qp_ex2(ibv_context* a0, verbs_qp* a1, ibv_qp_init_attr_ex* a2,
                                       struct ibv_create_qp_ex* a3, size_t a4,
                                       ib_uverbs_ex_create_qp_resp* a5, size_t a6) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_create_qp_ex2, a0, a1, a2, a3, a4, a5, a6);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_open_qp(ibv_context* a0, verbs_qp* a1, int a2, ibv_qp_open_attr* a3,
                                 struct ibv_open_qp* a4, size_t a5, ib_uverbs_create_qp_resp* a6,
                                 size_t a7) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_open_qp, a0, a1, a2, a3, a4, a5, a6, a7);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_query_qp(ibv_qp* a0, ibv_qp_attr* a1, int a2, ibv_qp_init_attr* a3,
                                  struct ibv_query_qp* a4, size_t a5) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_query_qp, a0, a1, a2, a3, a4, a5);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_modify_qp(ibv_qp* a0, ibv_qp_attr* a1, int a2, struct ibv_modify_qp* a3,
                                   size_t a4) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_modify_qp, a0, a1, a2, a3, a4);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_modify_qp_ex(ibv_qp* a0, ibv_qp_attr* a1, int a2,
                                      struct ibv_modify_qp_ex* a3, size_t a4,
                                      ib_uverbs_ex_modify_qp_resp* a5, size_t a6) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_modify_qp_ex, a0, a1, a2, a3, a4, a5, a6);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_destroy_qp(ibv_qp* a0) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_destroy_qp, a0);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_post_send(ibv_qp* a0, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_post_send, a0, wr, bad_wr);
    if (bad_wr) *bad_wr = wr;
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_post_recv(ibv_qp* a0, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_post_recv, a0, wr, bad_wr);
    if (bad_wr) *bad_wr = wr;
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_post_srq_recv(ibv_srq* a0, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_post_srq_recv, a0, wr, bad_wr);
    if (bad_wr) *bad_wr = wr;
    return unsupported();
}

// Address handles and multicast.

VERBS_EXPORT int ibv_cmd_create_ah(ibv_pd* a0, ibv_ah* a1, ibv_ah_attr* a2,
                                   ib_uverbs_create_ah_resp* a3, size_t a4) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_create_ah, a0, a1, a2, a3, a4);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_destroy_ah(ibv_ah* a0) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_destroy_ah, a0);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_attach_mcast(ibv_qp* a0, const ibv_gid* a1, uint16_t a2) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_attach_mcast, a0, a1, a2);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_detach_mcast(ibv_qp* a0, const ibv_gid* a1, uint16_t a2) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_detach_mcast, a0, a1, a2);
    return unsupported();
}

// Flow steering, flow actions, work queues, RSS indirection tables, counters.

VERBS_EXPORT int ibv_cmd_create_flow(ibv_qp* a0, ibv_flow* a1, ibv_flow_attr* a2, void* ucmd,
                                     size_t ucmd_size) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_create_flow, a0, a1, a2, ucmd, ucmd_size);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_destroy_flow(ibv_flow* a0) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_destroy_flow, a0);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_create_flow_action_esp(ibv_context* a0, ibv_flow_action_esp_attr* a1,
                                                verbs_flow_action* a2, ibv_command_buffer* a3) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_create_flow_action_esp, a0, a1, a2, a3);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_modify_flow_action_esp(verbs_flow_action* a0, ibv_flow_action_esp_attr* a1,
                                                ibv_command_buffer* a2) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_modify_flow_action_esp, a0, a1, a2);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_destroy_flow_action(verbs_flow_action* a0) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_destroy_flow_action, a0);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_create_wq(ibv_context* a0, ibv_wq_init_attr* a1, ibv_wq* a2,
                                   struct ibv_create_wq* a3, size_t a4,
                                   ib_uverbs_ex_create_wq_resp* a5, size_t a6) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_create_wq, a0, a1, a2, a3, a4, a5, a6);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_modify_wq(ibv_wq* a0, ibv_wq_attr* a1, struct ibv_modify_wq* a2,
                                   size_t a3) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_modify_wq, a0, a1, a2, a3);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_destroy_wq(ibv_wq* a0) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_destroy_wq, a0);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_create_rwq_ind_table(ibv_context* a0, ibv_rwq_ind_table_init_attr* a1,
                                              ibv_rwq_ind_table* a2,
                                              ib_uverbs_ex_create_rwq_ind_table_resp* a3,
                                              size_t a4) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_create_rwq_ind_table, a0, a1, a2, a3, a4);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_destroy_rwq_ind_table(ibv_rwq_ind_table* a0) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_destroy_rwq_ind_table, a0);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_create_counters(ibv_context* a0, ibv_counters_init_attr* a1,
                                         verbs_counters* a2, ibv_command_buffer* a3) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_create_counters, a0, a1, a2, a3);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_destroy_counters(verbs_counters* a0) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_destroy_counters, a0);
    return unsupported();
}

VERBS_EXPORT int ibv_cmd_read_counters(verbs_counters* a0, uint64_t* a1, uint32_t a2, uint32_t a3,
                                       ibv_command_buffer* a4) {
    FORWARD_TO_REAL_LIBRARY(ibv_cmd_read_counters, a0, a1, a2, a3, a4);
    return unsupported();
}
