// The library's own errors and warnings go where rdma-core's providers write theirs (verbs_err,
// verbs_warn): the verbs log of verbs_log.cpp, VERBS_LOG_FILE at VERBS_LOG_LEVEL. Nothing is
// written without both, and never on stderr unless VERBS_LOG_FILE names it.
#pragma once

#include <cstdint>

namespace verbs {

enum class LogLevel : uint32_t { Error = 1, Warning = 2, Info = 3, Debug = 4 };

__attribute__((format(printf, 2, 3))) void log(LogLevel level, const char* format, ...);

} // namespace verbs
