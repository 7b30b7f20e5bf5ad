// Where a set of emulated hosts lives: one runtime directory per set, one folder per host.
#pragma once

#include <string>

namespace emu {

// $RDMAEMU_RUNTIME_DIR when set, else /tmp/rdmaemu-<uid>.
std::string runtime_dir();
std::string host_dir(const std::string& runtime, int host);
std::string host_socket_path(const std::string& runtime, int host);

// The control socket the verbs library uses: $RDMAEMU_SOCKET when set, else that of host
// $RDMAEMU_HOST (default 1) in runtime_dir().
std::string selected_socket_path();

} // namespace emu
