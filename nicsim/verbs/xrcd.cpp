// XRC domains (ibv_open_xrcd, ibv_close_xrcd). A domain named by a file is shared by every
// session of this device that opens the same file, as the kernel's inode table does.
#include "verbs.h"

#include <cerrno>
#include <string>
#include <sys/stat.h>

namespace nicsim {

namespace {

// The file behind the client's descriptor, found by the NIC itself: a client can name only a
// file it has open. (The NIC may read the client's /proc entries: it already reaches its
// memory.)
int file_of(pid_t pid, int fd, std::pair<uint64_t, uint64_t>* id) {
    if (fd < 0) return EBADF;
    std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return EBADF;
    *id = {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
    return 0;
}

} // namespace

int open_xrcd(VerbContext& c, const ipc::OpenXrcdReq& q, ipc::HandleReply& r) {
    // fd -1: a domain of this handle's own (the kernel makes a new one each time).
    std::pair<uint64_t, uint64_t> file{};
    if (q.fd != -1)
        if (int err = file_of(c.pid, q.fd, &file)) return err;
    Xrcd* xrcd = nullptr;
    if (int err = c.nic.open_xrcd(q.fd == -1 ? nullptr : &file, q.oflags, &xrcd)) return err;
    auto handle = std::make_unique<XrcdHandle>();
    handle->xrcd = xrcd;
    XrcdHandle& made = c.objects.xrcds.add(std::move(handle));
    r.handle = made.handle;
    c.log.debug("{} xrcd#{} opened: domain {}{} ({} handles)", c.prefix, made.handle, xrcd->id,
                xrcd->by_file ? fmt::format(" of inode {}", xrcd->ino) : "", xrcd->opens);
    return 0;
}

void free_xrcd(Nic& nic, SessionObjects& objs, XrcdHandle& x) {
    nic.close_xrcd(*x.xrcd);
    objs.xrcds.erase(x.handle);
}

int close_xrcd(VerbContext& c, const ipc::HandleReq& q, ipc::Empty&) {
    static constexpr DestroyRule<XrcdHandle> rule{"XRCD", &XrcdHandle::users,
                                                  "XRC SRQ(s) or QP(s) made through this handle",
                                                  "xrcd", "closed"};
    return destroy_unheld(c, c.objects.xrcds, q.handle, rule,
                          [&](XrcdHandle& x) { free_xrcd(c.nic, c.objects, x); });
}

} // namespace nicsim
