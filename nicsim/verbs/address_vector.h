// Checks of an address vector (a QP's primary path, or an AH) on a RoCE port.
#pragma once

#include "nic/device.h"

#include <infiniband/verbs.h>

#include <string>

namespace nicsim {

// Why `av` is refused (the verb then fails with EINVAL), empty when it is fine: the port must
// exist; RoCE addresses by GID, so the GRH is mandatory (rdma_check_ah_attr); the source GID
// index must name a valid table entry; a unicast destination GID must be of the host's IP
// version. `name` is the struct as the app knows it ("ah_attr").
std::string address_vector_fault(const Device& device, const ibv_ah_attr& av, const char* name);

} // namespace nicsim
