// How an exported verb picks its backend: by the device its object belongs to. Emulated devices
// are served by verbs::emulated; every other device is rdma-core's, and the call goes to the
// real library's definition of the same name (backends/hardware). Either way the verbs trace
// records the call, once: calls a verb makes to other verbs are not traced again.
#pragma once

#include "backends/hardware/real_library.h"
#include "trace/trace.h"

#include <infiniband/verbs.h>

#include <atomic>
#include <cerrno>
#include <string>
#include <type_traits>
#include <utility>

namespace verbs {

// True for the devices of the emulated hosts (device_list.cpp).
bool is_emulated_device(const ibv_device* device);
// True for the command fd (or a dup of it) of an emulated context: one this process has, or one
// another process passed on (a socket connected to the emulated host) (context.cpp).
bool is_emulated_command_fd(int fd);

inline bool is_emulated(const ibv_device* device) {
    switch (hardware::mode()) {
    case emu::BackendMode::Emulated:
        return true;
    case emu::BackendMode::Hardware:
        return false;
    case emu::BackendMode::Mixed:
        break;
    }
    return is_emulated_device(device);
}

inline bool is_emulated(const ibv_context* ctx) {
    return is_emulated(ctx->device);
}

// What a verb returns when rdma-core's library lacks it (errno ENOSYS).
template <typename R> R missing_real_verb() {
    errno = ENOSYS;
    if constexpr (std::is_pointer_v<R>)
        return nullptr;
    else if constexpr (std::is_same_v<R, int>)
        return ENOSYS;
    else if constexpr (!std::is_void_v<R>)
        return R{};
}

template <auto Emulated> struct Route;

template <typename R, typename... A, R (*Emulated)(A...)> struct Route<Emulated> {
    // rdma-core's definition of `name`, looked up once.
    static R real(const char* name, A... args) {
        static std::atomic<void*> cache{};
        void* fn = cache.load(std::memory_order_acquire);
        if (!fn) {
            fn = hardware::real_symbol(name);
            if (!fn) return missing_real_verb<R>();
            cache.store(fn, std::memory_order_release);
        }
        return reinterpret_cast<R (*)(A...)>(fn)(args...);
    }

    static R call(const char* name, bool emulated, A... args) {
        trace::Nesting nesting;
        bool traced = nesting.outermost() && trace::enabled();
        std::string text = traced ? trace::call_text(name, args...) : std::string();
        if constexpr (std::is_void_v<R>) {
            emulated ? Emulated(args...) : real(name, args...);
            if (traced) trace::write_line("verb", text);
        } else {
            R result = emulated ? Emulated(args...) : real(name, args...);
            if (traced) trace::verb(std::move(text), result);
            return result;
        }
    }
};

// The exported verb `name`, for `object` (a device or context).
#define ROUTE(name, object, ...)                                                                   \
    ::verbs::Route<&::verbs::emulated::name>::call(#name, ::verbs::is_emulated(object), __VA_ARGS__)

} // namespace verbs
