// Everything one control session owns. Freed in dependency order when the session ends, for
// whatever reason (exit, crash, kill -9), through the same paths as the destroy verbs.
#pragma once

#include "handle_table.h"
#include "objects.h"

#include <string>

namespace nicsim {

class Nic;

struct SessionObjects {
    HandleTable<Pd> pds;
    HandleTable<Mr> mrs;
    HandleTable<CompChannel> channels;
    HandleTable<Cq> cqs;
    HandleTable<Srq> srqs;
    HandleTable<Qp> qps;
    HandleTable<Ah> ahs;

    size_t count() const {
        return pds.size() + mrs.size() + channels.size() + cqs.size() + srqs.size() + qps.size() +
               ahs.size();
    }
    // Object counts as JSON: {"pd":1,"mr":2,...}
    std::string counts_json() const;
    void destroy_all(Nic& nic);
};

} // namespace nicsim
