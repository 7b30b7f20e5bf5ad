#include "json.h"

namespace rdmaemu {

std::string value_text(const Json& value, std::string_view fallback) {
    if (value.is_string()) return value.get<std::string>();
    if (value.is_number() || value.is_boolean()) return value.dump();
    return std::string(fallback);
}

const Json* member(const Json& doc, std::string_view key) {
    if (!doc.is_object()) return nullptr;
    auto it = doc.find(key);
    return it == doc.end() ? nullptr : &*it;
}

std::string member_text(const Json& doc, std::string_view key, std::string_view fallback) {
    const Json* value = member(doc, key);
    return value ? value_text(*value, fallback) : std::string(fallback);
}

} // namespace rdmaemu
