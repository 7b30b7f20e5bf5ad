// The rig's own checks. In the protocol tests they are Catch2's; a program that drives the rig
// without a Catch session (the fuzz targets, built with PROTOCOL_RIG_ABORTS) aborts at a failed
// one instead, which the fuzzer reports as a crash with the failed condition.
#pragma once

#ifdef PROTOCOL_RIG_ABORTS
#include <cstdio>
#include <cstdlib>

namespace proto {
[[noreturn]] inline void rig_check_failed(const char* condition, const char* file, int line) {
    std::fprintf(stderr, "%s:%d: protocol rig check failed: %s\n", file, line, condition);
    std::abort();
}
} // namespace proto

#define RIG_REQUIRE(...)                                                                           \
    ((__VA_ARGS__) ? void(0) : ::proto::rig_check_failed(#__VA_ARGS__, __FILE__, __LINE__))
#define RIG_CHECK RIG_REQUIRE
#define RIG_INFO(...)                                                                              \
    do {                                                                                           \
    } while (false)
#else
#include <catch2/catch.hpp>
#define RIG_REQUIRE REQUIRE
#define RIG_CHECK CHECK
#define RIG_INFO INFO
#endif
