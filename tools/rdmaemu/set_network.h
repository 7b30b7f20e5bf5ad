// The set's network: a network namespace where each emulated host has a real Ethernet interface,
// host<i>, holding its address 127.0.S.i/24 and the MAC its device's node GUID is made from, so
// that programs which look for the net device of a GID (rdma-core's tests, libfabric, UCX) find
// one that is true. Each interface is one end of a veth pair; the other ends sit in a second
// namespace that no program sees, so the links are up. Made by `rdmaemu up` inside a user
// namespace of the caller's own (uid and gid mapped to themselves) when the caller is not root;
// a holder process keeps both namespaces alive until `rdmaemu down`, and `rdmaemu run` joins
// them (docs/real-stacks.md).
//
// The daemons stay in the machine's own namespace: the emulated wire is their UDP on 127.0.S.i
// there; the interfaces carry no RoCE packet. Programs of one set reach each other's sockets on
// the hosts' addresses (all of them are local in the namespace), but not the machine's other
// interfaces or programs outside the set's namespace.
#pragma once

#include <optional>
#include <string>
#include <sys/types.h>

namespace rdmaemu {

// "host3": host 3's interface.
std::string netdev_name(int host);

// Starts the holder of the set's namespaces (hosts 1..count on 127.0.subnet.i) and records it in
// the runtime directory with `record_mode`. Returns why it could not (no user namespaces here,
// say), having left nothing behind.
std::optional<std::string> start_set_network(const std::string& runtime, int subnet, int count,
                                             int roce_mtu, mode_t record_mode);

// Stops the recorded holder, if it is alive, and removes the record.
void stop_set_network(const std::string& runtime);

// True when the set has a live holder of ours (status shows it).
bool set_network_alive(const std::string& runtime);

// Moves the calling (single-threaded) process into the set's user and network namespaces.
// Returns why it could not; then nothing changed.
std::optional<std::string> join_set_network(const std::string& runtime);

} // namespace rdmaemu
