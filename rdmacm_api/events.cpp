// Event channels and events: rdma_create_event_channel, rdma_get_cm_event (blocking, or EAGAIN
// on a channel the app made O_NONBLOCK), rdma_ack_cm_event, rdma_event_str. What librdmacm does
// to an event before the app sees it is done here too: a connection request becomes a new ID,
// a connect response moves the QP to RTS and answers with an RTU, a rejection moves it to ERR,
// a multicast join attaches it.
#include "cm_session.h"
#include "connection.h"
#include "export.h"
#include "ids.h"
#include "untraced.h"

#include <unistd.h>

#include <cstring>
#include <new>

using namespace rdmacm;
namespace ipc = emu::ipc;

namespace {

void copy_private(CmEvent& evt, const ipc::CmConnParam& c, const void*& data, uint8_t& len) {
    len = c.private_data_len;
    std::memcpy(evt.private_data, c.private_data, c.private_data_len);
    data = c.private_data_len ? evt.private_data : nullptr;
}

void copy_conn(CmEvent& evt, const ipc::CmEventRecord& rec) {
    rdma_conn_param& dst = evt.event.param.conn;
    copy_private(evt, rec.conn, dst.private_data, dst.private_data_len);
    dst.responder_resources = rec.conn.responder_resources;
    dst.initiator_depth = rec.conn.initiator_depth;
    dst.flow_control = rec.conn.flow_control;
    dst.retry_count = rec.conn.retry_count;
    dst.rnr_retry_count = rec.conn.rnr_retry_count;
    dst.srq = rec.conn.srq;
    dst.qp_num = rec.conn.qp_num;
}

void copy_ud(CmEvent& evt, const ipc::CmEventRecord& rec) {
    rdma_ud_param& dst = evt.event.param.ud;
    copy_private(evt, rec.conn, dst.private_data, dst.private_data_len);
    dst.ah_attr = rec.ah;
    dst.qp_num = rec.ud_qp_num;
    dst.qkey = rec.ud_qkey;
}

bool is_ud(const CmId* p) {
    return p->id.qp_type == IBV_QPT_UD;
}

enum class Outcome { Deliver, Skip };

// A request for a listener: its new ID, on the listener's channel (or, for a synchronous
// listener, on an internal one of its own, as rdma_get_request wants).
Outcome connect_request(CmEvent& evt, const ipc::CmEventRecord& rec) {
    CmId* l = find_id(rec.listen_id);
    if (!l) { // the listener went before its request was read: let the NIC refuse it
        ipc::CmEventsReply ignored{};
        call<ipc::Op::CmDestroyId>({rec.id, 0}, ignored);
        return Outcome::Skip;
    }
    evt.id = l; // acknowledged on the listener, as in rdma-core
    CmId* p =
        alloc_id(l->id.channel, l->id.context, l->id.ps, static_cast<ibv_qp_type>(rec.qp_type));
    if (!p) {
        ipc::CmEventsReply ignored{};
        call<ipc::Op::CmDestroyId>({rec.id, 0}, ignored);
        event_acked(l, nullptr);
        return Outcome::Skip;
    }
    p->handle = rec.id;
    register_id(p);
    p->initiator_depth = rec.conn.initiator_depth;
    p->responder_resources = rec.conn.responder_resources;
    if ((l->sync && rdma_migrate_id(&p->id, nullptr)) || apply_info(p, rec.info)) {
        rdma_destroy_id(&p->id);
        event_acked(l, nullptr);
        return Outcome::Skip;
    }
    evt.event.id = &p->id;
    evt.event.listen_id = &l->id;
    if (is_ud(p))
        copy_ud(evt, rec);
    else
        copy_conn(evt, rec);
    return Outcome::Deliver;
}

Outcome translate(CmEvent& evt, const ipc::CmEventRecord& rec) {
    evt.event.event = static_cast<rdma_cm_event_type>(rec.event);
    evt.event.status = rec.status;
    if (rec.event == RDMA_CM_EVENT_CONNECT_REQUEST) return connect_request(evt, rec);
    CmId* p = find_id(rec.id);
    if (!p) return Outcome::Skip; // its ID is gone (the NIC took back what it could)
    evt.id = p;
    evt.event.id = &p->id;
    switch (rec.event) {
    case RDMA_CM_EVENT_ADDR_RESOLVED:
        if (apply_info(p, rec.info)) {
            evt.event.event = RDMA_CM_EVENT_ADDR_ERROR;
            evt.event.status = -errno;
        }
        break;
    case RDMA_CM_EVENT_ROUTE_RESOLVED:
        if (apply_info(p, rec.info)) {
            evt.event.event = RDMA_CM_EVENT_ROUTE_ERROR;
            evt.event.status = -errno;
        }
        break;
    case RDMA_CM_EVENT_CONNECT_RESPONSE:
        copy_conn(evt, rec);
        if (!p->id.qp) break; // the app answers with rdma_establish
        if (process_conn_resp(p) == 0) {
            evt.event.event = RDMA_CM_EVENT_ESTABLISHED;
        } else {
            evt.event.event = RDMA_CM_EVENT_CONNECT_ERROR;
            evt.event.status = -errno;
            p->connect_error = true;
        }
        break;
    case RDMA_CM_EVENT_REJECTED:
    case RDMA_CM_EVENT_DISCONNECTED:
        if (p->connect_error) { // reported as CONNECT_ERROR already
            event_acked(p, nullptr);
            return Outcome::Skip;
        }
        copy_conn(evt, rec);
        if (rec.event == RDMA_CM_EVENT_REJECTED) modify_qp_err(p);
        break;
    case RDMA_CM_EVENT_MULTICAST_JOIN:
    case RDMA_CM_EVENT_MULTICAST_ERROR:
        for (CmMulticast* mc : p->groups)
            if (mc->handle == rec.mc) evt.mc = mc;
        if (!evt.mc) return Outcome::Skip; // left before the event was read
        copy_ud(evt, rec);
        evt.event.param.ud.private_data = evt.mc->context;
        if (rec.event == RDMA_CM_EVENT_MULTICAST_JOIN && attach_group(p, *evt.mc, rec.ah)) {
            evt.event.event = RDMA_CM_EVENT_MULTICAST_ERROR;
            evt.event.status = -errno;
        }
        break;
    default:
        if (is_ud(p))
            copy_ud(evt, rec);
        else
            copy_conn(evt, rec);
        break;
    }
    return Outcome::Deliver;
}

} // namespace

rdma_event_channel* untraced_rdma_create_event_channel() {
    auto* ch = new (std::nothrow) CmChannel;
    if (!ch) {
        errno = ENOMEM;
        return nullptr;
    }
    ipc::CmChannelReply reply{};
    ipc::PassedFds fds;
    if (call<ipc::Op::CmCreateChannel>({}, reply, &fds)) {
        int err = errno;
        delete ch;
        errno = err;
        return nullptr;
    }
    if (fds.count != 1) {
        fds.close_all();
        delete ch;
        errno = EPROTO;
        return nullptr;
    }
    ch->channel.fd = fds.fd[0];
    ch->handle = reply.channel;
    return &ch->channel;
}

void untraced_rdma_destroy_event_channel(rdma_event_channel* channel) {
    if (!channel) return;
    CmChannel* ch = priv(channel);
    call<ipc::Op::CmDestroyChannel>({ch->handle, 0});
    ::close(channel->fd);
    delete ch;
}

int untraced_rdma_get_cm_event(rdma_event_channel* channel, rdma_cm_event** event) {
    if (!channel || !event) return fail(EINVAL);
    auto* evt = new (std::nothrow) CmEvent;
    if (!evt) return fail(ENOMEM);
    for (;;) {
        // The channel's token: there for as long as the NIC holds an event for it.
        char token;
        ssize_t n = ::read(channel->fd, &token, 1);
        if (n <= 0) {
            const int err = n < 0 ? errno : ENODEV; // 0: the NIC is gone
            delete evt;
            return fail(err);
        }
        ipc::CmEventRecord rec{};
        if (call<ipc::Op::CmGetEvent>({priv(channel)->handle, 0}, rec)) {
            if (errno == EAGAIN) continue; // the event was taken back (its ID destroyed)
            const int err = errno;
            delete evt;
            return fail(err);
        }
        std::memset(&evt->event, 0, sizeof evt->event);
        evt->id = nullptr;
        evt->mc = nullptr;
        if (translate(*evt, rec) == Outcome::Deliver) {
            *event = &evt->event;
            return 0;
        }
    }
}

int untraced_rdma_ack_cm_event(rdma_cm_event* event) {
    if (!event) return fail(EINVAL);
    auto* evt = reinterpret_cast<CmEvent*>(event);
    event_acked(evt->id, evt->mc);
    delete evt;
    return 0;
}

RDMACM_EXPORT const char* rdma_event_str(rdma_cm_event_type event) {
    return ipc::cm_event_name(event);
}
