// ibv_register_driver@IBVERBS_1.1: how providers built for libibverbs before rdma-core announced
// themselves (from a constructor, with an init function taking the uverbs sysfs path). rdma-core
// keeps it only as a non-default symbol that does nothing; so do we. Today's providers use
// verbs_register_driver_34 (private_stubs.cpp).

#include "export.h"

struct ibv_device;

using ibv_driver_init_func = ibv_device* (*)(const char* uverbs_sys_path, int abi_version);

VERBS_EXPORT __attribute__((symver("ibv_register_driver@IBVERBS_1.1"))) void
rdmaemu_compat_ibv_register_driver_1_1(const char* /*name*/, ibv_driver_init_func) {}
