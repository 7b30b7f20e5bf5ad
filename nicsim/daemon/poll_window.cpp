#include "daemon/poll_window.h"

#include <algorithm>

namespace nicsim {

bool PollWindow::yielded(uint64_t before_us, uint64_t after_us) {
    // While suspended the loop still yields when the engine is busy: not polling, nothing to
    // learn, and the suspension must neither shorten nor lose its length.
    if (!guarded_ || before_us < resume_us_ || after_us - before_us < kCostlyYieldUs) return false;
    if (!last_costly_us_ || after_us - last_costly_us_ >= kCostlyPairUs) {
        last_costly_us_ = after_us;
        return false;
    }
    last_costly_us_ = 0;
    // Polling lasted less than the suspension before it: the same app, most likely.
    const bool soon = resume_us_ && after_us - resume_us_ < suspend_us_;
    suspend_us_ = soon ? std::min(2 * suspend_us_, kMaxSuspendUs) : kSuspendUs;
    resume_us_ = after_us + suspend_us_;
    return true;
}

} // namespace nicsim
