#include "emu/access_flags.h"

#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <cerrno>

using emu::check_mr_access;
using emu::check_qp_access;
using emu::supported_mr_access;

TEST_CASE("mr access: the supported set is the rdma-core 44 flags below the optional range",
          "[access]") {
    // LOCAL_WRITE..HUGETLB are bits 0..7 in rdma-core 44 and in the kernel's
    // IB_ACCESS_SUPPORTED; nothing from the optional range (bits 20..29) is promised.
    CHECK(supported_mr_access() == 0xFFu);
    CHECK((supported_mr_access() & IBV_ACCESS_RELAXED_ORDERING) == 0);
}

TEST_CASE("mr access: what ordinary applications register is accepted", "[access]") {
    CHECK(check_mr_access(0) == 0); // Local read only: always allowed.
    CHECK(check_mr_access(IBV_ACCESS_LOCAL_WRITE) == 0);
    CHECK(check_mr_access(IBV_ACCESS_REMOTE_READ) == 0); // Remote read needs no local write.
    CHECK(check_mr_access(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) == 0);
    CHECK(check_mr_access(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC) == 0);
    CHECK(check_mr_access(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                          IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC) == 0);
    CHECK(check_mr_access(0xFF) == 0); // Every defined non-optional flag at once.
}

TEST_CASE("mr access: remote write or remote atomic without local write is EINVAL", "[access]") {
    CHECK(check_mr_access(IBV_ACCESS_REMOTE_WRITE) == EINVAL);
    CHECK(check_mr_access(IBV_ACCESS_REMOTE_ATOMIC) == EINVAL);
    CHECK(check_mr_access(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ) == EINVAL);
    CHECK(check_mr_access(IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_REMOTE_READ) == EINVAL);
    CHECK(check_mr_access(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC |
                          IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND) == EINVAL);
    // Optional bits do not lift the rule.
    CHECK(check_mr_access(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_RELAXED_ORDERING) == EINVAL);
}

TEST_CASE("mr access: MW bind alone needs no local write", "[access]") {
    // ib_check_mr_access does not include MW_BIND in the local-write rule; IBA C10-74 is
    // checked when a writable window is bound, not at registration.
    CHECK(check_mr_access(IBV_ACCESS_MW_BIND) == 0);
    CHECK(check_mr_access(IBV_ACCESS_MW_BIND | IBV_ACCESS_REMOTE_READ) == 0);
}

TEST_CASE("mr access: hint flags are accepted", "[access]") {
    CHECK(check_mr_access(IBV_ACCESS_ZERO_BASED) == 0);
    CHECK(check_mr_access(IBV_ACCESS_HUGETLB | IBV_ACCESS_LOCAL_WRITE) == 0);
    CHECK(check_mr_access(IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE) == 0);
}

TEST_CASE("mr access: optional-range flags are never an error", "[access]") {
    CHECK(check_mr_access(IBV_ACCESS_RELAXED_ORDERING) == 0);
    CHECK(check_mr_access(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                          IBV_ACCESS_RELAXED_ORDERING) == 0);
    for (int bit = 20; bit <= 29; ++bit) {
        INFO("bit " << bit);
        CHECK(check_mr_access(1u << bit) == 0);
    }
}

TEST_CASE("mr access: unknown bits are EINVAL", "[access]") {
    // Bits 8..19 (bits 8 and 9 are the kernel 6.2 FLUSH flags, unknown to rdma-core 44) and
    // 30..31 are outside both the defined flags and the optional range.
    for (int bit = 8; bit <= 19; ++bit) {
        INFO("bit " << bit);
        CHECK(check_mr_access(1u << bit) == EINVAL);
        CHECK(check_mr_access(IBV_ACCESS_LOCAL_WRITE | (1u << bit)) == EINVAL);
    }
    CHECK(check_mr_access(1u << 30) == EINVAL);
    CHECK(check_mr_access(1u << 31) == EINVAL);
    CHECK(check_mr_access(0xFFFFFFFF) == EINVAL);
}

TEST_CASE("qp access: any value is accepted, as the kernel does", "[access]") {
    CHECK(check_qp_access(0) == 0);
    CHECK(check_qp_access(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                          IBV_ACCESS_REMOTE_ATOMIC) == 0);
    // LOCAL_WRITE in qp_access_flags is common in application code and works on rxe/mlx5.
    CHECK(check_qp_access(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                          IBV_ACCESS_REMOTE_READ) == 0);
    // Unlike an MR, a QP may allow remote write without local write.
    CHECK(check_qp_access(IBV_ACCESS_REMOTE_WRITE) == 0);
    CHECK(check_qp_access(IBV_ACCESS_REMOTE_ATOMIC) == 0);
    CHECK(check_qp_access(IBV_ACCESS_MW_BIND) == 0);
    CHECK(check_qp_access(0xFFFFFFFF) == 0);
}
