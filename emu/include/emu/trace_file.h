// The trace file (RDMAEMU_TRACE=FILE, "%p" in FILE becomes the pid) that libibverbs (the verbs
// trace) and librdmacm (the CM calls and events) both write: one file, one header, one clock and
// one call depth per thread in a process. Each library links its own hidden copy of this code
// and exports no new name; the first copy that traces makes the shared state and publishes it in
// a memfd mapping named "rdmaemu-trace", which the other copy finds in /proc/self/maps (a
// mapping, unlike an environment variable, is gone after exec). Without /proc or memfd each copy
// opens the file itself, O_APPEND, and the lines stay whole.
#pragma once

#include <string>

namespace emu::trace_file {

// Whether RDMAEMU_TRACE named a file that could be opened (the first call opens it).
bool enabled();
// One line "TIME TID KIND TEXT", written with one write(): lines of threads, processes and the
// two libraries stay whole. Keeps errno.
void write_line(const char* kind, const std::string& text);
// This thread's depth of traced calls, shared by the two libraries: a verb made inside a CM call
// is nested in it.
int& depth();

} // namespace emu::trace_file
