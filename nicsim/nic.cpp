#include "nic.h"

#include <algorithm>

namespace nicsim {

namespace {
constexpr uint32_t kQpnMask = 0xffffff;
constexpr uint32_t kFirstQpn = 0x11;
} // namespace

void Nic::register_mr(Mr& mr) {
    mr.lkey = keys_.allocate();
    mr.rkey = keys_.allocate();
    by_lkey_[mr.lkey] = &mr;
    by_rkey_[mr.rkey] = &mr;
}

void Nic::unregister_mr(Mr& mr) {
    by_lkey_.erase(mr.lkey);
    by_rkey_.erase(mr.rkey);
    keys_.release(mr.lkey);
    keys_.release(mr.rkey);
}

void Nic::register_mw(Mw& mw) {
    mw.rkey = keys_.allocate();
    mw_by_rkey_[mw.rkey] = &mw;
}

bool Nic::rekey_mw(Mw& mw, uint32_t rkey) {
    if (!keys_.claim(rkey)) return false;
    mw_by_rkey_.erase(mw.rkey);
    keys_.release(mw.rkey);
    mw.rkey = rkey;
    mw_by_rkey_[rkey] = &mw;
    return true;
}

void Nic::unregister_mw(Mw& mw) {
    mw_by_rkey_.erase(mw.rkey);
    keys_.release(mw.rkey);
}

Mw* Nic::mw_by_rkey(uint32_t rkey) const {
    auto it = mw_by_rkey_.find(rkey);
    return it == mw_by_rkey_.end() ? nullptr : it->second;
}

Mr* Nic::mr_by_rkey(uint32_t rkey) const {
    auto it = by_rkey_.find(rkey);
    return it == by_rkey_.end() ? nullptr : it->second;
}

Mr* Nic::mr_by_lkey(uint32_t lkey) const {
    auto it = by_lkey_.find(lkey);
    return it == by_lkey_.end() ? nullptr : it->second;
}

uint32_t Nic::register_qp(Qp& qp) {
    if (by_qpn_.size() >= kQpnMask - kFirstQpn) return 0;
    while (by_qpn_.count(next_qpn_))
        next_qpn_ = next_qpn_ >= kQpnMask ? kFirstQpn : next_qpn_ + 1;
    qp.qpn = next_qpn_;
    by_qpn_[qp.qpn] = &qp;
    next_qpn_ = next_qpn_ >= kQpnMask ? kFirstQpn : next_qpn_ + 1;
    return qp.qpn;
}

void Nic::unregister_qp(const Qp& qp) {
    by_qpn_.erase(qp.qpn);
}

Qp* Nic::qp_by_qpn(uint32_t qpn) const {
    auto it = by_qpn_.find(qpn);
    return it == by_qpn_.end() ? nullptr : it->second;
}

void Nic::add_flow(Flow& flow) {
    auto at = std::upper_bound(flows_.begin(), flows_.end(), flow.priority,
                               [](uint16_t p, const Flow* f) { return p < f->priority; });
    flows_.insert(at, &flow);
}

void Nic::remove_flow(const Flow& flow) {
    flows_.erase(std::remove(flows_.begin(), flows_.end(), &flow), flows_.end());
}

} // namespace nicsim
