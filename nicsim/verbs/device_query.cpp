#include "nic/device_limits.h"
#include "verbs.h"

#include <cerrno>
#include <cstring>

namespace nicsim {

int query_device(VerbContext& c, const ipc::Empty&, ipc::QueryDeviceReply& r) {
    r.attr = c.nic.device().device_attr();
    r.max_dm_size = limits::kMaxDmSize;
    return 0;
}

int query_port(VerbContext& c, const ipc::QueryPortReq& q, ipc::QueryPortReply& r) {
    if (q.port != 1) return EINVAL;
    r.attr = c.nic.device().port_attr();
    return 0;
}

int query_gid(VerbContext& c, const ipc::QueryGidReq& q, ipc::QueryGidReply& r) {
    if (q.port != 1 || q.index >= static_cast<uint32_t>(limits::kGidTableLen)) return EINVAL;
    r.gid_type = IBV_GID_TYPE_ROCE_V2; // every entry of the table is RoCE v2 (nic/device.h)
    if (auto entry = c.nic.device().gid_entry(q.index)) {
        std::memcpy(r.gid, entry->gid.raw, 16);
        r.valid = 1;
    }
    return 0;
}

int query_pkey(VerbContext&, const ipc::QueryPkeyReq& q, ipc::QueryPkeyReply& r) {
    if (q.port != 1 || q.index >= static_cast<uint32_t>(limits::kPkeyTableLen)) return EINVAL;
    r.pkey = htobe16(limits::kDefaultPkey);
    return 0;
}

} // namespace nicsim
