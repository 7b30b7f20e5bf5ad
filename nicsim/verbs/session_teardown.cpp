#include "verbs/verbs.h"

namespace nicsim {

void free_session_objects(Nic& nic, SessionObjects& objects) {
    // Flows first (they point at QPs), then QPs (they use CQs, SRQs, indirection tables, XRC
    // domains and PDs), PDs last.
    while (Flow* flow = objects.flows.newest())
        free_flow(nic, objects, *flow);
    while (Qp* qp = objects.qps.newest())
        free_qp(nic, objects, *qp);
    while (RwqIndTable* t = objects.ind_tables.newest())
        free_ind_table(nic, objects, *t);
    while (Wq* wq = objects.wqs.newest())
        free_wq(nic, objects, *wq);
    while (Ah* ah = objects.ahs.newest())
        free_ah(nic, objects, *ah);
    while (Srq* srq = objects.srqs.newest())
        free_srq(nic, objects, *srq);
    while (XrcdHandle* x = objects.xrcds.newest())
        free_xrcd(nic, objects, *x); // after the XRC SRQs and QPs in it
    while (Cq* cq = objects.cqs.newest())
        free_cq(nic, objects, *cq);
    while (CompChannel* ch = objects.channels.newest())
        free_comp_channel(nic, objects, *ch);
    while (Mw* mw = objects.mws.newest())
        free_mw(nic, objects, *mw); // before the MRs they are bound to
    while (Mr* mr = objects.mrs.newest())
        free_mr(nic, objects, *mr);
    while (Dm* dm = objects.dms.newest())
        free_dm(nic, objects, *dm); // after the MRs on them
    while (Pd* pd = objects.pds.newest())
        free_pd(nic, objects, *pd);
}

} // namespace nicsim
