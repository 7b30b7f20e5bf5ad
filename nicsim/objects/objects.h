// The verbs objects the daemon owns on behalf of its sessions. `users` counts the objects that
// refer to this one, so destroying it while in use fails with EBUSY as the kernel's does.
#pragma once

#include "unique_fd.h"

#include <infiniband/verbs.h>

#include <cstdint>

namespace nicsim {

struct Pd {
    uint32_t handle = 0;
    uint32_t users = 0;
};

struct Mr {
    uint32_t handle = 0;
    Pd* pd = nullptr;
    uint64_t addr = 0;
    uint64_t length = 0;
    uint64_t iova = 0;
    uint32_t access = 0;
    uint32_t lkey = 0;
    uint32_t rkey = 0;
};

struct CompChannel {
    uint32_t handle = 0;
    uint32_t users = 0;
    UniqueFd daemon_end; // completion events are written here
};

struct Cq {
    uint32_t handle = 0;
    uint32_t users = 0;
    uint32_t cqe = 0;
    CompChannel* channel = nullptr;
    int comp_vector = 0;
};

struct Srq {
    uint32_t handle = 0;
    uint32_t users = 0;
    Pd* pd = nullptr;
    ibv_srq_attr attr{};
};

struct Ah {
    uint32_t handle = 0;
    Pd* pd = nullptr;
    ibv_ah_attr attr{};
};

struct Qp {
    uint32_t handle = 0;
    uint32_t qpn = 0;
    ibv_qp_type type = IBV_QPT_RC;
    Pd* pd = nullptr;
    Cq* send_cq = nullptr;
    Cq* recv_cq = nullptr;
    Srq* srq = nullptr;
    ibv_qp_cap cap{};
    bool sq_sig_all = false;
    ibv_qp_attr attr{}; // current attributes; attr.qp_state is the state
};

} // namespace nicsim
