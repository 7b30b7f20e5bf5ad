#include "address_vector.h"

#include "emu/wire/ip_address.h"
#include "emu/wire/multicast.h"
#include "nic/device_limits.h"

#include <spdlog/fmt/fmt.h>

namespace nicsim {

namespace {
const char* version(const emu::wire::IpAddress& a) {
    return a.is_ipv4() ? "IPv4" : "IPv6";
}
} // namespace

std::string address_vector_fault(const Device& dev, const ibv_ah_attr& av, const char* name) {
    namespace wire = emu::wire;
    if (av.port_num != 1)
        return fmt::format("{}.port_num is {}: {} has port 1 only", name, av.port_num, dev.name());
    if (!av.is_global) return "RoCE needs a GRH (set ah_attr.is_global, -g in the pingpongs)";
    // The source GID: an entry of the table the port sends from (nic/device.h).
    auto sgid = dev.gid_entry(av.grh.sgid_index);
    if (!sgid)
        return fmt::format("{}.grh.sgid_index {} names no GID: {} has {} ({} at index 0)", name,
                           av.grh.sgid_index, dev.name(),
                           dev.gids().size() == 1 ? "one" : std::to_string(dev.gids().size()),
                           dev.gid_string());
    if (!sgid->usable)
        return fmt::format("{}.grh.sgid_index {} is the link-local GID {}, listed as a real port "
                           "lists its interface's; this emulated host sends from its address "
                           "alone: use index 0 ({})",
                           name, av.grh.sgid_index,
                           emu::wire::IpAddress::from_gid(sgid->gid.raw).gid_text(),
                           dev.gid_string());
    // The source GID's family is the packet's (RoCE v2 builds the IP header from the GID pair):
    // a host of one IP version reaches only hosts of the same one, as a NIC without a route to
    // the other family does (the kernel's ib_resolve_eth_dmac fails there).
    const wire::IpAddress dst = wire::IpAddress::from_gid(av.grh.dgid.raw);
    const wire::IpAddress& self = dev.config().address;
    if (!wire::is_multicast_gid(av.grh.dgid.raw) && dst.is_ipv4() != self.is_ipv4())
        return fmt::format("{}.grh.dgid {} is an {} GID and {}'s GID {} is {}: an emulated host "
                           "reaches hosts of its own IP version only",
                           name, dst.gid_text(), version(dst), dev.name(), dev.gid_string(),
                           version(self));
    return {};
}

} // namespace nicsim
