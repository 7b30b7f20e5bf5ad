#include "session_objects.h"

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

} // namespace nicsim
