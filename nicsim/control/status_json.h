// The host's status document for `rdmaemu status`.
#pragma once

#include "net/link_counters.h"
#include "nic/nic.h"

#include <string>
#include <vector>

namespace nicsim {

class Session;

std::string host_status_json(const Nic& nic, const std::vector<const Session*>& sessions);
// The host's counters object (status's "counters"): the link's, the raw frames' (raw_*), the
// multicast ones (mcast_*), the host's drops, under the names the QPs' drops have, then the poll
// loop's.
Json host_counters_json(const LinkCounters& link, const RawCounters& raw,
                        const McastCounters& mcast, const DropCounters& drops,
                        const PollCounters& poll);

} // namespace nicsim
