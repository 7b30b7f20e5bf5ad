#include "address_vector.h"

#include "nic/device_limits.h"

#include <spdlog/fmt/fmt.h>

namespace nicsim {

std::string address_vector_fault(const Device& dev, const ibv_ah_attr& av, const char* name) {
    if (av.port_num != 1)
        return fmt::format("{}.port_num is {}: {} has port 1 only", name, av.port_num, dev.name());
    if (!av.is_global) return "RoCE needs a GRH (set ah_attr.is_global, -g in the pingpongs)";
    // Only GID index 0 (the host's RoCE v2 GID) is populated.
    if (av.grh.sgid_index != 0)
        return fmt::format("{}.grh.sgid_index {} names no GID: {} has one, index 0 ({})", name,
                           av.grh.sgid_index, dev.name(), dev.gid_string());
    return {};
}

} // namespace nicsim
