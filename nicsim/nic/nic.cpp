#include "nic/nic.h"

#include "nic/device_limits.h"

#include "emu/wire/multicast.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <random>
#include <sys/random.h>

namespace nicsim {

namespace {
constexpr uint32_t kQpnMask = 0xffffff;
// Every 24-bit value but 0 and 1 (SMI, GSI) and the multicast QPN.
constexpr size_t kUsableQpns = kQpnMask + 1 - 3;

// A QPN from the kernel's CSPRNG: one QPN says nothing about the next.
uint32_t random_qpn() {
    for (;;) {
        uint32_t bits = 0;
        if (::getrandom(&bits, sizeof bits, 0) != sizeof bits) bits = std::random_device{}();
        uint32_t qpn = bits & kQpnMask;
        if (qpn > 1 && qpn != emu::wire::kMulticastQpn) return qpn;
    }
}
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
    mw.rkey = keys_.allocate_block();
    mw_by_index_[mw.rkey >> 8] = &mw;
}

void Nic::rekey_mw(Mw& mw, uint8_t key) {
    mw.rkey = (mw.rkey & 0xFFFFFF00u) | key; // the block is the window's: no other key is there
}

void Nic::unregister_mw(Mw& mw) {
    mw_by_index_.erase(mw.rkey >> 8);
    keys_.release_block(mw.rkey);
}

Mw* Nic::mw_by_index(uint32_t rkey) const {
    auto it = mw_by_index_.find(rkey >> 8);
    return it == mw_by_index_.end() ? nullptr : it->second;
}

Mw* Nic::mw_by_rkey(uint32_t rkey) const {
    Mw* mw = mw_by_index(rkey);
    return mw && mw->rkey == rkey ? mw : nullptr;
}

Mr* Nic::mr_by_rkey(uint32_t rkey) const {
    auto it = by_rkey_.find(rkey);
    return it == by_rkey_.end() ? nullptr : it->second;
}

void Nic::for_each_mr(const std::function<void(const Mr&)>& fn) const {
    for (const auto& [rkey, mr] : by_rkey_)
        fn(*mr);
}

void Nic::for_each_mw(const std::function<void(const Mw&)>& fn) const {
    for (const auto& [index, mw] : mw_by_index_)
        fn(*mw);
}

Mr* Nic::mr_by_lkey(uint32_t lkey) const {
    auto it = by_lkey_.find(lkey);
    return it == by_lkey_.end() ? nullptr : it->second;
}

uint32_t Nic::register_qp(Qp& qp) {
    // Far below a full space (the device allows limits::kMaxQp), a draw collides with a live
    // QPN rarely: drawing again keeps lookups a plain hash table and QPNs unpredictable.
    if (by_qpn_.size() >= kUsableQpns) return 0;
    uint32_t qpn = random_qpn();
    while (by_qpn_.count(qpn))
        qpn = random_qpn();
    qp.qpn = qpn;
    by_qpn_[qpn] = &qp;
    return qpn;
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

uint32_t Nic::register_srq(Srq& srq) {
    if (by_srqn_.size() >= kQpnMask - 1) return 0;
    while (by_srqn_.count(next_srqn_))
        next_srqn_ = next_srqn_ >= kQpnMask ? 1 : next_srqn_ + 1;
    srq.srqn = next_srqn_;
    by_srqn_[srq.srqn] = &srq;
    next_srqn_ = next_srqn_ >= kQpnMask ? 1 : next_srqn_ + 1;
    return srq.srqn;
}

void Nic::unregister_srq(const Srq& srq) {
    by_srqn_.erase(srq.srqn);
}

Srq* Nic::srq_by_number(uint32_t srqn) const {
    auto it = by_srqn_.find(srqn);
    return it == by_srqn_.end() ? nullptr : it->second;
}

int Nic::open_xrcd(const std::pair<uint64_t, uint64_t>* file, int oflags, Xrcd** out) {
    // As the kernel's ib_uverbs_open_xrcd.
    if (file) {
        auto it = xrcd_by_file_.find(*file);
        if (it != xrcd_by_file_.end()) {
            if (oflags & O_EXCL) return EINVAL;
            ++it->second->opens;
            *out = it->second;
            return 0;
        }
        if (!(oflags & O_CREAT)) return EAGAIN;
    }
    auto x = std::make_unique<Xrcd>();
    x->id = next_xrcd_id_++;
    x->opens = 1;
    if (file) {
        x->by_file = true;
        x->dev = file->first;
        x->ino = file->second;
        xrcd_by_file_[*file] = x.get();
    }
    *out = x.get();
    xrcds_[x->id] = std::move(x);
    return 0;
}

void Nic::close_xrcd(Xrcd& xrcd) {
    if (--xrcd.opens) return;
    if (xrcd.by_file) xrcd_by_file_.erase({xrcd.dev, xrcd.ino});
    xrcds_.erase(xrcd.id);
}

void Nic::keep_orphan(std::unique_ptr<Qp> qp) {
    uint32_t qpn = qp->qpn;
    orphans_[qpn] = std::move(qp);
}

void Nic::drop_orphan(const Qp& qp) {
    orphans_.erase(qp.qpn);
}

int Nic::mcast_attach(Qp& qp, const Mgid& mgid) {
    if (std::find(qp.mcast.begin(), qp.mcast.end(), mgid) != qp.mcast.end()) return 0;
    auto it = groups_.find(mgid);
    if (it == groups_.end() && groups_.size() >= limits::kMaxMcastGrp) return ENOMEM;
    if (it != groups_.end() && it->second.size() >= limits::kMaxMcastQpAttach) return ENOMEM;
    if (mcast_attachments_ >= limits::kMaxTotalMcastQpAttach) return ENOMEM;
    if (it == groups_.end()) it = groups_.emplace(mgid, std::vector<uint32_t>{}).first;
    it->second.push_back(qp.qpn);
    qp.mcast.push_back(mgid);
    ++mcast_attachments_;
    return 0;
}

int Nic::mcast_detach(Qp& qp, const Mgid& mgid) {
    auto mine = std::find(qp.mcast.begin(), qp.mcast.end(), mgid);
    if (mine == qp.mcast.end()) return EINVAL;
    qp.mcast.erase(mine);
    auto it = groups_.find(mgid);
    if (it != groups_.end()) {
        std::erase(it->second, qp.qpn);
        if (it->second.empty()) groups_.erase(it);
    }
    --mcast_attachments_;
    return 0;
}

void Nic::mcast_detach_all(Qp& qp) {
    while (!qp.mcast.empty())
        mcast_detach(qp, qp.mcast.back());
}

const std::vector<uint32_t>* Nic::mcast_members(const uint8_t* mgid) const {
    Mgid key;
    std::memcpy(key.data(), mgid, key.size());
    auto it = groups_.find(key);
    return it == groups_.end() ? nullptr : &it->second;
}

} // namespace nicsim
