#include "diag/hw_counters.h"

#include <nlohmann/json.hpp>

namespace nicsim {

Json HwCounters::json() const {
    Json j = Json::object();
    for (size_t i = 0; i < values_.size(); ++i)
        j[kHwCounterNames[i]] = values_[i];
    return j;
}

} // namespace nicsim
