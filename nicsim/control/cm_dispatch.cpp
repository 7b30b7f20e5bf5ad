#include "control/cm_dispatch.h"

#include "cm/cm_agent.h"
#include "control/session.h"
#include "emu/ipc/cm_protocol.h"

#include <array>
#include <cstring>

namespace nicsim::cm {
namespace {

using emu::ipc::Op;

struct Call {
    CmAgent& agent;
    CmClient& client;
    std::vector<UniqueFd> fds; // sent with the reply
};

using Handler = void (*)(Session&, Call&, const emu::ipc::Header&, const char*);

template <Op op, auto Fn>
void run(Session& s, Call& call, const emu::ipc::Header& h, const char* body) {
    using Req = typename ipc::Types<op>::Req;
    using Reply = typename ipc::Types<op>::Reply;
    Req req{};
    if constexpr (ipc::body_size<Req>() != 0) std::memcpy(&req, body, sizeof req);
    Reply reply{};
    int err = Fn(call, req, reply);
    if (err) call.fds.clear();
    s.send_reply(h, err, &reply, err ? 0 : ipc::body_size<Reply>(), call.fds);
}

int create_channel(Call& c, const ipc::Empty&, ipc::CmChannelReply& r) {
    UniqueFd app_end;
    if (int err = c.client.create_channel(r.channel, app_end)) return err;
    c.fds.push_back(std::move(app_end));
    return 0;
}
int destroy_channel(Call& c, const ipc::CmChannelReq& q, ipc::Empty&) {
    if (!c.client.has_channel(q.channel)) return EINVAL;
    c.agent.destroy_channel(c.client, q.channel);
    return 0;
}
// EAGAIN: the channel has no event (its token was spurious: the event was taken back).
int get_event(Call& c, const ipc::CmChannelReq& q, ipc::CmEventRecord& r) {
    if (!c.client.has_channel(q.channel)) return EINVAL;
    return c.agent.get_event(c.client, q.channel, r) ? 0 : EAGAIN;
}
int create_id(Call& c, const ipc::CmCreateIdReq& q, ipc::HandleReply& r) {
    return c.agent.create_id(c.client, q, r.handle);
}
int destroy_id(Call& c, const ipc::CmIdReq& q, ipc::CmEventsReply& r) {
    return c.agent.destroy_id(c.client, q.id, r.events_reported);
}
int migrate_id(Call& c, const ipc::CmMigrateReq& q, ipc::CmEventsReply& r) {
    return c.agent.migrate_id(c.client, q, r.events_reported);
}
int bind_addr(Call& c, const ipc::CmBindReq& q, ipc::CmIdInfo& r) {
    return c.agent.bind(c.client, q, r);
}
int resolve_addr(Call& c, const ipc::CmResolveAddrReq& q, ipc::Empty&) {
    return c.agent.resolve_addr(c.client, q);
}
int resolve_route(Call& c, const ipc::CmResolveRouteReq& q, ipc::Empty&) {
    return c.agent.resolve_route(c.client, q);
}
int query_id(Call& c, const ipc::CmIdReq& q, ipc::CmIdInfo& r) {
    return c.agent.query(c.client, q.id, r);
}
int listen(Call& c, const ipc::CmListenReq& q, ipc::CmIdInfo& r) {
    return c.agent.listen(c.client, q, r);
}
int connect(Call& c, const ipc::CmConnectReq& q, ipc::Empty&) {
    return c.agent.connect(c.client, q);
}
int accept(Call& c, const ipc::CmConnectReq& q, ipc::Empty&) {
    return c.agent.accept(c.client, q);
}
int reject(Call& c, const ipc::CmRejectReq& q, ipc::Empty&) {
    return c.agent.reject(c.client, q);
}
int establish(Call& c, const ipc::CmIdReq& q, ipc::Empty&) {
    return c.agent.establish(c.client, q.id);
}
int disconnect(Call& c, const ipc::CmIdReq& q, ipc::Empty&) {
    return c.agent.disconnect(c.client, q.id);
}
int notify(Call& c, const ipc::CmNotifyReq& q, ipc::Empty&) {
    return c.agent.notify(c.client, q);
}
int init_qp_attr(Call& c, const ipc::CmInitQpAttrReq& q, ipc::CmInitQpAttrReply& r) {
    return c.agent.init_qp_attr(c.client, q, r);
}
int set_option(Call& c, const ipc::CmSetOptionReq& q, ipc::Empty&) {
    return c.agent.set_option(c.client, q);
}
int join_mcast(Call& c, const ipc::CmJoinMcastReq& q, ipc::HandleReply& r) {
    return c.agent.join_mcast(c.client, q, r.handle);
}
int leave_mcast(Call& c, const ipc::CmLeaveMcastReq& q, ipc::CmEventsReply& r) {
    return c.agent.leave_mcast(c.client, q, r.events_reported);
}

// Indexed by wire value; only the CM ops have a handler here.
constexpr auto make_table() {
    std::array<Handler, static_cast<size_t>(Op::Count)> t{};
#define EMU_IPC_CM_REQUEST(op_, value_, req_, reply_, fn_) t[value_] = &run<Op::op_, fn_>;
    EMU_IPC_CM_OPS(EMU_IPC_CM_REQUEST)
#undef EMU_IPC_CM_REQUEST
    return t;
}

constexpr auto kTable = make_table();

} // namespace

void dispatch(Session& s, CmAgent& agent, CmClient& client, const emu::ipc::Header& h,
              const char* body) {
    Handler fn = h.op < kTable.size() ? kTable[h.op] : nullptr;
    if (!fn)
        return s.end(std::string("no CM request for op ") +
                     emu::ipc::op_name(static_cast<Op>(h.op)));
    Call call{agent, client, {}};
    fn(s, call, h, body);
}

} // namespace nicsim::cm
