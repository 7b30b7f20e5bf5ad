#include "backends/hardware/real_library.h"

#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <mutex>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace verbs::hardware {
namespace {

std::once_flag load_once;
std::atomic<void*> handle{nullptr};
std::string loaded_path;
std::mutex deferred_mutex;
std::vector<const void*> deferred_drivers;

bool same_file(const char* a, const char* b) {
    struct stat sa {
    }, sb{};
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

const char* own_path() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&real_library), &info) && info.dli_fname)
        return info.dli_fname;
    return "";
}

std::string find_real_library() {
    if (const char* env = std::getenv("RDMAEMU_REAL_LIBIBVERBS"); env && *env) return env;
    const char* self = own_path();
    const std::string candidates[] = {
        std::string("/usr/lib/") + RDMAEMU_MULTIARCH + "/libibverbs.so.1",
        std::string("/lib/") + RDMAEMU_MULTIARCH + "/libibverbs.so.1",
        "/usr/lib64/libibverbs.so.1",
        "/usr/lib/libibverbs.so.1",
    };
    for (const std::string& path : candidates) {
        struct stat st {};
        if (stat(path.c_str(), &st) == 0 && !same_file(path.c_str(), self)) return path;
    }
    return {};
}

void load() {
    std::string path = find_real_library();
    if (path.empty()) {
        std::fprintf(stderr,
                     "rdmaemu: RDMAEMU_MODE=%s, but rdma-core's libibverbs.so.1 was not "
                     "found; set RDMAEMU_REAL_LIBIBVERBS to its path\n",
                     emu::backend_mode_name(mode()));
        return;
    }
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        std::fprintf(stderr, "rdmaemu: cannot load rdma-core's libibverbs: %s\n", dlerror());
        return;
    }
    if (!dlsym(h, "ibv_get_device_list")) {
        std::fprintf(stderr, "rdmaemu: %s is not a libibverbs (no ibv_get_device_list)\n",
                     path.c_str());
        dlclose(h);
        return;
    }
    loaded_path = path;
    handle.store(h, std::memory_order_release);
    using Register = void (*)(const void*);
    auto register_driver = reinterpret_cast<Register>(dlsym(h, "verbs_register_driver_34"));
    std::lock_guard lock(deferred_mutex);
    for (const void* ops : deferred_drivers)
        if (register_driver) register_driver(ops);
    deferred_drivers.clear();
}

} // namespace

emu::BackendMode mode() {
    static const emu::BackendMode m = [] {
        bool valid = true;
        emu::BackendMode parsed = emu::backend_mode_from_env(&valid);
        if (!valid)
            std::fprintf(stderr,
                         "rdmaemu: RDMAEMU_MODE=%s is not emulated, hardware or mixed; "
                         "using emulated\n",
                         std::getenv("RDMAEMU_MODE"));
        return parsed;
    }();
    return m;
}

void* real_library() {
    if (!offers_hardware()) return nullptr;
    std::call_once(load_once, load);
    return handle.load(std::memory_order_acquire);
}

const char* real_library_path() {
    return loaded_path.c_str();
}

void* real_symbol(const char* name) {
    void* h = real_library();
    return h ? dlsym(h, name) : nullptr;
}

void* loaded_symbol(std::atomic<void*>& cache, const char* name) {
    if (void* fn = cache.load(std::memory_order_acquire)) return fn;
    // Not yet loaded: the call comes from a provider's constructor or from a program that never
    // reaches a real device; the stub answers it.
    void* h = handle.load(std::memory_order_acquire);
    if (!h) return nullptr;
    void* fn = dlsym(h, name);
    cache.store(fn, std::memory_order_release);
    return fn;
}

void defer_driver_registration(const void* verbs_device_ops) {
    if (!offers_hardware()) return;
    std::lock_guard lock(deferred_mutex);
    deferred_drivers.push_back(verbs_device_ops);
}

} // namespace verbs::hardware
