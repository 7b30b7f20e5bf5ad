// printf-style formatting appended to a string: the traces' one helper (a line's fields are short;
// a field is cut at 159 characters).
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>

namespace emu {

template <typename... Args> void appendf(std::string& out, const char* fmt, Args... args) {
    char buf[160];
    int n = std::snprintf(buf, sizeof buf, fmt, args...);
    if (n > 0) out.append(buf, std::min<size_t>(size_t(n), sizeof buf - 1));
}

} // namespace emu
