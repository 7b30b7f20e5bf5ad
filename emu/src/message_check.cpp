#include "emu/ipc/message_check.h"

#include "emu/ipc/protocol.h"

#include <cstring>

namespace emu::ipc {

const char* describe(RequestCheck check) {
    switch (check) {
    case RequestCheck::Ok:
        return "ok";
    case RequestCheck::TooShort:
        return "shorter than a header";
    case RequestCheck::BadMagic:
        return "bad magic";
    case RequestCheck::BadVersion:
        return "unsupported protocol version";
    case RequestCheck::UnknownOp:
        return "unknown op";
    case RequestCheck::BadLength:
        return "length does not match the op";
    }
    return "?";
}

RequestCheck check_request(const void* msg, size_t len) {
    if (len < sizeof(Header)) return RequestCheck::TooShort;
    Header h;
    std::memcpy(&h, msg, sizeof h);
    if (h.magic != kMagic) return RequestCheck::BadMagic;
    if (h.version != kVersion) return RequestCheck::BadVersion;
    size_t want = request_length(h.op);
    if (want == 0) return RequestCheck::UnknownOp;
    if (h.length != len || len != want) return RequestCheck::BadLength;
    return RequestCheck::Ok;
}

} // namespace emu::ipc
