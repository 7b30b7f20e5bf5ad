#include "address_vector.h"
#include "device_limits.h"
#include "verbs.h"

#include <cerrno>

namespace nicsim {

int create_ah(VerbContext& c, const ipc::CreateAhReq& q, ipc::HandleReply& r) {
    Pd* pd = c.objects.pds.get(q.pd);
    if (!pd) return EINVAL;
    if (int err = check_address_vector(c.nic.device(), q.attr)) return err;
    if (c.nic.totals().ah >= limits::kMaxAh) return ENOMEM;
    auto ah = std::make_unique<Ah>();
    ah->pd = pd;
    ah->attr = q.attr;
    r.handle = c.objects.ahs.add(std::move(ah)).handle;
    ++pd->users;
    ++c.nic.totals().ah;
    c.log.debug("{} ah#{} created", c.prefix, r.handle);
    return 0;
}

void free_ah(Nic& nic, SessionObjects& objs, Ah& ah) {
    --ah.pd->users;
    --nic.totals().ah;
    objs.ahs.erase(ah.handle);
}

int destroy_ah(VerbContext& c, const ipc::HandleReq& q, ipc::Empty&) {
    Ah* ah = c.objects.ahs.get(q.handle);
    if (!ah) return EINVAL;
    free_ah(c.nic, c.objects, *ah);
    c.log.debug("{} ah#{} destroyed", c.prefix, q.handle);
    return 0;
}

} // namespace nicsim
