#include "emu/ipc/protocol.h"

#include "emu/ipc/cm_protocol.h"

#include <array>

namespace emu::ipc {
namespace {

template <Op op> constexpr size_t length_of() {
    return sizeof(Header) + body_size<typename Types<op>::Req>();
}

struct OpInfo {
    const char* name;
    size_t request_length;
};

template <size_t... I> constexpr auto make_table(std::index_sequence<I...>) {
    constexpr const char* names[] = {"Hello",
                                     "QueryDevice",
                                     "QueryPort",
                                     "QueryGid",
                                     "QueryPkey",
                                     "AllocPd",
                                     "DeallocPd",
                                     "RegMr",
                                     "ReregMr",
                                     "DeregMr",
                                     "CreateCompChannel",
                                     "DestroyCompChannel",
                                     "CreateCq",
                                     "ResizeCq",
                                     "DestroyCq",
                                     "CreateQp",
                                     "ModifyQp",
                                     "QueryQp",
                                     "DestroyQp",
                                     "CreateSrq",
                                     "ModifySrq",
                                     "QuerySrq",
                                     "DestroySrq",
                                     "CreateAh",
                                     "DestroyAh",
                                     "Status",
                                     "AllocDm",
                                     "FreeDm",
                                     "RegDmMr",
                                     "AllocMw",
                                     "DeallocMw",
                                     "CreateFlow",
                                     "DestroyFlow",
                                     "CreateWq",
                                     "ModifyWq",
                                     "DestroyWq",
                                     "CreateRwqIndTable",
                                     "DestroyRwqIndTable",
                                     "CreateRssQp",
                                     "OpenXrcd",
                                     "CloseXrcd",
                                     "CreateSrqEx",
                                     "OpenQp",
                                     "AttachMcast",
                                     "DetachMcast",
                                     "SrqOps",
                                     "ImportObject",
                                     "ReopenContext",
                                     "CmCreateChannel",
                                     "CmDestroyChannel",
                                     "CmGetEvent",
                                     "CmCreateId",
                                     "CmDestroyId",
                                     "CmMigrateId",
                                     "CmBindAddr",
                                     "CmResolveAddr",
                                     "CmResolveRoute",
                                     "CmQueryId",
                                     "CmListen",
                                     "CmConnect",
                                     "CmAccept",
                                     "CmReject",
                                     "CmEstablish",
                                     "CmDisconnect",
                                     "CmNotify",
                                     "CmInitQpAttr",
                                     "CmSetOption",
                                     "CmJoinMcast",
                                     "CmLeaveMcast"};
    static_assert(std::size(names) == sizeof...(I));
    return std::array<OpInfo, sizeof...(I)>{
        OpInfo{names[I], length_of<static_cast<Op>(I + 1)>()}...};
}

constexpr size_t kOps = static_cast<size_t>(Op::Count) - 1;
constexpr auto kTable = make_table(std::make_index_sequence<kOps>{});

} // namespace

const char* op_name(Op op) {
    auto i = static_cast<size_t>(op);
    return i >= 1 && i <= kOps ? kTable[i - 1].name : "unknown";
}

size_t request_length(uint16_t op) {
    return op >= 1 && op <= kOps ? kTable[op - 1].request_length : 0;
}

} // namespace emu::ipc
