#include "nic/device_limits.h"
#include "transport/memory_windows.h"
#include "verbs.h"

#include <cerrno>

namespace nicsim {

int alloc_mw(VerbContext& c, const ipc::AllocMwReq& q, ipc::AllocMwReply& r) {
    Pd* pd = c.objects.pds.get(q.pd);
    if (!pd) return EINVAL;
    if (q.type != IBV_MW_TYPE_1 && q.type != IBV_MW_TYPE_2) return EINVAL;
    if (c.nic.totals().mw >= limits::kMaxMw) return ENOMEM;
    auto mw = std::make_unique<Mw>();
    mw->pd = pd;
    mw->type = q.type;
    Mw& made = c.objects.mws.add(std::move(mw));
    c.nic.register_mw(made);
    ++pd->users;
    ++c.nic.totals().mw;
    r.handle = made.handle;
    r.rkey = made.rkey;
    c.log.debug("{} mw#{} allocated: type {} rkey {:#x}", c.prefix, made.handle, made.type,
                made.rkey);
    return 0;
}

void free_mw(Nic& nic, SessionObjects& objs, Mw& mw) {
    unbind_window(mw);
    nic.unregister_mw(mw);
    --mw.pd->users;
    --nic.totals().mw;
    objs.mws.erase(mw.handle);
}

int dealloc_mw(VerbContext& c, const ipc::HandleReq& q, ipc::Empty&) {
    Mw* mw = c.objects.mws.get(q.handle);
    if (!mw) return no_object(c, "MW", q.handle);
    free_mw(c.nic, c.objects, *mw); // a bound window stops granting access at once
    c.log.debug("{} mw#{} deallocated", c.prefix, q.handle);
    return 0;
}

} // namespace nicsim
