#include "session_objects.h"

#include "verbs/verbs.h"

namespace nicsim {

std::string SessionObjects::counts_json() const {
    return "{\"pd\":" + std::to_string(pds.size()) + ",\"mr\":" + std::to_string(mrs.size()) +
           ",\"cq\":" + std::to_string(cqs.size()) + ",\"qp\":" + std::to_string(qps.size()) +
           ",\"srq\":" + std::to_string(srqs.size()) + ",\"ah\":" + std::to_string(ahs.size()) +
           ",\"comp_channel\":" + std::to_string(channels.size()) +
           ",\"dm\":" + std::to_string(dms.size()) + ",\"mw\":" + std::to_string(mws.size()) +
           ",\"flow\":" + std::to_string(flows.size()) + ",\"wq\":" + std::to_string(wqs.size()) +
           ",\"rwq_ind_table\":" + std::to_string(ind_tables.size()) +
           ",\"xrcd\":" + std::to_string(xrcds.size()) + "}";
}

void SessionObjects::take_doorbell_slot(Qp& qp) {
    for (uint32_t slot = 1; slot < doorbell_qps.size(); ++slot)
        if (!doorbell_qps[slot]) {
            doorbell_qps[slot] = &qp;
            qp.doorbell_slot = slot;
            return;
        }
    if (doorbell_qps.size() < emu::ipc::kDoorbellSlots) {
        qp.doorbell_slot = static_cast<uint32_t>(doorbell_qps.size());
        doorbell_qps.push_back(&qp);
    }
}

void SessionObjects::drop_doorbell_slot(Qp& qp) {
    if (qp.doorbell_slot && qp.doorbell_slot < doorbell_qps.size() &&
        doorbell_qps[qp.doorbell_slot] == &qp)
        doorbell_qps[qp.doorbell_slot] = nullptr;
    qp.doorbell_slot = 0;
}

void SessionObjects::destroy_all(Nic& nic) {
    // Flows first (they point at QPs), then QPs (they use CQs, SRQs, indirection tables, XRC
    // domains and PDs), PDs last.
    while (Flow* flow = flows.newest())
        free_flow(nic, *this, *flow);
    while (Qp* qp = qps.newest())
        free_qp(nic, *this, *qp);
    while (RwqIndTable* t = ind_tables.newest())
        free_ind_table(nic, *this, *t);
    while (Wq* wq = wqs.newest())
        free_wq(nic, *this, *wq);
    while (Ah* ah = ahs.newest())
        free_ah(nic, *this, *ah);
    while (Srq* srq = srqs.newest())
        free_srq(nic, *this, *srq);
    while (XrcdHandle* x = xrcds.newest())
        free_xrcd(nic, *this, *x); // after the XRC SRQs and QPs in it
    while (Cq* cq = cqs.newest())
        free_cq(nic, *this, *cq);
    while (CompChannel* ch = channels.newest())
        free_comp_channel(nic, *this, *ch);
    while (Mw* mw = mws.newest())
        free_mw(nic, *this, *mw); // before the MRs they are bound to
    while (Mr* mr = mrs.newest())
        free_mr(nic, *this, *mr);
    while (Dm* dm = dms.newest())
        free_dm(nic, *this, *dm); // after the MRs on them
    while (Pd* pd = pds.newest())
        free_pd(nic, *this, *pd);
}

} // namespace nicsim
