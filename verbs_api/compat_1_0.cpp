// The IBVERBS_1.0 half of libibverbs' ABI: 33 verbs that binaries linked before 2006 call by
// name@IBVERBS_1.0. Their objects had other layouts (struct ibv_*_1_0, each wrapping a current
// object), which rdma-core still translates. We do not: every one of them fails the way its verb
// reports errors, sets errno to EOPNOTSUPP, and says so once on stderr.
//
// The C names below are local (exports.map ends IBVERBS_1.0 with `local: *`); only the symver
// aliases name@IBVERBS_1.0 (non-default) are exported. The current verbs are name@@IBVERBS_1.1.

#include "export.h"

#include <infiniband/verbs.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>

// The pre-2006 object types. Never dereferenced here, so left incomplete.
struct ibv_device_1_0;
struct ibv_context_1_0;
struct ibv_pd_1_0;
struct ibv_mr_1_0;
struct ibv_cq_1_0;
struct ibv_srq_1_0;
struct ibv_qp_1_0;
struct ibv_ah_1_0;
struct ibv_qp_init_attr_1_0;

namespace {

void report_unsupported(std::atomic_flag& warned, const char* name) {
    if (!warned.test_and_set(std::memory_order_relaxed))
        std::fprintf(stderr, "rdmaemu: %s@IBVERBS_1.0 (pre-2006 ABI) is not supported\n", name);
    errno = EOPNOTSUPP;
}

} // namespace

// Prints the message the first time the enclosing compat verb runs, and sets errno.
#define COMPAT_UNSUPPORTED(name)                                                                   \
    do {                                                                                           \
        static std::atomic_flag warned_;                                                           \
        report_unsupported(warned_, name);                                                         \
    } while (0)

// Exports the function that follows as `name@IBVERBS_1.0`.
#define COMPAT_1_0(name) VERBS_EXPORT __attribute__((symver(#name "@IBVERBS_1.0")))

// Devices and contexts.

COMPAT_1_0(ibv_get_device_list) ibv_device_1_0** rdmaemu_compat_ibv_get_device_list_1_0(int* num) {
    if (num) *num = 0;
    COMPAT_UNSUPPORTED("ibv_get_device_list");
    return nullptr;
}

COMPAT_1_0(ibv_free_device_list) void rdmaemu_compat_ibv_free_device_list_1_0(ibv_device_1_0**) {
    COMPAT_UNSUPPORTED("ibv_free_device_list");
}

COMPAT_1_0(ibv_get_device_name)
const char* rdmaemu_compat_ibv_get_device_name_1_0(ibv_device_1_0*) {
    COMPAT_UNSUPPORTED("ibv_get_device_name");
    return nullptr;
}

COMPAT_1_0(ibv_get_device_guid) __be64 rdmaemu_compat_ibv_get_device_guid_1_0(ibv_device_1_0*) {
    COMPAT_UNSUPPORTED("ibv_get_device_guid");
    return 0;
}

COMPAT_1_0(ibv_open_device)
ibv_context_1_0* rdmaemu_compat_ibv_open_device_1_0(ibv_device_1_0*) {
    COMPAT_UNSUPPORTED("ibv_open_device");
    return nullptr;
}

COMPAT_1_0(ibv_close_device) int rdmaemu_compat_ibv_close_device_1_0(ibv_context_1_0*) {
    COMPAT_UNSUPPORTED("ibv_close_device");
    return -1;
}

COMPAT_1_0(ibv_get_async_event)
int rdmaemu_compat_ibv_get_async_event_1_0(ibv_context_1_0*, ibv_async_event*) {
    COMPAT_UNSUPPORTED("ibv_get_async_event");
    return -1;
}

COMPAT_1_0(ibv_ack_async_event) void rdmaemu_compat_ibv_ack_async_event_1_0(ibv_async_event*) {
    COMPAT_UNSUPPORTED("ibv_ack_async_event");
}

COMPAT_1_0(ibv_query_device)
int rdmaemu_compat_ibv_query_device_1_0(ibv_context_1_0*, ibv_device_attr*) {
    COMPAT_UNSUPPORTED("ibv_query_device");
    return EOPNOTSUPP;
}

COMPAT_1_0(ibv_query_port)
int rdmaemu_compat_ibv_query_port_1_0(ibv_context_1_0*, uint8_t, ibv_port_attr*) {
    COMPAT_UNSUPPORTED("ibv_query_port");
    return EOPNOTSUPP;
}

COMPAT_1_0(ibv_query_gid)
int rdmaemu_compat_ibv_query_gid_1_0(ibv_context_1_0*, uint8_t, int, ibv_gid*) {
    COMPAT_UNSUPPORTED("ibv_query_gid");
    return -1;
}

COMPAT_1_0(ibv_query_pkey)
int rdmaemu_compat_ibv_query_pkey_1_0(ibv_context_1_0*, uint8_t, int, __be16*) {
    COMPAT_UNSUPPORTED("ibv_query_pkey");
    return -1;
}

// Protection domains and memory regions.

COMPAT_1_0(ibv_alloc_pd) ibv_pd_1_0* rdmaemu_compat_ibv_alloc_pd_1_0(ibv_context_1_0*) {
    COMPAT_UNSUPPORTED("ibv_alloc_pd");
    return nullptr;
}

COMPAT_1_0(ibv_dealloc_pd) int rdmaemu_compat_ibv_dealloc_pd_1_0(ibv_pd_1_0*) {
    COMPAT_UNSUPPORTED("ibv_dealloc_pd");
    return EOPNOTSUPP;
}

COMPAT_1_0(ibv_reg_mr)
ibv_mr_1_0* rdmaemu_compat_ibv_reg_mr_1_0(ibv_pd_1_0*, void*, size_t, int) {
    COMPAT_UNSUPPORTED("ibv_reg_mr");
    return nullptr;
}

COMPAT_1_0(ibv_dereg_mr) int rdmaemu_compat_ibv_dereg_mr_1_0(ibv_mr_1_0*) {
    COMPAT_UNSUPPORTED("ibv_dereg_mr");
    return EOPNOTSUPP;
}

// Completion queues.

COMPAT_1_0(ibv_create_cq)
ibv_cq_1_0* rdmaemu_compat_ibv_create_cq_1_0(ibv_context_1_0*, int, void*, ibv_comp_channel*, int) {
    COMPAT_UNSUPPORTED("ibv_create_cq");
    return nullptr;
}

COMPAT_1_0(ibv_resize_cq) int rdmaemu_compat_ibv_resize_cq_1_0(ibv_cq_1_0*, int) {
    COMPAT_UNSUPPORTED("ibv_resize_cq");
    return EOPNOTSUPP;
}

COMPAT_1_0(ibv_destroy_cq) int rdmaemu_compat_ibv_destroy_cq_1_0(ibv_cq_1_0*) {
    COMPAT_UNSUPPORTED("ibv_destroy_cq");
    return EOPNOTSUPP;
}

COMPAT_1_0(ibv_get_cq_event)
int rdmaemu_compat_ibv_get_cq_event_1_0(ibv_comp_channel*, ibv_cq_1_0**, void**) {
    COMPAT_UNSUPPORTED("ibv_get_cq_event");
    return -1;
}

COMPAT_1_0(ibv_ack_cq_events) void rdmaemu_compat_ibv_ack_cq_events_1_0(ibv_cq_1_0*, unsigned) {
    COMPAT_UNSUPPORTED("ibv_ack_cq_events");
}

// Shared receive queues.

COMPAT_1_0(ibv_create_srq)
ibv_srq_1_0* rdmaemu_compat_ibv_create_srq_1_0(ibv_pd_1_0*, ibv_srq_init_attr*) {
    COMPAT_UNSUPPORTED("ibv_create_srq");
    return nullptr;
}

COMPAT_1_0(ibv_modify_srq)
int rdmaemu_compat_ibv_modify_srq_1_0(ibv_srq_1_0*, ibv_srq_attr*, int) {
    COMPAT_UNSUPPORTED("ibv_modify_srq");
    return EOPNOTSUPP;
}

COMPAT_1_0(ibv_query_srq) int rdmaemu_compat_ibv_query_srq_1_0(ibv_srq_1_0*, ibv_srq_attr*) {
    COMPAT_UNSUPPORTED("ibv_query_srq");
    return EOPNOTSUPP;
}

COMPAT_1_0(ibv_destroy_srq) int rdmaemu_compat_ibv_destroy_srq_1_0(ibv_srq_1_0*) {
    COMPAT_UNSUPPORTED("ibv_destroy_srq");
    return EOPNOTSUPP;
}

// Queue pairs.

COMPAT_1_0(ibv_create_qp)
ibv_qp_1_0* rdmaemu_compat_ibv_create_qp_1_0(ibv_pd_1_0*, ibv_qp_init_attr_1_0*) {
    COMPAT_UNSUPPORTED("ibv_create_qp");
    return nullptr;
}

COMPAT_1_0(ibv_query_qp)
int rdmaemu_compat_ibv_query_qp_1_0(ibv_qp_1_0*, ibv_qp_attr*, int, ibv_qp_init_attr_1_0*) {
    COMPAT_UNSUPPORTED("ibv_query_qp");
    return EOPNOTSUPP;
}

COMPAT_1_0(ibv_modify_qp) int rdmaemu_compat_ibv_modify_qp_1_0(ibv_qp_1_0*, ibv_qp_attr*, int) {
    COMPAT_UNSUPPORTED("ibv_modify_qp");
    return EOPNOTSUPP;
}

COMPAT_1_0(ibv_destroy_qp) int rdmaemu_compat_ibv_destroy_qp_1_0(ibv_qp_1_0*) {
    COMPAT_UNSUPPORTED("ibv_destroy_qp");
    return EOPNOTSUPP;
}

// Address handles and multicast.

COMPAT_1_0(ibv_create_ah) ibv_ah_1_0* rdmaemu_compat_ibv_create_ah_1_0(ibv_pd_1_0*, ibv_ah_attr*) {
    COMPAT_UNSUPPORTED("ibv_create_ah");
    return nullptr;
}

COMPAT_1_0(ibv_destroy_ah) int rdmaemu_compat_ibv_destroy_ah_1_0(ibv_ah_1_0*) {
    COMPAT_UNSUPPORTED("ibv_destroy_ah");
    return EOPNOTSUPP;
}

COMPAT_1_0(ibv_attach_mcast)
int rdmaemu_compat_ibv_attach_mcast_1_0(ibv_qp_1_0*, ibv_gid*, uint16_t) {
    COMPAT_UNSUPPORTED("ibv_attach_mcast");
    return EOPNOTSUPP;
}

COMPAT_1_0(ibv_detach_mcast)
int rdmaemu_compat_ibv_detach_mcast_1_0(ibv_qp_1_0*, ibv_gid*, uint16_t) {
    COMPAT_UNSUPPORTED("ibv_detach_mcast");
    return EOPNOTSUPP;
}
