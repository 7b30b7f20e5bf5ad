// The device list: one emulated device per host, found through the host's control socket.
#include "backends/emulated/emu_objects.h"
#include "backends/emulated/emulated_verbs.h"
#include "emu/paths.h"
#include "route.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>

namespace verbs {
namespace {

std::mutex devices_mutex;
// Devices live as long as the process: apps may hold an ibv_device after freeing the list.
std::list<EmuDevice> devices;

void hint_no_host(const std::string& path, int err) {
    static std::once_flag once;
    std::call_once(once, [&] {
        std::fprintf(stderr,
                     "rdmaemu: no emulated host at %s (%s); start hosts with `rdmaemu up` and "
                     "run programs with `rdmaemu run --host N -- PROGRAM`\n",
                     path.c_str(), std::strerror(err));
    });
}

} // namespace

EmuDevice* emulated_device(const std::string& path, const emu::ipc::HelloReply& hello) {
    std::lock_guard lock(devices_mutex);
    for (EmuDevice& d : devices)
        if (d.socket_path == path && std::strcmp(d.device.name, hello.dev_name) == 0) return &d;
    EmuDevice& d = devices.emplace_back();
    std::memset(&d.device, 0, sizeof d.device);
    d.device.node_type = static_cast<ibv_node_type>(hello.node_type);
    d.device.transport_type = static_cast<ibv_transport_type>(hello.transport_type);
    std::snprintf(d.device.name, sizeof d.device.name, "%.*s", int(sizeof hello.dev_name - 1),
                  hello.dev_name);
    d.index = static_cast<int>(devices.size() - 1);
    std::snprintf(d.device.dev_name, sizeof d.device.dev_name, "uverbs%d", d.index);
    std::snprintf(d.device.dev_path, sizeof d.device.dev_path, "%s", path.c_str());
    std::snprintf(d.device.ibdev_path, sizeof d.device.ibdev_path, "/sys/class/infiniband/%s",
                  d.device.name);
    d.socket_path = path;
    d.node_guid = hello.node_guid;
    return &d;
}

namespace {

// Asks the host's NIC which device it has. Returns nullptr when no host answers.
EmuDevice* probe(const std::string& path) {
    emu::ipc::ControlClient client;
    if (int err = client.connect(path)) {
        hint_no_host(path, err);
        return nullptr;
    }
    emu::ipc::HelloReply hello{};
    if (client.call<emu::ipc::Op::Hello>({0, 0}, hello) != 0) return nullptr;
    return emulated_device(path, hello);
}

} // namespace

bool is_emulated_device(const ibv_device* device) {
    std::lock_guard lock(devices_mutex);
    for (const EmuDevice& d : devices)
        if (&d.device == device) return true;
    return false;
}

} // namespace verbs

using namespace verbs;

ibv_device** emulated::ibv_get_device_list(int* num_devices) {
    EmuDevice* found = probe(emu::selected_socket_path());
    auto** list = static_cast<ibv_device**>(std::calloc(2, sizeof(ibv_device*)));
    if (!list) return fail<ibv_device*>(ENOMEM);
    int n = 0;
    if (found) list[n++] = &found->device;
    if (num_devices) *num_devices = n;
    return list;
}

void emulated::ibv_free_device_list(ibv_device** list) {
    std::free(list);
}

const char* emulated::ibv_get_device_name(ibv_device* device) {
    return device->name;
}

__be64 emulated::ibv_get_device_guid(ibv_device* device) {
    return emu_device(device)->node_guid;
}

int emulated::ibv_get_device_index(ibv_device* device) {
    return emu_device(device)->index;
}
