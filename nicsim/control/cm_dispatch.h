// Routes a CM session's request (cm_protocol.h) to the CM agent and sends the reply.
#pragma once

#include "emu/ipc/protocol.h"

namespace nicsim {
class Session;
}

namespace nicsim::cm {

class CmAgent;
class CmClient;

void dispatch(Session& s, CmAgent& agent, CmClient& client, const emu::ipc::Header& h,
              const char* body);

} // namespace nicsim::cm
