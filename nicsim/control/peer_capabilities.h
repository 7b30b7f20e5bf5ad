// What the session's process may do: the kernel checks CAP_NET_RAW before it creates a raw
// packet QP or a flow (rdma_dev_has_raw_cap), and so does the NIC, for the process at the other
// end of the session as it was when it opened the device.
#pragma once

#include <string_view>
#include <sys/types.h>

namespace nicsim {

// Whether capability `cap` (CAP_NET_RAW is 13) is in the CapEff line of a /proc/PID/status
// text. False when the line is missing or malformed.
bool effective_capability(std::string_view proc_status, int cap);

// effective_capability() of /proc/<pid>/status; false when it cannot be read.
bool process_has_net_raw(pid_t pid);

} // namespace nicsim
