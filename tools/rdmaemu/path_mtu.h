// The path MTU of an emulated host's port, chosen as Linux Soft-RoCE chooses its own: the largest
// IB MTU that fits the MTU of the interface the host's address is on, less the headers of a RoCE
// v2 packet. A host on loopback (MTU 65536) gets 4096, one on a 1500-byte Ethernet 1024, so that
// an emulated host talking to Soft-RoCE over a veth never sends a packet that link drops.
#pragma once

#include <optional>
#include <string>

namespace rdmaemu {

// Bytes Soft-RoCE keeps for the headers around a packet's payload (RXE_MAX_HDR_LENGTH).
constexpr int kRoceHeaderAllowance = 80;

// The largest IB MTU (256..4096) whose packets fit an interface of MTU `netdev_mtu`; 0 if none.
int roce_mtu_fitting(int netdev_mtu);

// The MTU of the interface a port of path MTU `roce_mtu` (256..4096) is given in the set's
// network: the usual Ethernet MTU that Soft-RoCE derives it from (1500 for 1024, 9000 for 4096).
int netdev_mtu(int roce_mtu);

struct InterfaceMtu {
    std::string name; // "lo"
    int mtu;          // 65536
};

// The interface of this network namespace that holds `address` (IPv4 or IPv6 text), or the
// subnet it is in (127.0.1.2 is on lo through 127.0.0.1/8), and its MTU; nothing if none does.
std::optional<InterfaceMtu> interface_mtu(const std::string& address);

} // namespace rdmaemu
