// Who may open a control session: the daemon's own uid, root, and the uids a deliberately shared
// set names (--allow-uid). Checked once per connection with SO_PEERCRED, as the kernel checks a
// device file's permissions once, at open.
#pragma once

#include <string>
#include <sys/types.h>
#include <vector>

namespace nicsim {

class PeerUidPolicy {
  public:
    PeerUidPolicy(uid_t own, std::vector<uid_t> also_allowed);

    bool allows(uid_t uid) const;
    // "uid 0 (root), 1000 (ours)" and any --allow-uid ones, for the refusal message.
    std::string describe() const;

  private:
    uid_t own_;
    std::vector<uid_t> also_allowed_;
};

} // namespace nicsim
