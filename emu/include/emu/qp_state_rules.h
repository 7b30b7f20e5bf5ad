// The QP state machine of IBA 11.2.1 / 10.3: which transitions are legal for each QP type and
// which attribute-mask bits each transition requires and allows (the kernel's qp_state_table).
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>

namespace emu {

struct TransitionRule {
    bool valid;
    uint32_t required; // enum ibv_qp_attr_mask bits, IBV_QP_STATE not included
    uint32_t optional;
};

TransitionRule transition_rule(ibv_qp_type type, ibv_qp_state from, ibv_qp_state to);

// True when `mask` (as given to ibv_modify_qp) is a legal modification of a QP of `type` in
// state `current`: the target is mask's attr.qp_state when IBV_QP_STATE is set, else `current`;
// IBV_QP_CUR_STATE may only name RTR, RTS, SQD or SQE. (ib_modify_qp_is_ok)
bool modify_is_ok(ibv_qp_type type, ibv_qp_state current, ibv_qp_state next, uint32_t mask);

// Why modify_is_ok refuses `mask`, naming the rule and the attributes by their names, e.g.
// "IBV_QP_DEST_QPN missing for INIT->RTR on RC"; empty when it does not refuse.
std::string modify_refusal(ibv_qp_type type, ibv_qp_state current, ibv_qp_state next,
                           uint32_t mask);

} // namespace emu
