#include "support/log_rate_limit.h"

#include <utility>

namespace nicsim {

bool LogRateLimit::allow(const char* what, std::string& suffix) {
    auto now = std::chrono::steady_clock::now();
    if (now - window_ >= std::chrono::seconds(1)) {
        window_ = now;
        lines_ = 0;
    }
    if (lines_ == per_second_) {
        ++left_out_;
        return false;
    }
    ++lines_;
    suffix = left_out_ ? "; " + std::to_string(std::exchange(left_out_, 0)) + " more " + what +
                             ", not logged"
                       : "";
    return true;
}

} // namespace nicsim
