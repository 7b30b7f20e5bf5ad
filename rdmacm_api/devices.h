// The devices CM IDs live on: each opened once per process (rdma_get_devices hands out the same
// contexts), with the PD shared by the IDs that were given none.
#pragma once

#include "cm_objects.h"

namespace rdmacm {

// The device of `guid` (network order) with one more ID on it; nullptr, errno ENODEV, when the
// loaded libibverbs has no device of that GUID.
CmDevice* acquire_device(uint64_t guid);
// One ID fewer: the last one frees the shared PD.
void release_device(CmDevice* dev);

} // namespace rdmacm
