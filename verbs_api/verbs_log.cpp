// __verbs_log: where providers (libmlx5, librxe, ...) write their errors and warnings
// (verbs_err, verbs_warn). As rdma-core: messages up to VERBS_LOG_LEVEL (0 none, 1 errors,
// 2 warnings, 3 info, 4 debug) go to the file VERBS_LOG_FILE names, appended; without the file
// nothing is written (rdma-core's release build). Varargs cannot be forwarded to the real
// library, so the log is kept here, for both backends and for the library's own messages
// (verbs_log.h).
#include "verbs_log.h"

#include "export.h"

#include <infiniband/verbs.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace {

struct VerbsLog {
    unsigned long level = 0;
    FILE* file = nullptr;
};

const VerbsLog& verbs_log() {
    static VerbsLog log;
    static std::once_flag once;
    std::call_once(once, [] {
        const char* level = std::getenv("VERBS_LOG_LEVEL");
        const char* path = std::getenv("VERBS_LOG_FILE");
        if (!level || !path) return;
        log.level = std::strtoul(level, nullptr, 0);
        if (log.level) log.file = std::fopen(path, "ae");
    });
    return log;
}

void write_log(uint32_t level, const char* format, va_list args) {
    const VerbsLog& log = verbs_log();
    if (!log.file || level > log.level) return;
    std::vfprintf(log.file, format, args);
    std::fflush(log.file);
}

} // namespace

VERBS_EXPORT void __verbs_log(verbs_context*, uint32_t level, const char* format, ...) {
    va_list args;
    va_start(args, format);
    write_log(level, format, args);
    va_end(args);
}

namespace verbs {

void log(LogLevel level, const char* format, ...) {
    va_list args;
    va_start(args, format);
    write_log(static_cast<uint32_t>(level), format, args);
    va_end(args);
}

} // namespace verbs
