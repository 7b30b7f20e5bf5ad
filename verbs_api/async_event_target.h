// What an asynchronous event names (ibv_async_event.element), by its type: both backends'
// ibv_ack_async_event need it, and the routing needs the object's context.
#pragma once

#include <infiniband/verbs.h>

namespace verbs {

enum class EventTarget { Qp, Cq, Srq, Wq, Port }; // Port: port and device events

EventTarget event_target(ibv_event_type type);

// The context of the object `event` names; nullptr for port and device events.
ibv_context* event_context(const ibv_async_event& event);

} // namespace verbs
