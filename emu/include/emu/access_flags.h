// The access-flag rules of memory registration, as rdma-core and the kernel enforce them.
#pragma once

#include <cstdint>
#include <string>

namespace emu {

// Flags a device may honour in ibv_reg_mr; optional ones (IBV_ACCESS_OPTIONAL_RANGE, e.g.
// RELAXED_ORDERING) are dropped by the library before the check, as rdma-core does.
uint32_t supported_mr_access();

// Returns 0 when `access` is acceptable for an MR, else EINVAL: unknown bits, or remote write /
// remote atomic without local write (ibv_reg_mr(3), kernel ib_check_mr_access). Bits of the
// optional range are accepted.
int check_mr_access(uint32_t access);

// Why check_mr_access refuses `access`, by the flags' names; empty when it does not.
std::string mr_access_refusal(uint32_t access);

// Same for the access flags of a QP (IBV_QP_ACCESS_FLAGS). Only the remote bits have meaning,
// but like the kernel (which never checks them) it accepts any value.
int check_qp_access(uint32_t access);

} // namespace emu
