#include "diag/hw_counters.h"

namespace nicsim {

std::string HwCounters::json() const {
    std::string j = "{";
    for (size_t i = 0; i < values_.size(); ++i)
        j += (i ? ",\"" : "\"") + std::string(kHwCounterNames[i]) +
             "\":" + std::to_string(values_[i]);
    return j + "}";
}

} // namespace nicsim
