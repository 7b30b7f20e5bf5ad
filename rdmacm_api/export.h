// Marks a function as part of librdmacm.so.1's exported ABI. The library is built with
// -fvisibility=hidden; exports.map then decides the version node of each visible name.
#pragma once

#define RDMACM_EXPORT extern "C" __attribute__((visibility("default")))
