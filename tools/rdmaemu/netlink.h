// The few rtnetlink requests (rtnetlink(7)) the set's network namespace needs: bring a link up,
// make a veth pair whose other end lives in another namespace, set a link's MAC, MTU and IPv6
// address generation, give it an IPv4 address. Each request waits for the kernel's answer.
#pragma once

#include "emu/private_files.h"

#include <array>
#include <cstdint>
#include <string>

namespace rdmaemu::netlink {

class Rtnl {
  public:
    // A NETLINK_ROUTE socket in the caller's current network namespace (a socket stays in the
    // namespace it was made in). Returns 0 or a positive errno.
    int open();

    // Returns 0 or a positive errno (the kernel's answer) for each.
    int set_up(const std::string& ifname);
    // `name` here and its peer `peer` in the namespace `peer_netns_fd` (/proc/PID/ns/net), both
    // down; `name` without IPv6 addresses (no link-local: the device's GID table has the IPv4
    // one only), with this MAC and MTU.
    int add_veth(const std::string& name, const std::string& peer, int peer_netns_fd,
                 const std::array<uint8_t, 6>& mac, int mtu);
    // `addr` (network order) with `prefix` bits on `ifname`.
    int add_ipv4(const std::string& ifname, uint32_t addr, int prefix);

  private:
    int transact(void* msg, uint32_t len);
    emu::OwnedFd fd_;
    uint32_t seq_ = 0;
};

} // namespace rdmaemu::netlink
