#include "cm_counters.h"

namespace nicsim::cm {

std::string counters_json(const CmCounters& c) {
    std::string out;
#define NICSIM_CM_JSON(name)                                                                       \
    out += std::string(out.empty() ? "" : ",") + "\"cm_" #name "\":" + std::to_string(c.name);
    NICSIM_CM_COUNTERS(NICSIM_CM_JSON)
#undef NICSIM_CM_JSON
    return out;
}

} // namespace nicsim::cm
