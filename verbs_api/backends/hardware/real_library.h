// The hardware backend's handle on rdma-core's own libibverbs. In hardware and mixed mode the
// real library is loaded next to us (RTLD_LOCAL, so its names never replace ours), and every verb
// on a real device is forwarded to it. The real library and the providers it loads still bind
// their calls to libibverbs names to the first definition in the process, ours; so our exported
// verbs route real objects back to it, and our provider interface (IBVERBS_PRIVATE_34) forwards
// to its counterpart once it is loaded (verbs-abi.md, "Passthrough pitfall").
#pragma once

#include "emu/backend_mode.h"

#include <atomic>

namespace verbs::hardware {

// RDMAEMU_MODE, read once (a bad value is reported on stderr, and the mode is emulated).
emu::BackendMode mode();
inline bool offers_emulated() {
    return mode() != emu::BackendMode::Hardware;
}
inline bool offers_hardware() {
    return mode() != emu::BackendMode::Emulated;
}

// rdma-core's libibverbs, loaded on first call when the mode offers hardware devices:
// $RDMAEMU_REAL_LIBIBVERBS, else the system's (never this library itself). nullptr when the mode
// is emulated or the library cannot be loaded (reported once on stderr).
void* real_library();
// Where real_library() found it ("" when it did not).
const char* real_library_path();
// The real library's definition of `name`, loading the library if the mode calls for it.
void* real_symbol(const char* name);

// The real definition of `name` if the real library is already loaded, else nullptr. `cache`
// belongs to the caller (one per name).
void* loaded_symbol(std::atomic<void*>& cache, const char* name);

// A provider registered itself before the real library was loaded (a program that links a
// provider, as perftest links libmlx5): handed to the real library when it loads.
void defer_driver_registration(const void* verbs_device_ops);

} // namespace verbs::hardware

// First statement of an IBVERBS_PRIVATE_34 function: once rdma-core's library is loaded, the
// call is for one of its providers, so it goes there with all its arguments.
#define FORWARD_TO_REAL_LIBRARY(name, ...)                                                         \
    do {                                                                                           \
        static std::atomic<void*> real_##name{};                                                   \
        if (void* fn = ::verbs::hardware::loaded_symbol(real_##name, #name))                       \
            return reinterpret_cast<decltype(&name)>(fn)(__VA_ARGS__);                             \
    } while (0)
