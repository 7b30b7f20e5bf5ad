#include "ids.h"

#include "cm_session.h"
#include "devices.h"
#include "export.h"
#include "untraced.h"

#include <endian.h>

#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>

namespace rdmacm {

namespace ipc = emu::ipc;

namespace {

std::mutex ids_mutex;
std::unordered_map<uint32_t, CmId*> ids;

} // namespace

CmId* alloc_id(rdma_event_channel* channel, void* context, rdma_port_space ps,
               ibv_qp_type qp_type) {
    auto* p = new (std::nothrow) CmId;
    if (!p) {
        errno = ENOMEM;
        return nullptr;
    }
    std::memset(&p->id, 0, sizeof p->id);
    p->id.context = context;
    p->id.ps = ps;
    p->id.qp_type = qp_type;
    if (!channel) {
        channel = rdma_create_event_channel();
        if (!channel) {
            delete p;
            return nullptr;
        }
        p->sync = true;
    }
    p->id.channel = channel;
    return p;
}

void free_id(CmId* p) {
    if (p->handle) {
        std::lock_guard lock(ids_mutex);
        ids.erase(p->handle);
    }
    if (p->device) release_device(p->device);
    std::free(p->id.route.path_rec);
    if (p->sync) rdma_destroy_event_channel(p->id.channel);
    delete p->qp_init_attr;
    delete p;
}

void register_id(CmId* p) {
    std::lock_guard lock(ids_mutex);
    ids[p->handle] = p;
}

CmId* find_id(uint32_t handle) {
    std::lock_guard lock(ids_mutex);
    auto it = ids.find(handle);
    return it == ids.end() ? nullptr : it->second;
}

int apply_info(CmId* p, const ipc::CmIdInfo& info) {
    rdma_cm_id& id = p->id;
    std::memcpy(&id.route.addr.src_storage, &info.src.sa, sizeof info.src.sa);
    std::memcpy(&id.route.addr.dst_storage, &info.dst.sa, sizeof info.dst.sa);
    if (!p->device && info.node_guid) {
        CmDevice* dev = acquire_device(info.node_guid);
        if (!dev) return -1;
        p->device = dev;
        id.verbs = dev->verbs;
        if (!id.pd) id.pd = dev->pd;
        id.port_num = info.port_num;
        id.route.addr.addr.ibaddr.pkey = htobe16(0xFFFF);
    }
    if (!info.has_route) return 0;
    const ipc::CmPath& path = info.path;
    std::memcpy(id.route.addr.addr.ibaddr.sgid.raw, path.sgid, 16);
    std::memcpy(id.route.addr.addr.ibaddr.dgid.raw, path.dgid, 16);
    if (!id.route.path_rec) {
        id.route.path_rec = static_cast<ibv_sa_path_rec*>(std::calloc(1, sizeof(ibv_sa_path_rec)));
        if (!id.route.path_rec) return fail(ENOMEM);
    }
    ibv_sa_path_rec& r = *id.route.path_rec;
    std::memcpy(r.dgid.raw, path.dgid, 16);
    std::memcpy(r.sgid.raw, path.sgid, 16);
    r.flow_label = htobe32(path.flow_label);
    r.hop_limit = path.hop_limit;
    r.traffic_class = path.traffic_class;
    r.reversible = 1;
    r.numb_path = 1;
    r.pkey = htobe16(path.pkey);
    r.sl = path.sl;
    r.mtu_selector = 2; // exactly
    r.mtu = path.mtu;
    r.rate_selector = 2;
    r.rate = path.rate;
    r.packet_life_time_selector = 2;
    r.packet_life_time = path.packet_life_time;
    id.route.num_paths = 1;
    return 0;
}

int complete(CmId* p) {
    if (!p->sync) return 0;
    if (p->id.event) {
        rdma_ack_cm_event(p->id.event);
        p->id.event = nullptr;
    }
    if (rdma_get_cm_event(p->id.channel, &p->id.event)) return -1;
    const rdma_cm_event* e = p->id.event;
    if (!e->status) return 0;
    if (e->event == RDMA_CM_EVENT_REJECTED) return fail(ECONNREFUSED);
    return fail(e->status < 0 ? -e->status : e->status);
}

void event_acked(CmId* p, CmMulticast* mc) {
    std::lock_guard lock(p->mutex);
    ++p->events_completed;
    if (mc) ++mc->events_completed;
    p->acked.notify_all();
}

void wait_acked(CmId* p, uint32_t reported) {
    std::unique_lock lock(p->mutex);
    p->acked.wait(lock, [&] { return p->events_completed >= reported; });
}

int create_id(rdma_event_channel* channel, rdma_cm_id** out, void* context, rdma_port_space ps,
              ibv_qp_type qp_type) {
    if (!out) return fail(EINVAL);
    CmId* p = alloc_id(channel, context, ps, qp_type);
    if (!p) return -1;
    ipc::HandleReply reply{};
    if (call<ipc::Op::CmCreateId>({priv(p->id.channel)->handle, static_cast<uint32_t>(ps),
                                   static_cast<uint32_t>(qp_type), 0},
                                  reply)) {
        int err = errno;
        free_id(p);
        return fail(err);
    }
    p->handle = reply.handle;
    register_id(p);
    *out = &p->id;
    return 0;
}

} // namespace rdmacm

using namespace rdmacm;

int untraced_rdma_create_id(rdma_event_channel* channel, rdma_cm_id** id, void* context,
                            rdma_port_space ps) {
    const ibv_qp_type qp_type = ps == RDMA_PS_IPOIB || ps == RDMA_PS_UDP ? IBV_QPT_UD : IBV_QPT_RC;
    return create_id(channel, id, context, ps, qp_type);
}

int untraced_rdma_destroy_id(rdma_cm_id* id) {
    if (!id) return fail(EINVAL);
    CmId* p = priv(id);
    ipc::CmEventsReply reply{};
    if (call<ipc::Op::CmDestroyId>({p->handle, 0}, reply)) return -1;
    if (id->event) {
        rdma_ack_cm_event(id->event);
        id->event = nullptr;
    }
    // rdma_cm(7): an ID goes only once its events are acknowledged.
    wait_acked(p, reply.events_reported);
    for (CmMulticast* mc : p->groups)
        delete mc;
    free_id(p);
    return 0;
}

int untraced_rdma_migrate_id(rdma_cm_id* id, rdma_event_channel* channel) {
    CmId* p = priv(id);
    if (p->sync && !channel) return fail(EINVAL);
    const bool sync = !channel;
    if (sync && !(channel = rdma_create_event_channel())) return -1;
    ipc::CmEventsReply reply{};
    if (call<ipc::Op::CmMigrateId>({p->handle, priv(channel)->handle}, reply)) {
        int err = errno;
        if (sync) rdma_destroy_event_channel(channel);
        return fail(err);
    }
    if (p->sync) {
        if (id->event) {
            rdma_ack_cm_event(id->event);
            id->event = nullptr;
        }
        rdma_destroy_event_channel(id->channel);
    }
    p->sync = sync;
    id->channel = channel;
    wait_acked(p, reply.events_reported);
    return 0;
}
