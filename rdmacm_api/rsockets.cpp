// rsockets (<rdma/rsocket.h>), the socket API over RDMA: not offered yet. Every call fails with
// ENOSYS, and the first one says so on stderr, so that a program (or librspreload.so) learns it
// at once rather than from a hang.
#include "cm_objects.h"
#include "export.h"

#include <rdma/rsocket.h>

#include <cstdio>
#include <mutex>

namespace {

template <typename T = int> T not_offered(const char* call) {
    static std::once_flag said;
    std::call_once(said, [call] {
        std::fprintf(stderr, "librdmacm (rdmaemu): rsockets are not implemented yet (%s: %s)\n",
                     call, "Function not implemented");
    });
    errno = ENOSYS;
    return static_cast<T>(-1);
}

} // namespace

RDMACM_EXPORT int rsocket(int, int, int) {
    return not_offered("rsocket");
}
RDMACM_EXPORT int rbind(int, const sockaddr*, socklen_t) {
    return not_offered("rbind");
}
RDMACM_EXPORT int rlisten(int, int) {
    return not_offered("rlisten");
}
RDMACM_EXPORT int raccept(int, sockaddr*, socklen_t*) {
    return not_offered("raccept");
}
RDMACM_EXPORT int rconnect(int, const sockaddr*, socklen_t) {
    return not_offered("rconnect");
}
RDMACM_EXPORT int rshutdown(int, int) {
    return not_offered("rshutdown");
}
RDMACM_EXPORT int rclose(int) {
    return not_offered("rclose");
}
RDMACM_EXPORT ssize_t rrecv(int, void*, size_t, int) {
    return not_offered<ssize_t>("rrecv");
}
RDMACM_EXPORT ssize_t rrecvfrom(int, void*, size_t, int, sockaddr*, socklen_t*) {
    return not_offered<ssize_t>("rrecvfrom");
}
RDMACM_EXPORT ssize_t rrecvmsg(int, msghdr*, int) {
    return not_offered<ssize_t>("rrecvmsg");
}
RDMACM_EXPORT ssize_t rsend(int, const void*, size_t, int) {
    return not_offered<ssize_t>("rsend");
}
RDMACM_EXPORT ssize_t rsendto(int, const void*, size_t, int, const sockaddr*, socklen_t) {
    return not_offered<ssize_t>("rsendto");
}
RDMACM_EXPORT ssize_t rsendmsg(int, const msghdr*, int) {
    return not_offered<ssize_t>("rsendmsg");
}
RDMACM_EXPORT ssize_t rread(int, void*, size_t) {
    return not_offered<ssize_t>("rread");
}
RDMACM_EXPORT ssize_t rreadv(int, const iovec*, int) {
    return not_offered<ssize_t>("rreadv");
}
RDMACM_EXPORT ssize_t rwrite(int, const void*, size_t) {
    return not_offered<ssize_t>("rwrite");
}
RDMACM_EXPORT ssize_t rwritev(int, const iovec*, int) {
    return not_offered<ssize_t>("rwritev");
}
RDMACM_EXPORT int rpoll(pollfd*, nfds_t, int) {
    return not_offered("rpoll");
}
RDMACM_EXPORT int rselect(int, fd_set*, fd_set*, fd_set*, timeval*) {
    return not_offered("rselect");
}
RDMACM_EXPORT int rgetpeername(int, sockaddr*, socklen_t*) {
    return not_offered("rgetpeername");
}
RDMACM_EXPORT int rgetsockname(int, sockaddr*, socklen_t*) {
    return not_offered("rgetsockname");
}
RDMACM_EXPORT int rsetsockopt(int, int, int, const void*, socklen_t) {
    return not_offered("rsetsockopt");
}
RDMACM_EXPORT int rgetsockopt(int, int, int, void*, socklen_t*) {
    return not_offered("rgetsockopt");
}
RDMACM_EXPORT int rfcntl(int, int, ...) {
    return not_offered("rfcntl");
}
RDMACM_EXPORT off_t riomap(int, void*, size_t, int, int, off_t) {
    return not_offered<off_t>("riomap");
}
RDMACM_EXPORT int riounmap(int, void*, size_t) {
    return not_offered("riounmap");
}
RDMACM_EXPORT size_t riowrite(int, const void*, size_t, off_t, int) {
    return not_offered<size_t>("riowrite");
}
