// verbs_log_check: calls __verbs_log (where providers write verbs_err/verbs_warn/verbs_debug)
// with one message per level 1..4: "level N: <text>", and prints which library served it. The
// script sets VERBS_LOG_LEVEL and VERBS_LOG_FILE and reads what arrived. Linked with the system
// -libverbs; the script puts ours in its place.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>

// The provider interface: not in any installed header.
void __verbs_log(void* ctx, uint32_t level, const char* format, ...);

int main(void) {
    __verbs_log(NULL, 1, "level %d: %s\n", 1, "error");
    __verbs_log(NULL, 2, "level %d: %s\n", 2, "warning");
    __verbs_log(NULL, 3, "level %d: %s\n", 3, "info");
    __verbs_log(NULL, 4, "level %d: %s\n", 4, "debug");
    Dl_info info;
    printf("logged by %s\n", dladdr((void*)__verbs_log, &info) ? info.dli_fname : "?");
    return 0;
}
