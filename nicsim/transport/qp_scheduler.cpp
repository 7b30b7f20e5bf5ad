#include "transport/qp_scheduler.h"

#include "nic/nic.h"
#include "transport/engines.h"

namespace nicsim {

void QpScheduler::schedule(Qp& qp) {
    if (qp.scheduled) return;
    qp.scheduled = true;
    runnable_.push_back(qp.qpn);
}

void QpScheduler::run(TransportEnv& env, int turns, int budget) {
    for (int turn = 0; turn < turns && !runnable_.empty(); ++turn) {
        uint32_t qpn = runnable_.front();
        runnable_.pop_front();
        Qp* qp = nic_.qp_by_qpn(qpn);
        if (!qp) continue;
        qp->scheduled = false;
        if (transport::run(env, *qp, budget)) schedule(*qp);
    }
}

// A deadline goes into the heap only when it is earlier than the QP's queued one: moving a
// retransmit timer on at every ACK costs nothing, and when the queued deadline fires on_timer
// finds the later one and sets it again (stale and cancelled deadlines fire harmlessly).
bool QpScheduler::set_timer(Qp& qp, uint64_t at_us) {
    if (at_us == 0 || (qp.timer_queued_us && qp.timer_queued_us <= at_us)) return false;
    qp.timer_queued_us = at_us;
    deadlines_.push({at_us, qp.qpn});
    return true;
}

size_t QpScheduler::fire_due(TransportEnv& env, uint64_t now_us) {
    due_.clear();
    while (!deadlines_.empty() && deadlines_.top().first <= now_us) {
        auto [at, qpn] = deadlines_.top();
        deadlines_.pop();
        Qp* qp = nic_.qp_by_qpn(qpn);
        if (qp && qp->timer_queued_us == at) {
            qp->timer_queued_us = 0;
            due_.push_back(qpn);
        }
    }
    // Collected first: on_timer sets deadlines of its own.
    for (uint32_t qpn : due_)
        if (Qp* qp = nic_.qp_by_qpn(qpn)) transport::on_timer(env, *qp);
    return due_.size();
}

} // namespace nicsim
