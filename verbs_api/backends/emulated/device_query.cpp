// Device, port, GID and P_Key queries, answered by the NIC.
#include "backends/emulated/emu_objects.h"
#include "backends/emulated/emulated_verbs.h"
#include "backends/emulated/ops.h"
#include "export.h"
#include "route.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <time.h>

using namespace verbs;
namespace ipc = emu::ipc;

namespace {

// The GID entry at `index`: 0, ENODATA for an empty entry, or another errno.
int read_gid(ibv_context* ctx, uint32_t port, uint32_t index, ibv_gid_entry& entry) {
    ipc::QueryGidReply r{};
    if (int err = control(ctx).call<ipc::Op::QueryGid>({port, index}, r)) return err;
    if (!r.valid) return ENODATA;
    entry = {};
    std::memcpy(entry.gid.raw, r.gid, 16);
    entry.gid_index = index;
    entry.port_num = port;
    entry.gid_type = r.gid_type;
    return 0;
}

} // namespace

namespace verbs {

int query_port(ibv_context* ctx, uint8_t port, ibv_port_attr* attr, size_t attr_size) {
    ipc::QueryPortReply r{};
    if (int err = control(ctx).call<ipc::Op::QueryPort>({port}, r)) return err;
    std::memcpy(attr, &r.attr, std::min(attr_size, sizeof r.attr));
    return 0;
}

int query_device_ex(ibv_context* ctx, const ibv_query_device_ex_input* input,
                    ibv_device_attr_ex* attr, size_t attr_size) {
    if (input && input->comp_mask) return EINVAL;
    if (attr_size < sizeof attr->orig_attr) return EINVAL;
    ipc::QueryDeviceReply r{};
    if (int err = control(ctx).call<ipc::Op::QueryDevice>({}, r)) return err;
    ibv_device_attr_ex ex{};
    ex.orig_attr = r.attr;
    ex.device_cap_flags_ex = r.attr.device_cap_flags;
    ex.phys_port_cnt_ex = r.attr.phys_port_cnt;
    // The NIC reaches app memory through the process's /proc/self/mem, page by page as it
    // goes: nothing is pinned, so every MR is in effect on-demand, implicit ones included.
    constexpr uint32_t all = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
                             IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC |
                             IBV_ODP_SUPPORT_SRQ_RECV;
    ex.odp_caps.general_caps = IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT;
    ex.odp_caps.per_transport_caps.rc_odp_caps = all;
    ex.odp_caps.per_transport_caps.uc_odp_caps = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
                                                 IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_SRQ_RECV;
    ex.odp_caps.per_transport_caps.ud_odp_caps =
        IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_SRQ_RECV;
    ex.xrc_odp_caps = all;
    // Completion timestamps come from the NIC's clock: CLOCK_MONOTONIC in ns, i.e. 1 GHz.
    ex.completion_timestamp_mask = UINT64_MAX;
    ex.hca_core_clock = 1000000; // kHz
    ex.max_dm_size = r.max_dm_size;
    // RSS for raw packet QPs: Toeplitz over IPv4/IPv6 addresses and TCP/UDP ports
    // (nicsim/nic/device_limits.h: kMaxRwqIndTables, kMaxWq).
    ex.rss_caps.supported_qpts = 1u << IBV_QPT_RAW_PACKET;
    ex.rss_caps.max_rwq_indirection_tables = 4096;
    ex.rss_caps.max_rwq_indirection_table_size = 1u << ipc::kMaxRwqIndTableLog;
    ex.rss_caps.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ;
    ex.rss_caps.rx_hash_fields_mask = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 |
                                      IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6 |
                                      IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP |
                                      IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP;
    ex.max_wq_type_rq = 16384;
    ex.tm_caps.flags = IBV_TM_CAP_RC;
    ex.tm_caps.max_rndv_hdr_size = ipc::kTmMaxRndvHdrSize;
    ex.tm_caps.max_num_tags = ipc::kTmMaxNumTags;
    ex.tm_caps.max_ops = ipc::kTmMaxOps;
    ex.tm_caps.max_sge = ipc::kTmMaxSge;
    std::memcpy(attr, &ex, std::min(attr_size, sizeof ex));
    return 0;
}

} // namespace verbs

int emulated::ibv_query_device(ibv_context* ctx, ibv_device_attr* attr) {
    ipc::QueryDeviceReply r{};
    if (int err = control(ctx).call<ipc::Op::QueryDevice>({}, r)) return err;
    *attr = r.attr;
    return 0;
}

// The exported form, used by binaries built before ibv_query_port became a macro: their struct
// ends before `flags` (rdma-core's _compat_ibv_port_attr).
int(emulated::ibv_query_port)(ibv_context* ctx, uint8_t port, _compat_ibv_port_attr* attr) {
    return query_port(ctx, port, reinterpret_cast<ibv_port_attr*>(attr),
                      offsetof(ibv_port_attr, flags));
}

int emulated::ibv_query_gid(ibv_context* ctx, uint8_t port, int index, ibv_gid* gid) {
    if (index < 0) return -1;
    ibv_gid_entry entry{};
    int err = read_gid(ctx, port, static_cast<uint32_t>(index), entry);
    if (err == ENODATA) { // an empty entry reads as the zero GID
        std::memset(gid, 0, sizeof *gid);
        return 0;
    }
    if (err) {
        errno = err;
        return -1;
    }
    *gid = entry.gid;
    return 0;
}

int emulated::_ibv_query_gid_ex(ibv_context* ctx, uint32_t port, uint32_t index,
                                ibv_gid_entry* entry, uint32_t flags, size_t entry_size) {
    if (flags || entry_size < sizeof(ibv_gid_entry)) return EINVAL;
    return read_gid(ctx, port, index, *entry);
}

ssize_t emulated::_ibv_query_gid_table(ibv_context* ctx, ibv_gid_entry* entries, size_t max_entries,
                                       uint32_t flags, size_t entry_size) {
    if (flags || entry_size < sizeof(ibv_gid_entry)) return -EINVAL;
    ibv_port_attr port{};
    if (int err = query_port(ctx, 1, &port, sizeof port)) return -err;
    size_t found = 0;
    for (int i = 0; i < port.gid_tbl_len; ++i) {
        ibv_gid_entry entry;
        int err = read_gid(ctx, 1, static_cast<uint32_t>(i), entry);
        if (err == ENODATA) continue;
        if (err) return -err;
        if (found == max_entries) return -EINVAL;
        std::memcpy(reinterpret_cast<char*>(entries) + found++ * entry_size, &entry, sizeof entry);
    }
    return static_cast<ssize_t>(found);
}

// rdma-core's private enum ibv_gid_type_sysfs, as ibv_devinfo reads it.
enum ibv_gid_type_sysfs { IBV_GID_TYPE_SYSFS_IB_ROCE_V1, IBV_GID_TYPE_SYSFS_ROCE_V2 };

VERBS_EXPORT int ibv_query_gid_type(ibv_context* ctx, uint8_t port, unsigned int index,
                                    ibv_gid_type_sysfs* type) {
    // Private (providers ask it while creating AHs): a real device's provider asks rdma-core.
    if (!is_emulated(ctx)) FORWARD_TO_REAL_LIBRARY(ibv_query_gid_type, ctx, port, index, type);
    ibv_gid_entry entry{};
    if (int err = read_gid(ctx, port, index, entry)) {
        errno = err;
        return -1;
    }
    *type = entry.gid_type == IBV_GID_TYPE_ROCE_V2 ? IBV_GID_TYPE_SYSFS_ROCE_V2
                                                   : IBV_GID_TYPE_SYSFS_IB_ROCE_V1;
    return 0;
}

int emulated::ibv_query_pkey(ibv_context* ctx, uint8_t port, int index, __be16* pkey) {
    if (index < 0) return -1;
    ipc::QueryPkeyReply r{};
    if (int err = control(ctx).call<ipc::Op::QueryPkey>({port, static_cast<uint32_t>(index)}, r)) {
        errno = err;
        return -1;
    }
    *pkey = r.pkey;
    return 0;
}

int emulated::ibv_get_pkey_index(ibv_context* ctx, uint8_t port, __be16 pkey) {
    ibv_port_attr attr{};
    if (int err = query_port(ctx, port, &attr, sizeof attr)) {
        errno = err;
        return -1;
    }
    for (int i = 0; i < attr.pkey_tbl_len; ++i) {
        __be16 entry;
        if (emulated::ibv_query_pkey(ctx, port, i, &entry) == 0 && entry == pkey) return i;
    }
    errno = ENOENT;
    return -1;
}

namespace verbs {

int query_rt_values_ex(ibv_context*, ibv_values_ex* values) {
    if (values->comp_mask & ~uint32_t(IBV_VALUES_MASK_RAW_CLOCK)) return EINVAL;
    if (values->comp_mask & IBV_VALUES_MASK_RAW_CLOCK)
        ::clock_gettime(CLOCK_MONOTONIC, &values->raw_clock);
    return 0;
}

} // namespace verbs
