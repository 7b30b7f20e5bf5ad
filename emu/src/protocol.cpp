#include "emu/ipc/protocol.h"

#include "emu/ipc/cm_protocol.h"

#include <array>

namespace emu::ipc {
namespace {

template <Op op> constexpr size_t length_of() {
    return sizeof(Header) + body_size<typename Types<op>::Req>();
}

struct OpInfo {
    const char* name = nullptr; // nullptr: no op has this wire value
    size_t request_length = 0;
};

// Indexed by wire value.
constexpr auto make_table() {
    std::array<OpInfo, static_cast<size_t>(Op::Count)> t{};
#define EMU_IPC_OP_INFO(op_, value_, ...) t[value_] = {#op_, length_of<Op::op_>()};
    EMU_IPC_OPS(EMU_IPC_OP_INFO)
#undef EMU_IPC_OP_INFO
    return t;
}

constexpr auto kTable = make_table();

} // namespace

const char* op_name(Op op) {
    auto i = static_cast<size_t>(op);
    return i < kTable.size() && kTable[i].name ? kTable[i].name : "unknown";
}

size_t request_length(uint16_t op) {
    return op < kTable.size() ? kTable[op].request_length : 0;
}

} // namespace emu::ipc
