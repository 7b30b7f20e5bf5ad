#include "address_vector.h"
#include "nic/device_limits.h"
#include "verbs.h"

#include <spdlog/fmt/fmt.h>

#include <cerrno>

namespace nicsim {

int create_ah(VerbContext& c, const ipc::CreateAhReq& q, ipc::HandleReply& r) {
    Pd* pd = c.objects.pds.get(q.pd);
    if (!pd) return c.refuse(EINVAL, fmt::format("pd handle {} names no PD of this context", q.pd));
    if (std::string why = address_vector_fault(c.nic.device(), q.attr, "attr"); !why.empty())
        return c.refuse(EINVAL, why);
    if (c.nic.totals().ah >= limits::kMaxAh)
        return c.refuse(ENOMEM,
                        fmt::format("the device's {} AHs are all in use (max_ah)", limits::kMaxAh));
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
    if (!ah) return no_object(c, "AH", q.handle);
    // Hardware copies the address vector into each WQE at post time (mlx5's datagram segment),
    // so sends posted before the destroy still reach their address: send them first (mckey
    // posts its datagrams and destroys the AH at once).
    if (DataPath* dp = c.nic.data_path())
        c.objects.qps.for_each([&](Qp& qp) {
            if (qp.pd == ah->pd && qp.type == IBV_QPT_UD) dp->send_posted(qp);
        });
    free_ah(c.nic, c.objects, *ah);
    c.log.debug("{} ah#{} destroyed", c.prefix, q.handle);
    return 0;
}

} // namespace nicsim
