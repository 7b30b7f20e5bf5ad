// The emulated device a host exposes: its identity (name, GUID, GIDs) and its attributes.
//
// The GID table is what a RoCE v2 port (rxe, mlx5) lists for its interface's addresses, one
// RoCE v2 entry per address, with one difference of order: index 0 is always the host's own
// address, so that `-g 0` / `-x 0` work on every host as they did.
//   IPv4 host: 0 ::ffff:a.b.c.d.
//   IPv6 host: 0 its address; 1 the link-local GID fe80::/64 + the EUI-64 of the port's MAC
//              (02:52 and the address's last four bytes), as the kernel derives an interface's
//              link-local address and rxe lists it. Listed, not usable: the host sends and
//              receives on its address alone, so a QP or AH naming it is refused and says why.
// An IPv4 host lists no link-local GID: it speaks no IPv6 (a real port's fe80:: entry would be
// one it could not use).
#pragma once

#include "nic/config.h"

#include <infiniband/verbs.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nicsim {

class Device {
  public:
    explicit Device(const Config& config);

    const Config& config() const { return config_; }
    const std::string& name() const { return config_.device_name; }
    // Node GUID in network byte order: an EUI-64 built from 02:52:<IPv4 address> (for IPv6, the
    // address's last four bytes).
    uint64_t node_guid() const { return node_guid_; }
    // GID index 0: the RoCE v2 GID of the host's address (::ffff:a.b.c.d for IPv4).
    const ibv_gid& gid() const { return gids_.front().gid; }
    std::string gid_string() const;

    struct GidEntry {
        ibv_gid gid;
        bool usable; // a source GID the port sends from (false: listed only, the link-local)
    };
    // The populated entries, from index 0 (limits::kGidTableLen in all; the rest are empty).
    const std::vector<GidEntry>& gids() const { return gids_; }
    // The entry at `index`, or nothing for an empty one.
    std::optional<GidEntry> gid_entry(uint32_t index) const;
    std::string address_string() const;
    ibv_mtu active_mtu() const;

    ibv_device_attr device_attr() const;
    ibv_port_attr port_attr() const;

  private:
    Config config_;
    uint64_t node_guid_;
    std::vector<GidEntry> gids_;
};

} // namespace nicsim
