// Multicast groups for UD QPs. Not emulated yet: attaching fails with EOPNOTSUPP.
#include "export.h"

#include <cerrno>
#include <infiniband/verbs.h>

VERBS_EXPORT int ibv_attach_mcast(ibv_qp*, const ibv_gid*, uint16_t) {
    return EOPNOTSUPP;
}
VERBS_EXPORT int ibv_detach_mcast(ibv_qp*, const ibv_gid*, uint16_t) {
    return EOPNOTSUPP;
}
