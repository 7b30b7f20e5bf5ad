// A counter set defined once: a list macro names each counter, X(name) /* what it counts */, and
// NICSIM_COUNTER_SET(list) makes from it the struct's fields and a for_each over them in the
// list's order, from which status writes its JSON (the list's order is the JSON's).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#define NICSIM_COUNTER_FIELD(name) uint64_t name = 0;
#define NICSIM_COUNTER_VISIT(name) f(#name, name);
#define NICSIM_COUNTER_SET(list)                                                                   \
    list(NICSIM_COUNTER_FIELD) template <typename F> void for_each(F&& f) const {                  \
        list(NICSIM_COUNTER_VISIT)                                                                 \
    }

namespace nicsim {

// Adds `"<prefix><name>": value` to the JSON object `out` (support/json.h) for each counter of
// `c`, in the list's order.
template <typename Object, typename Counters>
void add_counters(Object& out, std::string_view prefix, const Counters& c) {
    c.for_each([&](const char* name, uint64_t value) {
        std::string key(prefix);
        key += name;
        out[key] = value;
    });
}

} // namespace nicsim
