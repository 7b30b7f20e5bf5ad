// QPNs: random 24-bit values, so that a forged packet must guess one (sequential QPNs from 0x11
// let 64 packets reach every QP of a host), never the special QPNs, never two alike.
#include "protocol_rig.h"

#include <algorithm>
#include <set>

using namespace proto;

TEST_CASE("qpn: QPNs are random, unique and never 0, 1 or 0xFFFFFF", "[qpn]") {
    nicsim::Nic nic(rig_config(kRigAddress));
    std::vector<Qp> qps(4000);
    std::vector<uint32_t> qpns;
    qpns.reserve(qps.size());
    for (Qp& qp : qps)
        qpns.push_back(nic.register_qp(qp));
    std::set<uint32_t> unique(qpns.begin(), qpns.end());
    CHECK(unique.size() == qpns.size());
    for (uint32_t qpn : qpns) {
        CHECK(qpn <= 0xFFFFFF);
        CHECK(qpn > 1);
        CHECK(qpn != 0xFFFFFF);
    }
    // Spread over the whole space: about an eighth in each eighth of it.
    std::array<int, 8> eighths{};
    for (uint32_t qpn : qpns)
        ++eighths[qpn >> 21];
    for (int n : eighths)
        CHECK((n > 350 && n < 650));
    // Not a counter: consecutive QPNs are rarely neighbours.
    int neighbours = 0;
    for (size_t i = 1; i < qpns.size(); ++i)
        if (qpns[i] - qpns[i - 1] < 0x100) ++neighbours;
    CHECK(neighbours < 5);
    for (const Qp& qp : qps)
        CHECK(nic.qp_by_qpn(qp.qpn) == &qp);
}

TEST_CASE("qpn: a QP made through the verbs gets a random QPN its lookups find", "[qpn]") {
    Rig rig;
    Qp& a = rig.create_qp();
    Qp& b = rig.create_qp();
    CHECK(rig.nic.qp_by_qpn(a.qpn) == &a);
    CHECK(rig.nic.qp_by_qpn(b.qpn) == &b);
    CHECK(a.qpn != b.qpn);
    // Two sequential QPNs from a fresh NIC were 0x11 and 0x12.
    CHECK_FALSE((a.qpn == 0x11 && b.qpn == 0x12));
}
