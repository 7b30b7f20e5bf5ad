// Which devices the verbs library offers: RDMAEMU_MODE=emulated|hardware|mixed.
#pragma once

#include <optional>
#include <string_view>

namespace emu {

enum class BackendMode {
    Emulated, // only the emulated hosts' devices (the default)
    Hardware, // only the real rdma-core devices, every verb forwarded to rdma-core
    Mixed,    // both, side by side in one device list
};

std::optional<BackendMode> parse_backend_mode(std::string_view text);
const char* backend_mode_name(BackendMode mode);

// The mode in $RDMAEMU_MODE; unset or empty means Emulated. `valid` is false when the variable
// holds something else (the caller reports it; the mode is then Emulated).
BackendMode backend_mode_from_env(bool* valid = nullptr);

} // namespace emu
