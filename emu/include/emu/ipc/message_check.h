// Validation of a request's framing before the daemon looks at its body.
#pragma once

#include <cstddef>
#include <cstdint>

namespace emu::ipc {

enum class RequestCheck { Ok, TooShort, BadMagic, BadVersion, UnknownOp, BadLength };

const char* describe(RequestCheck check);

// Checks magic, version, op and that `len` is exactly the op's request length.
RequestCheck check_request(const void* msg, size_t len);

} // namespace emu::ipc
