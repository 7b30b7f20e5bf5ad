// The emulated device a host exposes: its identity (name, GUID, GID) and its attributes.
#pragma once

#include "nic/config.h"

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>

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
    const ibv_gid& gid() const { return gid_; }
    std::string gid_string() const;
    std::string address_string() const;
    ibv_mtu active_mtu() const;

    ibv_device_attr device_attr() const;
    ibv_port_attr port_attr() const;

  private:
    Config config_;
    uint64_t node_guid_;
    ibv_gid gid_{};
};

} // namespace nicsim
