#include "control/peer_uid_policy.h"

#include <algorithm>

namespace nicsim {

PeerUidPolicy::PeerUidPolicy(uid_t own, std::vector<uid_t> also_allowed)
    : own_(own), also_allowed_(std::move(also_allowed)) {}

bool PeerUidPolicy::allows(uid_t uid) const {
    return uid == 0 || uid == own_ ||
           std::find(also_allowed_.begin(), also_allowed_.end(), uid) != also_allowed_.end();
}

std::string PeerUidPolicy::describe() const {
    std::string out = "uid 0 (root)";
    if (own_ != 0) out += ", " + std::to_string(own_) + " (the daemon's)";
    for (uid_t uid : also_allowed_)
        out += ", " + std::to_string(uid);
    return out;
}

} // namespace nicsim
