// Multicast groups for UD QPs. Not emulated yet: attaching fails with EOPNOTSUPP.
#include "emulated_verbs.h"
#include "export.h"

#include <cerrno>
#include <infiniband/verbs.h>

int verbs::emulated::ibv_attach_mcast(ibv_qp*, const ibv_gid*, uint16_t) {
    return EOPNOTSUPP;
}
int verbs::emulated::ibv_detach_mcast(ibv_qp*, const ibv_gid*, uint16_t) {
    return EOPNOTSUPP;
}
