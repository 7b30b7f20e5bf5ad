#include "devices.h"

#include "export.h"

#include <fcntl.h>

#include <cstdlib>
#include <mutex>
#include <vector>

namespace rdmacm {

namespace {

std::mutex devices_mutex;
std::vector<CmDevice*> devices; // opened, for the process's life

// The device of `guid`, opened now if it was not yet. Needs devices_mutex.
CmDevice* open_device(ibv_device* d) {
    const uint64_t guid = ibv_get_device_guid(d);
    for (CmDevice* dev : devices)
        if (dev->guid == guid) return dev;
    ibv_context* verbs = ibv_open_device(d);
    if (!verbs) return nullptr;
    auto* dev = new (std::nothrow) CmDevice;
    if (!dev) {
        ibv_close_device(verbs);
        return nullptr;
    }
    dev->verbs = verbs;
    dev->guid = guid;
    ibv_device_attr attr{};
    if (ibv_query_device(verbs, &attr) == 0) {
        dev->max_initiator_depth = static_cast<uint8_t>(attr.max_qp_init_rd_atom);
        dev->max_responder_resources = static_cast<uint8_t>(attr.max_qp_rd_atom);
    }
    devices.push_back(dev);
    return dev;
}

// Calls `fn` for every device of the loaded libibverbs, opened. Needs devices_mutex.
template <typename Fn> void for_each_device(Fn&& fn) {
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (!list) return;
    for (int i = 0; i < n; ++i)
        if (CmDevice* dev = open_device(list[i])) fn(dev);
    ibv_free_device_list(list);
}

} // namespace

CmDevice* acquire_device(uint64_t guid) {
    std::lock_guard lock(devices_mutex);
    CmDevice* found = nullptr;
    for (CmDevice* dev : devices)
        if (dev->guid == guid) found = dev;
    if (!found)
        for_each_device([&](CmDevice* dev) {
            if (dev->guid == guid) found = dev;
        });
    if (!found) {
        errno = ENODEV;
        return nullptr;
    }
    if (!found->pd) found->pd = ibv_alloc_pd(found->verbs);
    if (!found->pd) return nullptr;
    ++found->refs;
    return found;
}

void release_device(CmDevice* dev) {
    std::lock_guard lock(devices_mutex);
    if (--dev->refs) return;
    if (dev->xrcd) {
        ibv_close_xrcd(dev->xrcd);
        dev->xrcd = nullptr;
    }
    if (dev->pd) {
        ibv_dealloc_pd(dev->pd);
        dev->pd = nullptr;
    }
}

ibv_xrcd* device_xrcd(CmDevice* dev) {
    std::lock_guard lock(devices_mutex);
    if (!dev->xrcd) {
        ibv_xrcd_init_attr attr{};
        attr.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
        attr.fd = -1;
        attr.oflags = O_CREAT;
        dev->xrcd = ibv_open_xrcd(dev->verbs, &attr);
    }
    return dev->xrcd;
}

} // namespace rdmacm

using namespace rdmacm;

RDMACM_EXPORT ibv_context** rdma_get_devices(int* num_devices) {
    std::lock_guard lock(devices_mutex);
    std::vector<ibv_context*> contexts;
    for_each_device([&](CmDevice* dev) { contexts.push_back(dev->verbs); });
    auto** list =
        static_cast<ibv_context**>(std::calloc(contexts.size() + 1, sizeof(ibv_context*)));
    if (!list) {
        errno = ENOMEM;
        return nullptr;
    }
    for (size_t i = 0; i < contexts.size(); ++i)
        list[i] = contexts[i];
    if (num_devices) *num_devices = static_cast<int>(contexts.size());
    return list;
}

RDMACM_EXPORT void rdma_free_devices(ibv_context** list) {
    std::free(list);
}
