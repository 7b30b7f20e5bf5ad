#include "emu/paths.h"

#include <cstdlib>
#include <unistd.h>

namespace emu {

std::string runtime_dir() {
    if (const char* dir = std::getenv("RDMAEMU_RUNTIME_DIR"); dir && *dir) return dir;
    return "/tmp/rdmaemu-" + std::to_string(::getuid());
}

std::string host_dir(const std::string& runtime, int host) {
    return runtime + "/host" + std::to_string(host);
}

std::string host_socket_path(const std::string& runtime, int host) {
    return host_dir(runtime, host) + "/nicsimd.sock";
}

std::string selected_socket_path() {
    if (const char* sock = std::getenv("RDMAEMU_SOCKET"); sock && *sock) return sock;
    int host = 1;
    if (const char* h = std::getenv("RDMAEMU_HOST"); h && *h) host = std::atoi(h);
    return host_socket_path(runtime_dir(), host);
}

} // namespace emu
