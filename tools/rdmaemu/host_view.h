// What a program of one emulated host sees of the machine's RDMA devices, for the programs that
// look at sysfs and /dev themselves rather than through libibverbs (UCX, rdma-core's tests,
// libfabric, Open MPI): in a mount namespace of the program's own, /sys/class/infiniband/<dev>
// as the kernel writes it for a RoCE device, with the host's interface as its net device and the
// GIDs' ndevs, /sys/class/infiniband_verbs/uverbs0, and /dev/infiniband/uverbs0, a character
// device the user may open. The files are a snapshot of what the host's NIC answers when the
// program starts (docs/real-stacks.md).
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rdmaemu {

struct DeviceSnapshot {
    std::string name;   // emu0
    uint64_t node_guid; // network order
    uint32_t node_type;
    ibv_device_attr device{};
    ibv_port_attr port{};
    struct Gid {
        uint8_t raw[16];
        uint32_t type; // enum ibv_gid_type (IBV_GID_TYPE_ROCE_V2)
        bool valid;
    };
    std::vector<Gid> gids;
    std::vector<uint16_t> pkeys; // host order
};

// Asks the host's NIC (its control socket) for its device. Returns why not on failure.
std::optional<std::string> snapshot_device(const std::string& socket, DeviceSnapshot& out);

// The sysfs attribute files of the device, as paths under /sys/class/infiniband/<dev>/ and their
// contents, in the kernel's formats (drivers/infiniband/core/sysfs.c). `netdev` is the GIDs'
// net device.
std::vector<std::pair<std::string, std::string>> sysfs_files(const DeviceSnapshot& dev,
                                                             const std::string& netdev);

// The uverbs name libibverbs gives the emulated device
// (verbs_api/backends/emulated/device_list.cpp).
inline constexpr const char* kUverbsName = "uverbs0";

enum class ViewResult {
    Done,
    Unchanged, // could not start: the process sees what it saw before
    Broken,    // failed half-way: the process must not go on
};

// Enters a new mount namespace and builds the view there: /sys remounted for the current network
// namespace (its submounts kept), /sys/class and /dev as read-only tmpfs copies of themselves
// (bind mounts of every entry) plus the device's entries. `why` says what failed.
ViewResult enter_host_view(const DeviceSnapshot& dev, const std::string& netdev, std::string& why);

} // namespace rdmaemu
