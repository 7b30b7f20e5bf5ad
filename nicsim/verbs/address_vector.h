// Checks of an address vector (a QP's primary path, or an AH) on a RoCE port.
#pragma once

#include "device.h"

#include <infiniband/verbs.h>

namespace nicsim {

// 0 or EINVAL: the port must exist; RoCE addresses by GID, so the GRH is mandatory
// (rdma_check_ah_attr); the source GID index must name a valid table entry.
int check_address_vector(const Device& device, const ibv_ah_attr& av);

} // namespace nicsim
