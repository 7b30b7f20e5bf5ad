#include "address_vector.h"

#include "device_limits.h"

#include <cerrno>

namespace nicsim {

int check_address_vector(const Device&, const ibv_ah_attr& av) {
    if (av.port_num != 1) return EINVAL;
    if (!av.is_global) return EINVAL;
    // Only GID index 0 (the host's RoCE v2 GID) is populated.
    if (av.grh.sgid_index != 0) return EINVAL;
    return 0;
}

} // namespace nicsim
