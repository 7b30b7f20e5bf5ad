// CM IDs in the library: allocation, the process's table of them by NIC handle (events name
// their ID by it), what the NIC says about an ID's addresses and route, and the bookkeeping of
// events handed out and acknowledged.
#pragma once

#include "cm_objects.h"

namespace rdmacm {

// A new ID on `channel`, or on an internal channel of its own when that is null (a synchronous
// ID: the calls that complete with an event wait for it). No NIC handle yet.
CmId* alloc_id(rdma_event_channel* channel, void* context, rdma_port_space ps, ibv_qp_type qp_type);
void free_id(CmId* id);
// alloc_id, then the NIC's half (rdma-core's rdma_create_id2). 0, or -1 with errno.
int create_id(rdma_event_channel* channel, rdma_cm_id** out, void* context, rdma_port_space ps,
              ibv_qp_type qp_type);
void register_id(CmId* id);
CmId* find_id(uint32_t handle);

// Takes what the NIC says of the ID: addresses, the device (opened on first sight), the route.
// 0, or -1 with errno when the device is not there.
int apply_info(CmId* id, const emu::ipc::CmIdInfo& info);

// A synchronous ID waits here for the event its call caused, and turns an error event into the
// call's errno (rdma-core's ucma_complete). Others return 0 at once.
int complete(CmId* id);

// The app acknowledged one more event of `id` (and of `mc`, for a multicast event).
void event_acked(CmId* id, CmMulticast* mc);
// Waits until the app acknowledged `reported` events of `id` (rdma_destroy_id, migrate).
void wait_acked(CmId* id, uint32_t reported);

} // namespace rdmacm
