#include "emu/backend_mode.h"

#include <cstdlib>

namespace emu {

std::optional<BackendMode> parse_backend_mode(std::string_view text) {
    if (text == "emulated") return BackendMode::Emulated;
    if (text == "hardware") return BackendMode::Hardware;
    if (text == "mixed") return BackendMode::Mixed;
    return std::nullopt;
}

const char* backend_mode_name(BackendMode mode) {
    switch (mode) {
    case BackendMode::Emulated:
        return "emulated";
    case BackendMode::Hardware:
        return "hardware";
    case BackendMode::Mixed:
        return "mixed";
    }
    return "?";
}

BackendMode backend_mode_from_env(bool* valid) {
    const char* env = std::getenv("RDMAEMU_MODE");
    if (valid) *valid = true;
    if (!env || !*env) return BackendMode::Emulated;
    if (auto mode = parse_backend_mode(env)) return *mode;
    if (valid) *valid = false;
    return BackendMode::Emulated;
}

} // namespace emu
