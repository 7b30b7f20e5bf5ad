// The devices CM IDs live on: each opened once per process (rdma_get_devices hands out the same
// contexts), with the PD shared by the IDs that were given none.
#pragma once

#include "cm_objects.h"

namespace rdmacm {

// The device of `guid` (network order) with one more ID on it; nullptr, errno ENODEV, when the
// loaded libibverbs has no device of that GUID.
CmDevice* acquire_device(uint64_t guid);
// One ID fewer: the last one frees the shared PD and XRC domain.
void release_device(CmDevice* dev);
// The device's shared XRC domain, opened now if it is not yet (rdma-core's ucma_get_xrcd: a
// domain of the process's own, no file); nullptr with errno when the device refuses.
ibv_xrcd* device_xrcd(CmDevice* dev);

} // namespace rdmacm
