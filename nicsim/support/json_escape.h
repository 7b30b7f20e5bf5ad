// A string as the inside of a JSON string literal: quotes, backslashes and control characters
// escaped (RFC 8259 section 7).
#pragma once

#include <string>

namespace nicsim {

std::string json_escape(const std::string& s);

} // namespace nicsim
