// Routes a checked request to its verb and sends the verb's reply.
#pragma once

#include "emu/ipc/protocol.h"

#include <sys/types.h>

namespace nicsim {

class Session;

// Runs the verb `h.op` names (anything but Hello, Status and ReopenContext) with the request
// body `body`, for the process `caller` (whose memory the objects it makes are in).
void dispatch_verb(Session& s, const emu::ipc::Header& h, const char* body, pid_t caller);

} // namespace nicsim
