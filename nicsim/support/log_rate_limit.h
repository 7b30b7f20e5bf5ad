// A line that a peer can cause over and over (a refused connection, a refused create) must not
// flush the log away: this many lines a second at most; the next line says how many were left
// out.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace nicsim {

class LogRateLimit {
  public:
    explicit LogRateLimit(int lines_per_second) : per_second_(lines_per_second) {}

    // Whether to log now; when true, `suffix` is "" or "; N more <what>, not logged".
    bool allow(const char* what, std::string& suffix);

  private:
    int per_second_;
    std::chrono::steady_clock::time_point window_{};
    int lines_ = 0;
    uint64_t left_out_ = 0;
};

} // namespace nicsim
