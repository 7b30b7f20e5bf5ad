#include "session_objects.h"

#include <nlohmann/json.hpp>

namespace nicsim {

Json SessionObjects::counts_json() const {
    return {{"pd", pds.size()},
            {"mr", mrs.size()},
            {"cq", cqs.size()},
            {"qp", qps.size()},
            {"srq", srqs.size()},
            {"ah", ahs.size()},
            {"comp_channel", channels.size()},
            {"dm", dms.size()},
            {"mw", mws.size()},
            {"flow", flows.size()},
            {"wq", wqs.size()},
            {"rwq_ind_table", ind_tables.size()},
            {"xrcd", xrcds.size()}};
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

} // namespace nicsim
