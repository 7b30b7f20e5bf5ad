// Asynchronous events: the NIC writes one record per event to the context's async fd; when the
// NIC is gone, the fd's end of file is IBV_EVENT_DEVICE_FATAL.
#include "async_event_target.h"
#include "backends/emulated/dead_nic.h"
#include "backends/emulated/emu_objects.h"
#include "backends/emulated/emulated_verbs.h"
#include "explain/explain.h"

#include <cerrno>
#include <unistd.h>

using namespace verbs;
namespace ipc = emu::ipc;

namespace {

template <typename Map> auto find(Map& m, uint32_t handle) -> typename Map::mapped_type {
    auto it = m.find(handle);
    return it == m.end() ? nullptr : it->second;
}

// The NIC closed the event socket (dead_nic.h): IBV_EVENT_DEVICE_FATAL once per context, then
// EIO, as a disassociated uverbs file answers.
int device_fatal(EmuContext& c, ibv_async_event& event) {
    nic_died(*c.session);
    if (c.fatal_reported.exchange(true)) {
        errno = EIO;
        return -1;
    }
    event.event_type = IBV_EVENT_DEVICE_FATAL;
    event.element.port_num = 0;
    return 0;
}

} // namespace

int emulated::ibv_get_async_event(ibv_context* ctx, ibv_async_event* event) {
    EmuSession& s = session(ctx);
    for (;;) {
        ipc::AsyncEventRecord rec{};
        ssize_t n = ::read(ctx->async_fd, &rec, sizeof rec);
        if (n == 0 || (n < 0 && errno == ECONNRESET))
            return device_fatal(*emu_context(ctx), *event);
        if (n != static_cast<ssize_t>(sizeof rec)) {
            if (n >= 0) errno = EIO;
            return -1;
        }
        auto type = static_cast<ibv_event_type>(rec.event_type);
        event->event_type = type;
        std::lock_guard lock(s.events_mutex);
        switch (event_target(type)) {
        case EventTarget::Qp:
            if (ibv_qp* qp = find(s.qps, rec.handle)) {
                event->element.qp = qp;
                ++emu_qp(qp)->events_reported;
                if (explain::wanted()) explain::event(s, *event, qp->qp_num, rec.reason);
                return 0;
            }
            break; // the QP was destroyed before the app read its event
        case EventTarget::Cq:
            if (ibv_cq* cq = find(s.cqs, rec.handle)) {
                event->element.cq = cq;
                ++emu_cq(cq)->async_events_reported;
                if (explain::wanted()) explain::event(s, *event, 0, rec.reason);
                return 0;
            }
            break;
        case EventTarget::Srq:
            if (ibv_srq* srq = find(s.srqs, rec.handle)) {
                event->element.srq = srq;
                ++reinterpret_cast<EmuSrq*>(srq)->events_reported;
                return 0;
            }
            break;
        case EventTarget::Wq:
            break; // the NIC raises no WQ events
        case EventTarget::Port:
            event->element.port_num = static_cast<int>(rec.handle);
            return 0;
        }
    }
}

namespace {

template <typename Obj> void ack(Obj* obj, uint32_t Obj::*counter) {
    pthread_mutex_lock(&obj->mutex);
    ++(obj->*counter);
    pthread_cond_signal(&obj->cond);
    pthread_mutex_unlock(&obj->mutex);
}

} // namespace

void emulated::ibv_ack_async_event(ibv_async_event* event) {
    switch (event_target(event->event_type)) {
    case EventTarget::Qp:
        ack(event->element.qp, &ibv_qp::events_completed);
        break;
    case EventTarget::Cq:
        ack(event->element.cq, &ibv_cq::async_events_completed);
        break;
    case EventTarget::Srq:
        ack(event->element.srq, &ibv_srq::events_completed);
        break;
    case EventTarget::Wq: // none are raised
    case EventTarget::Port:
        break;
    }
}
