// The argument checks the emulator makes, run in front of a real device: what the emulated NIC
// would refuse is reported as a warning (stderr and the verbs trace) before the real device sees
// the call, which goes ahead unchanged. A program that passes on a lenient NIC but breaks a rule
// of the verbs API is found this way.
#pragma once

#include <infiniband/verbs.h>

namespace verbs::hardware {

void check_mr_access(const char* verb, int access);
void check_modify_qp(const ibv_qp* qp, const ibv_qp_attr* attr, int attr_mask);

} // namespace verbs::hardware
