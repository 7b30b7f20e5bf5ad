#include "async_event_target.h"

namespace verbs {

EventTarget event_target(ibv_event_type type) {
    switch (type) {
    case IBV_EVENT_CQ_ERR:
        return EventTarget::Cq;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED:
        return EventTarget::Srq;
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED:
        return EventTarget::Qp;
    case IBV_EVENT_WQ_FATAL:
        return EventTarget::Wq;
    default:
        return EventTarget::Port;
    }
}

ibv_context* event_context(const ibv_async_event& event) {
    switch (event_target(event.event_type)) {
    case EventTarget::Qp:
        return event.element.qp->context;
    case EventTarget::Cq:
        return event.element.cq->context;
    case EventTarget::Srq:
        return event.element.srq->context;
    case EventTarget::Wq:
        return event.element.wq->context;
    case EventTarget::Port:
        break;
    }
    return nullptr;
}

} // namespace verbs
