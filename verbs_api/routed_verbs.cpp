// The exported verbs that have a backend to choose: each goes to the emulated backend
// (verbs::emulated, the nicsim devices) or to rdma-core's library, by the device its object
// belongs to (route.h). The device list mixes both kinds as RDMAEMU_MODE asks; hardware objects
// are the real provider's own, so their inline data path (ibv_post_send, ibv_poll_cq, ...) never
// passes through here. Verbs with nothing to route (string tables, rates, kernel struct copies)
// are defined in one place only.
#include "async_event_target.h"
#include "backends/emulated/emulated_verbs.h"
#include "backends/hardware/checks.h"
#include "backends/hardware/real_library.h"
#include "export.h"
#include "route.h"
#include "trace/trace.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

using namespace verbs;

namespace {

using RealGetDeviceList = ibv_device** (*)(int*);
using RealFreeDeviceList = void (*)(ibv_device**);

// The real library's list behind each list we hand out, to free it with ours.
std::mutex lists_mutex;
std::unordered_map<ibv_device**, ibv_device**> real_lists;

} // namespace

// Devices: the emulated hosts' and rdma-core's, as the mode asks.

VERBS_EXPORT ibv_device** ibv_get_device_list(int* num_devices) {
    trace::Nesting nesting;
    int n_emulated = 0, n_real = 0;
    ibv_device** emulated = nullptr;
    ibv_device** real = nullptr;
    if (hardware::offers_emulated()) emulated = emulated::ibv_get_device_list(&n_emulated);
    if (hardware::offers_hardware()) {
        errno = ENOSYS; // rdma-core's answer when there is no RDMA subsystem
        if (auto fn =
                reinterpret_cast<RealGetDeviceList>(hardware::real_symbol("ibv_get_device_list")))
            real = fn(&n_real);
        // Hardware only: rdma-core's answer as it is, a NULL list included.
        if (!real && !hardware::offers_emulated()) {
            if (nesting.outermost() && trace::enabled())
                trace::verb(trace::call_text("ibv_get_device_list", 0), real);
            return nullptr;
        }
    }
    if (!real) n_real = 0;
    if (!emulated) n_emulated = 0;
    auto** list = static_cast<ibv_device**>(
        std::calloc(size_t(n_emulated + n_real) + 1, sizeof(ibv_device*)));
    if (list) {
        std::memcpy(list, emulated ? emulated : list, size_t(n_emulated) * sizeof(ibv_device*));
        std::memcpy(list + n_emulated, real ? real : list, size_t(n_real) * sizeof(ibv_device*));
        if (real) {
            std::lock_guard lock(lists_mutex);
            real_lists[list] = real;
        }
    } else if (real) {
        reinterpret_cast<RealFreeDeviceList>(hardware::real_symbol("ibv_free_device_list"))(real);
    }
    if (emulated) emulated::ibv_free_device_list(emulated);
    if (!list)
        errno = ENOMEM;
    else if (num_devices)
        *num_devices = n_emulated + n_real;
    if (nesting.outermost() && trace::enabled())
        trace::verb(trace::call_text("ibv_get_device_list", list ? n_emulated + n_real : 0), list);
    return list;
}

VERBS_EXPORT void ibv_free_device_list(ibv_device** list) {
    trace::Nesting nesting;
    ibv_device** real = nullptr;
    {
        std::lock_guard lock(lists_mutex);
        if (auto it = real_lists.find(list); it != real_lists.end()) {
            real = it->second;
            real_lists.erase(it);
        }
    }
    if (real)
        reinterpret_cast<RealFreeDeviceList>(hardware::real_symbol("ibv_free_device_list"))(real);
    if (nesting.outermost() && trace::enabled())
        trace::write_line("verb", trace::call_text("ibv_free_device_list", list));
    std::free(list);
}

VERBS_EXPORT const char* ibv_get_device_name(ibv_device* device) {
    return ROUTE(ibv_get_device_name, device, device);
}

VERBS_EXPORT __be64 ibv_get_device_guid(ibv_device* device) {
    return ROUTE(ibv_get_device_guid, device, device);
}

VERBS_EXPORT int ibv_get_device_index(ibv_device* device) {
    return ROUTE(ibv_get_device_index, device, device);
}

VERBS_EXPORT ibv_context* ibv_open_device(ibv_device* device) {
    ibv_context* ctx = ROUTE(ibv_open_device, device, device);
    if (ctx) trace::watch_context(ctx);
    return ctx;
}

VERBS_EXPORT ibv_context* ibv_import_device(int cmd_fd) {
    // Ours, or else a kernel uverbs file descriptor: only rdma-core's devices have one.
    bool emulated = is_emulated_command_fd(cmd_fd) || !hardware::offers_hardware();
    ibv_context* ctx =
        Route<&emulated::ibv_import_device>::call("ibv_import_device", emulated, cmd_fd);
    if (ctx) trace::watch_context(ctx);
    return ctx;
}

VERBS_EXPORT void ibv_ack_async_event(ibv_async_event* event) {
    const ibv_context* ctx = event_context(*event);
    bool emulated = ctx ? is_emulated(ctx) : hardware::offers_emulated();
    Route<&emulated::ibv_ack_async_event>::call("ibv_ack_async_event", emulated, event);
}

// Fork support concerns the process, so it goes to rdma-core whenever its devices are offered.

VERBS_EXPORT int ibv_fork_init(void) {
    if (!hardware::offers_hardware()) return emulated::ibv_fork_init();
    return Route<&emulated::ibv_fork_init>::real("ibv_fork_init");
}

VERBS_EXPORT ibv_fork_status ibv_is_fork_initialized(void) {
    if (!hardware::offers_hardware()) return emulated::ibv_is_fork_initialized();
    return Route<&emulated::ibv_is_fork_initialized>::real("ibv_is_fork_initialized");
}

VERBS_EXPORT int ibv_dontfork_range(void* base, size_t size) {
    if (!hardware::offers_hardware()) return emulated::ibv_dontfork_range(base, size);
    return Route<&emulated::ibv_dontfork_range>::real("ibv_dontfork_range", base, size);
}

VERBS_EXPORT int ibv_dofork_range(void* base, size_t size) {
    if (!hardware::offers_hardware()) return emulated::ibv_dofork_range(base, size);
    return Route<&emulated::ibv_dofork_range>::real("ibv_dofork_range", base, size);
}

// Contexts and everything made from them.

VERBS_EXPORT ibv_pd* ibv_alloc_pd(ibv_context* ctx) {
    return ROUTE(ibv_alloc_pd, ctx, ctx);
}

VERBS_EXPORT int ibv_dealloc_pd(ibv_pd* pd) {
    return ROUTE(ibv_dealloc_pd, pd->context, pd);
}

VERBS_EXPORT ibv_pd* ibv_import_pd(ibv_context* ctx, uint32_t handle) {
    return ROUTE(ibv_import_pd, ctx, ctx, handle);
}

VERBS_EXPORT void ibv_unimport_pd(ibv_pd* pd) {
    return ROUTE(ibv_unimport_pd, pd->context, pd);
}

VERBS_EXPORT ibv_mr*(ibv_reg_mr)(ibv_pd* pd, void* addr, size_t length, int access) {
    if (!is_emulated(pd->context)) hardware::check_mr_access("ibv_reg_mr", int(access));
    trace::Call call("ibv_reg_mr", pd, addr, length, trace::AccessFlags{access});
    return call.done(ROUTE(ibv_reg_mr, pd->context, pd, addr, length, access));
}

VERBS_EXPORT ibv_mr*(ibv_reg_mr_iova)(ibv_pd* pd, void* addr, size_t length, uint64_t iova,
                                      int access) {
    if (!is_emulated(pd->context)) hardware::check_mr_access("ibv_reg_mr_iova", int(access));
    trace::Call call("ibv_reg_mr_iova", pd, addr, length, iova, trace::AccessFlags{access});
    return call.done(ROUTE(ibv_reg_mr_iova, pd->context, pd, addr, length, iova, access));
}

VERBS_EXPORT ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova,
                                      unsigned int access) {
    if (!is_emulated(pd->context)) hardware::check_mr_access("ibv_reg_mr_iova2", int(access));
    trace::Call call("ibv_reg_mr_iova2", pd, addr, length, iova, trace::AccessFlags{int(access)});
    return call.done(ROUTE(ibv_reg_mr_iova2, pd->context, pd, addr, length, iova, access));
}

VERBS_EXPORT int ibv_rereg_mr(ibv_mr* mr, int flags, ibv_pd* pd, void* addr, size_t length,
                              int access) {
    trace::Call call("ibv_rereg_mr", mr, flags, pd, addr, length, trace::AccessFlags{access});
    return call.done(ROUTE(ibv_rereg_mr, mr->context, mr, flags, pd, addr, length, access));
}

VERBS_EXPORT int ibv_dereg_mr(ibv_mr* mr) {
    return ROUTE(ibv_dereg_mr, mr->context, mr);
}

VERBS_EXPORT ibv_mr* ibv_reg_dmabuf_mr(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova,
                                       int fd, int access) {
    return ROUTE(ibv_reg_dmabuf_mr, pd->context, pd, offset, length, iova, fd, access);
}

VERBS_EXPORT ibv_mr* ibv_import_mr(ibv_pd* pd, uint32_t handle) {
    return ROUTE(ibv_import_mr, pd->context, pd, handle);
}

VERBS_EXPORT void ibv_unimport_mr(ibv_mr* mr) {
    return ROUTE(ibv_unimport_mr, mr->context, mr);
}

VERBS_EXPORT ibv_dm* ibv_import_dm(ibv_context* ctx, uint32_t handle) {
    return ROUTE(ibv_import_dm, ctx, ctx, handle);
}

VERBS_EXPORT void ibv_unimport_dm(ibv_dm* dm) {
    return ROUTE(ibv_unimport_dm, dm->context, dm);
}

VERBS_EXPORT ibv_comp_channel* ibv_create_comp_channel(ibv_context* ctx) {
    return ROUTE(ibv_create_comp_channel, ctx, ctx);
}

VERBS_EXPORT int ibv_destroy_comp_channel(ibv_comp_channel* channel) {
    return ROUTE(ibv_destroy_comp_channel, channel->context, channel);
}

VERBS_EXPORT int ibv_get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) {
    return ROUTE(ibv_get_cq_event, channel->context, channel, cq, cq_context);
}

VERBS_EXPORT void ibv_ack_cq_events(ibv_cq* cq, unsigned int nevents) {
    return ROUTE(ibv_ack_cq_events, cq->context, cq, nevents);
}

VERBS_EXPORT ibv_cq* ibv_create_cq(ibv_context* ctx, int cqe, void* cq_context,
                                   ibv_comp_channel* channel, int comp_vector) {
    return ROUTE(ibv_create_cq, ctx, ctx, cqe, cq_context, channel, comp_vector);
}

VERBS_EXPORT int ibv_resize_cq(ibv_cq* cq, int cqe) {
    return ROUTE(ibv_resize_cq, cq->context, cq, cqe);
}

VERBS_EXPORT int ibv_destroy_cq(ibv_cq* cq) {
    trace::forget_cq_ex(cq);
    return ROUTE(ibv_destroy_cq, cq->context, cq);
}

VERBS_EXPORT ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
    trace::Call call("ibv_create_qp", pd, trace::input(attr));
    return call.done(ROUTE(ibv_create_qp, pd->context, pd, attr));
}

VERBS_EXPORT int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask) {
    if (!is_emulated(qp->context)) hardware::check_modify_qp(qp, attr, attr_mask);
    trace::Call call("ibv_modify_qp", qp, trace::QpAttrInput{attr, attr_mask});
    return call.done(ROUTE(ibv_modify_qp, qp->context, qp, attr, attr_mask));
}

VERBS_EXPORT int ibv_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask,
                              ibv_qp_init_attr* init_attr) {
    trace::Call call("ibv_query_qp", qp, static_cast<const void*>(attr),
                     trace::QpAttrMask{attr_mask}, static_cast<const void*>(init_attr));
    return call.done(ROUTE(ibv_query_qp, qp->context, qp, attr, attr_mask, init_attr));
}

VERBS_EXPORT int ibv_destroy_qp(ibv_qp* qp) {
    trace::forget_send_ops(qp);
    return ROUTE(ibv_destroy_qp, qp->context, qp);
}

VERBS_EXPORT ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp* qp) {
    return ROUTE(ibv_qp_to_qp_ex, qp->context, qp);
}

VERBS_EXPORT int ibv_query_qp_data_in_order(ibv_qp* qp, ibv_wr_opcode op, uint32_t handle) {
    return ROUTE(ibv_query_qp_data_in_order, qp->context, qp, op, handle);
}

VERBS_EXPORT int ibv_query_ece(ibv_qp* qp, ibv_ece* ece) {
    return ROUTE(ibv_query_ece, qp->context, qp, ece);
}

VERBS_EXPORT int ibv_set_ece(ibv_qp* qp, ibv_ece* ece) {
    return ROUTE(ibv_set_ece, qp->context, qp, ece);
}

VERBS_EXPORT int ibv_attach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
    return ROUTE(ibv_attach_mcast, qp->context, qp, gid, lid);
}

VERBS_EXPORT int ibv_detach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
    return ROUTE(ibv_detach_mcast, qp->context, qp, gid, lid);
}

VERBS_EXPORT ibv_srq* ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr* attr) {
    trace::Call call("ibv_create_srq", pd, trace::input(attr));
    return call.done(ROUTE(ibv_create_srq, pd->context, pd, attr));
}

VERBS_EXPORT int ibv_modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int attr_mask) {
    return ROUTE(ibv_modify_srq, srq->context, srq, attr, attr_mask);
}

VERBS_EXPORT int ibv_query_srq(ibv_srq* srq, ibv_srq_attr* attr) {
    return ROUTE(ibv_query_srq, srq->context, srq, attr);
}

VERBS_EXPORT int ibv_destroy_srq(ibv_srq* srq) {
    return ROUTE(ibv_destroy_srq, srq->context, srq);
}

VERBS_EXPORT ibv_ah* ibv_create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
    trace::Call call("ibv_create_ah", pd, trace::input(attr));
    return call.done(ROUTE(ibv_create_ah, pd->context, pd, attr));
}

VERBS_EXPORT int ibv_destroy_ah(ibv_ah* ah) {
    return ROUTE(ibv_destroy_ah, ah->context, ah);
}

VERBS_EXPORT int ibv_init_ah_from_wc(ibv_context* ctx, uint8_t port_num, ibv_wc* wc, ibv_grh* grh,
                                     ibv_ah_attr* ah_attr) {
    return ROUTE(ibv_init_ah_from_wc, ctx, ctx, port_num, wc, grh, ah_attr);
}

VERBS_EXPORT ibv_ah* ibv_create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, uint8_t port_num) {
    return ROUTE(ibv_create_ah_from_wc, pd->context, pd, wc, grh, port_num);
}

VERBS_EXPORT int ibv_resolve_eth_l2_from_gid(ibv_context* ctx, ibv_ah_attr* attr,
                                             uint8_t eth_mac[6], uint16_t* vid) {
    return ROUTE(ibv_resolve_eth_l2_from_gid, ctx, ctx, attr, eth_mac, vid);
}

VERBS_EXPORT int ibv_get_async_event(ibv_context* ctx, ibv_async_event* event) {
    // The event is filled in by the call: traced after it.
    trace::Call call("ibv_get_async_event", ctx, static_cast<const void*>(event));
    int ret = ROUTE(ibv_get_async_event, ctx, ctx, event);
    return call.done(ret, ret == 0 ? event : nullptr);
}

VERBS_EXPORT int ibv_query_device(ibv_context* ctx, ibv_device_attr* attr) {
    return ROUTE(ibv_query_device, ctx, ctx, attr);
}

VERBS_EXPORT int(ibv_query_port)(ibv_context* ctx, uint8_t port, _compat_ibv_port_attr* attr) {
    return ROUTE(ibv_query_port, ctx, ctx, port, attr);
}

VERBS_EXPORT int ibv_query_gid(ibv_context* ctx, uint8_t port, int index, ibv_gid* gid) {
    return ROUTE(ibv_query_gid, ctx, ctx, port, index, gid);
}

VERBS_EXPORT int _ibv_query_gid_ex(ibv_context* ctx, uint32_t port, uint32_t index,
                                   ibv_gid_entry* entry, uint32_t flags, size_t entry_size) {
    return ROUTE(_ibv_query_gid_ex, ctx, ctx, port, index, entry, flags, entry_size);
}

VERBS_EXPORT ssize_t _ibv_query_gid_table(ibv_context* ctx, ibv_gid_entry* entries,
                                          size_t max_entries, uint32_t flags, size_t entry_size) {
    return ROUTE(_ibv_query_gid_table, ctx, ctx, entries, max_entries, flags, entry_size);
}

VERBS_EXPORT int ibv_query_pkey(ibv_context* ctx, uint8_t port, int index, __be16* pkey) {
    return ROUTE(ibv_query_pkey, ctx, ctx, port, index, pkey);
}

VERBS_EXPORT int ibv_get_pkey_index(ibv_context* ctx, uint8_t port, __be16 pkey) {
    return ROUTE(ibv_get_pkey_index, ctx, ctx, port, pkey);
}

VERBS_EXPORT int ibv_close_device(ibv_context* ctx) {
    trace::forget_context(ctx);
    return ROUTE(ibv_close_device, ctx, ctx);
}
