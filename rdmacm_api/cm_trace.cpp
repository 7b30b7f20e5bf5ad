// The exported librdmacm calls, each traced (RDMAEMU_TRACE) as the verbs are: one line
// `verb rdma_NAME(ARGS) = RESULT` made before the call (a destroy frees what it names) and
// finished with its result and what it filled in, and one line `cm EVENT ...` per event
// rdma_get_cm_event returns (rdma_ack_cm_event is not traced). A CM call is an outer call: the
// verbs it makes (ibv_create_qp in rdma_create_qp, ibv_modify_qp in rdma_accept) and the CM calls
// it makes itself are nested in it and not traced, through the call depth libibverbs shares
// (emu/trace_file.h). A non-blocking channel's EAGAIN is not traced, as an empty ibv_poll_cq is
// not: how often a program polls is no part of what it decides.
#include "cm_objects.h"
#include "emu/cm_trace_text.h"
#include "emu/trace_file.h"
#include "emu/verbs_names.h"
#include "export.h"
#include "untraced.h"

#include <cerrno>
#include <cstring>
#include <string>

using namespace rdmacm;
namespace text = emu::cm_text;

namespace {

// One traced call: counts the depth, knows whether it is the outermost, writes its line.
class Traced {
  public:
    Traced() : depth_(emu::trace_file::depth()) {
        ++depth_;
        on_ = depth_ == 1 && emu::trace_file::enabled();
    }
    ~Traced() { --depth_; }
    Traced(const Traced&) = delete;
    Traced& operator=(const Traced&) = delete;
    explicit operator bool() const { return on_; }

    // The call as the line shows it, made before the call.
    std::string call;

    // `result`, and after it what the call filled in (when it succeeded).
    int done(int result, const std::string& filled = {}) {
        if (on_) {
            std::string line = std::move(call) + " = " + std::to_string(result);
            if (result == -1)
                append_errno(line);
            else if (!filled.empty())
                line += ' ' + filled;
            emu::trace_file::write_line("verb", line);
        }
        return result;
    }
    void done() {
        if (on_) emu::trace_file::write_line("verb", call);
    }
    static void append_errno(std::string& line) {
        const char* name = strerrorname_np(errno);
        line += " errno=";
        line += name ? name : "?";
    }

  private:
    int& depth_;
    bool on_ = false;
};

std::string id_text(const rdma_cm_id* id) {
    return text::id(id, id ? priv(const_cast<rdma_cm_id*>(id))->handle : 0);
}

std::string channel_text(const rdma_event_channel* ch) {
    if (!ch) return "NULL";
    return "cm_channel(fd=" + std::to_string(ch->fd) + ")";
}

std::string qp_text(const ibv_qp* qp) {
    if (!qp) return "NULL";
    char num[16];
    std::snprintf(num, sizeof num, "0x%x", qp->qp_num);
    return std::string("qp(qpn=") + num + " type=" + emu::names::qp_type(qp->qp_type) + ")";
}

std::string pd_text(const ibv_pd* pd) {
    return pd ? "pd(" + std::to_string(pd->handle) + ")" : "NULL";
}

std::string private_data_text(const void* data, unsigned len) {
    return std::string(data ? "private_data" : "NULL") + " len=" + std::to_string(len);
}

std::string args(std::initializer_list<std::string> parts) {
    std::string out;
    for (const std::string& p : parts) {
        if (!out.empty()) out += ", ";
        out += p;
    }
    return out;
}

#define CALL(name, ...) t.call = std::string(name) + "(" + args({__VA_ARGS__}) + ")"

bool ud_space(const rdma_cm_id* id) {
    return id && (id->ps == RDMA_PS_UDP || id->ps == RDMA_PS_IPOIB);
}

} // namespace

RDMACM_EXPORT rdma_event_channel* rdma_create_event_channel() {
    Traced t;
    rdma_event_channel* ch = untraced_rdma_create_event_channel();
    if (t) {
        std::string line = "rdma_create_event_channel() = ";
        if (ch) {
            line += channel_text(ch);
        } else {
            line += "NULL";
            Traced::append_errno(line);
        }
        emu::trace_file::write_line("verb", line);
    }
    return ch;
}

RDMACM_EXPORT void rdma_destroy_event_channel(rdma_event_channel* channel) {
    Traced t;
    if (t) CALL("rdma_destroy_event_channel", channel_text(channel));
    untraced_rdma_destroy_event_channel(channel);
    t.done();
}

RDMACM_EXPORT int rdma_create_id(rdma_event_channel* channel, rdma_cm_id** id, void* context,
                                 rdma_port_space ps) {
    Traced t;
    if (t) CALL("rdma_create_id", channel_text(channel), text::port_space(ps));
    int rc = untraced_rdma_create_id(channel, id, context, ps);
    return t.done(rc, rc == 0 && id ? id_text(*id) : "");
}

RDMACM_EXPORT int rdma_destroy_id(rdma_cm_id* id) {
    Traced t;
    if (t) CALL("rdma_destroy_id", id_text(id));
    return t.done(untraced_rdma_destroy_id(id));
}

RDMACM_EXPORT int rdma_migrate_id(rdma_cm_id* id, rdma_event_channel* channel) {
    Traced t;
    if (t) CALL("rdma_migrate_id", id_text(id), channel_text(channel));
    return t.done(untraced_rdma_migrate_id(id, channel));
}

RDMACM_EXPORT int rdma_bind_addr(rdma_cm_id* id, sockaddr* addr) {
    Traced t;
    if (t) CALL("rdma_bind_addr", id_text(id), text::addr(addr));
    int rc = untraced_rdma_bind_addr(id, addr);
    return t.done(rc, rc == 0 ? "src=" + text::addr(rdma_get_local_addr(id)) : "");
}

RDMACM_EXPORT int rdma_resolve_addr(rdma_cm_id* id, sockaddr* src_addr, sockaddr* dst_addr,
                                    int timeout_ms) {
    Traced t;
    if (t)
        CALL("rdma_resolve_addr", id_text(id), text::addr(src_addr), text::addr(dst_addr),
             std::to_string(timeout_ms));
    return t.done(untraced_rdma_resolve_addr(id, src_addr, dst_addr, timeout_ms));
}

RDMACM_EXPORT int rdma_resolve_route(rdma_cm_id* id, int timeout_ms) {
    Traced t;
    if (t) CALL("rdma_resolve_route", id_text(id), std::to_string(timeout_ms));
    return t.done(untraced_rdma_resolve_route(id, timeout_ms));
}

RDMACM_EXPORT int rdma_listen(rdma_cm_id* id, int backlog) {
    Traced t;
    if (t) CALL("rdma_listen", id_text(id), std::to_string(backlog));
    return t.done(untraced_rdma_listen(id, backlog));
}

RDMACM_EXPORT int rdma_connect(rdma_cm_id* id, rdma_conn_param* conn_param) {
    Traced t;
    if (t) CALL("rdma_connect", id_text(id), text::conn_param(conn_param));
    return t.done(untraced_rdma_connect(id, conn_param));
}

RDMACM_EXPORT int rdma_get_request(rdma_cm_id* listen, rdma_cm_id** id) {
    Traced t;
    if (t) CALL("rdma_get_request", id_text(listen));
    int rc = untraced_rdma_get_request(listen, id);
    return t.done(rc, rc == 0 && id ? id_text(*id) : "");
}

RDMACM_EXPORT int rdma_accept(rdma_cm_id* id, rdma_conn_param* conn_param) {
    Traced t;
    if (t) CALL("rdma_accept", id_text(id), text::conn_param(conn_param));
    return t.done(untraced_rdma_accept(id, conn_param));
}

RDMACM_EXPORT int rdma_reject(rdma_cm_id* id, const void* private_data, uint8_t private_data_len) {
    Traced t;
    if (t) CALL("rdma_reject", id_text(id), private_data_text(private_data, private_data_len));
    return t.done(untraced_rdma_reject(id, private_data, private_data_len));
}

RDMACM_EXPORT int rdma_reject_ece(rdma_cm_id* id, const void* private_data,
                                  uint8_t private_data_len) {
    Traced t;
    if (t) CALL("rdma_reject_ece", id_text(id), private_data_text(private_data, private_data_len));
    return t.done(untraced_rdma_reject_ece(id, private_data, private_data_len));
}

RDMACM_EXPORT int rdma_notify(rdma_cm_id* id, ibv_event_type event) {
    Traced t;
    if (t) CALL("rdma_notify", id_text(id), emu::names::event_type(event));
    return t.done(untraced_rdma_notify(id, event));
}

RDMACM_EXPORT int rdma_disconnect(rdma_cm_id* id) {
    Traced t;
    if (t) CALL("rdma_disconnect", id_text(id));
    return t.done(untraced_rdma_disconnect(id));
}

RDMACM_EXPORT int rdma_establish(rdma_cm_id* id) {
    Traced t;
    if (t) CALL("rdma_establish", id_text(id));
    return t.done(untraced_rdma_establish(id));
}

RDMACM_EXPORT int rdma_init_qp_attr(rdma_cm_id* id, ibv_qp_attr* qp_attr, int* qp_attr_mask) {
    Traced t;
    if (t) CALL("rdma_init_qp_attr", id_text(id));
    int rc = untraced_rdma_init_qp_attr(id, qp_attr, qp_attr_mask);
    return t.done(rc, rc == 0 && qp_attr_mask
                          ? "mask=" + emu::names::qp_attr_mask(unsigned(*qp_attr_mask))
                          : "");
}

RDMACM_EXPORT int rdma_set_option(rdma_cm_id* id, int level, int optname, void* optval,
                                  size_t optlen) {
    Traced t;
    if (t) {
        std::string value = "len=" + std::to_string(optlen);
        if (optval && optlen == 1) value = std::to_string(*static_cast<uint8_t*>(optval));
        if (optval && optlen == sizeof(int)) value = std::to_string(*static_cast<int*>(optval));
        CALL("rdma_set_option", id_text(id), text::option(level, optname), value);
    }
    return t.done(untraced_rdma_set_option(id, level, optname, optval, optlen));
}

RDMACM_EXPORT int rdma_create_qp_ex(rdma_cm_id* id, ibv_qp_init_attr_ex* attr) {
    Traced t;
    if (t) {
        std::string a = "NULL";
        if (attr) {
            ibv_qp_init_attr plain{};
            plain.qp_type = attr->qp_type;
            plain.cap = attr->cap;
            plain.sq_sig_all = attr->sq_sig_all;
            a = text::qp_init_attr(&plain);
        }
        CALL("rdma_create_qp_ex", id_text(id), a);
    }
    int rc = untraced_rdma_create_qp_ex(id, attr);
    return t.done(rc, rc == 0 ? qp_text(id->qp) : "");
}

RDMACM_EXPORT int rdma_create_qp(rdma_cm_id* id, ibv_pd* pd, ibv_qp_init_attr* qp_init_attr) {
    Traced t;
    if (t) CALL("rdma_create_qp", id_text(id), pd_text(pd), text::qp_init_attr(qp_init_attr));
    int rc = untraced_rdma_create_qp(id, pd, qp_init_attr);
    return t.done(rc, rc == 0 ? qp_text(id->qp) : "");
}

RDMACM_EXPORT void rdma_destroy_qp(rdma_cm_id* id) {
    Traced t;
    if (t) CALL("rdma_destroy_qp", id_text(id));
    untraced_rdma_destroy_qp(id);
    t.done();
}

RDMACM_EXPORT int rdma_create_srq_ex(rdma_cm_id* id, ibv_srq_init_attr_ex* attr) {
    Traced t;
    if (t) CALL("rdma_create_srq_ex", id_text(id), text::srq_init_attr_ex(attr));
    return t.done(untraced_rdma_create_srq_ex(id, attr));
}

RDMACM_EXPORT int rdma_create_srq(rdma_cm_id* id, ibv_pd* pd, ibv_srq_init_attr* attr) {
    Traced t;
    if (t) CALL("rdma_create_srq", id_text(id), pd_text(pd), text::srq_init_attr(attr));
    return t.done(untraced_rdma_create_srq(id, pd, attr));
}

RDMACM_EXPORT void rdma_destroy_srq(rdma_cm_id* id) {
    Traced t;
    if (t) CALL("rdma_destroy_srq", id_text(id));
    untraced_rdma_destroy_srq(id);
    t.done();
}

RDMACM_EXPORT int rdma_join_multicast(rdma_cm_id* id, sockaddr* addr, void* context) {
    Traced t;
    if (t) CALL("rdma_join_multicast", id_text(id), text::addr(addr));
    return t.done(untraced_rdma_join_multicast(id, addr, context));
}

RDMACM_EXPORT int rdma_join_multicast_ex(rdma_cm_id* id, rdma_cm_join_mc_attr_ex* attr,
                                         void* context) {
    Traced t;
    if (t) {
        std::string a = "NULL";
        if (attr)
            a = "{addr=" + text::addr(attr->addr) +
                " join_flags=" + std::to_string(attr->join_flags) + "}";
        CALL("rdma_join_multicast_ex", id_text(id), a);
    }
    return t.done(untraced_rdma_join_multicast_ex(id, attr, context));
}

RDMACM_EXPORT int rdma_leave_multicast(rdma_cm_id* id, sockaddr* addr) {
    Traced t;
    if (t) CALL("rdma_leave_multicast", id_text(id), text::addr(addr));
    return t.done(untraced_rdma_leave_multicast(id, addr));
}

RDMACM_EXPORT int rdma_getaddrinfo(const char* node, const char* service,
                                   const rdma_addrinfo* hints, rdma_addrinfo** res) {
    Traced t;
    auto quoted = [](const char* s) { return s ? '"' + std::string(s) + '"' : "NULL"; };
    if (t) CALL("rdma_getaddrinfo", quoted(node), quoted(service), text::addrinfo(hints));
    int rc = untraced_rdma_getaddrinfo(node, service, hints, res);
    return t.done(rc, rc == 0 && res ? text::addrinfo(*res) : "");
}

RDMACM_EXPORT void rdma_freeaddrinfo(rdma_addrinfo* res) {
    Traced t;
    if (t) CALL("rdma_freeaddrinfo", res ? "addrinfo" : "NULL");
    untraced_rdma_freeaddrinfo(res);
    t.done();
}

RDMACM_EXPORT int rdma_create_ep(rdma_cm_id** id, rdma_addrinfo* res, ibv_pd* pd,
                                 ibv_qp_init_attr* qp_init_attr) {
    Traced t;
    if (t)
        CALL("rdma_create_ep", text::addrinfo(res), pd_text(pd), text::qp_init_attr(qp_init_attr));
    int rc = untraced_rdma_create_ep(id, res, pd, qp_init_attr);
    std::string filled;
    if (rc == 0 && id && *id) {
        filled = id_text(*id);
        if ((*id)->qp) filled += ' ' + qp_text((*id)->qp);
    }
    return t.done(rc, filled);
}

RDMACM_EXPORT void rdma_destroy_ep(rdma_cm_id* id) {
    Traced t;
    if (t) CALL("rdma_destroy_ep", id_text(id));
    untraced_rdma_destroy_ep(id);
    t.done();
}

// The event's line is written nested or not: a synchronous ID's call (rdma_connect, rdma_accept,
// rdma_get_request, rdma_create_ep's resolving) waits for its event inside the library, and the
// event shows before that call's line as it shows before an asynchronous program's handling.
RDMACM_EXPORT int rdma_get_cm_event(rdma_event_channel* channel, rdma_cm_event** event) {
    Traced t;
    if (t) CALL("rdma_get_cm_event", channel_text(channel));
    int rc = untraced_rdma_get_cm_event(channel, event);
    if (rc == 0 && emu::trace_file::enabled()) {
        const rdma_cm_event& e = **event;
        emu::trace_file::write_line(
            "cm", text::event(e, id_text(e.id), id_text(e.listen_id), ud_space(e.id)));
        return rc;
    }
    if (rc == 0 || errno == EAGAIN) return rc; // EAGAIN: a non-blocking channel with nothing yet
    return t.done(rc);
}

// Not traced: an acknowledgement is bookkeeping (as ibv_ack_cq_events), often made on another
// thread than the program's other calls, where it would make their order differ run to run.
RDMACM_EXPORT int rdma_ack_cm_event(rdma_cm_event* event) {
    return untraced_rdma_ack_cm_event(event);
}
