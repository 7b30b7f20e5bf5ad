// A list of user ids on a command line ("1000,1001"): the users besides the daemon's own and
// root that a deliberately shared set of hosts lets in (rdmaemu up --allow-uid, nicsimd's own).
#pragma once

#include <optional>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace emu {

// The uids of "UID[,UID...]", or nothing when a member is not a whole number below 2^32-1
// ((uid_t)-1 is no user) or the list is empty.
std::optional<std::vector<uid_t>> parse_uid_list(std::string_view text);

} // namespace emu
