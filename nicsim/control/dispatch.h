// Routes a checked request to its verb and sends the verb's reply.
#pragma once

#include "emu/ipc/protocol.h"

namespace nicsim {

class Session;

// Runs the verb `h.op` names (anything but Hello and Status) with the request body `body`.
void dispatch_verb(Session& s, const emu::ipc::Header& h, const char* body);

} // namespace nicsim
