// Importing: a context made by ibv_import_device shares its session with the context whose
// command fd it duplicated, and looks up that session's objects by handle.
#include "verbs.h"

#include <cerrno>
#include <fcntl.h>

namespace nicsim {

int import_object(VerbContext& c, const ipc::ImportObjectReq& q, ipc::ImportObjectReply& r) {
    // The kernel's object lookup answers ENOENT for a handle its file does not hold.
    switch (static_cast<ipc::ImportType>(q.type)) {
    case ipc::ImportType::Pd:
        return c.objects.pds.get(q.handle) ? 0 : ENOENT;
    case ipc::ImportType::Mr: {
        const Mr* mr = c.objects.mrs.get(q.handle);
        if (!mr) return ENOENT;
        r.length = mr->length;
        r.lkey = mr->lkey;
        r.rkey = mr->rkey;
        r.access = mr->access;
        return 0;
    }
    case ipc::ImportType::Dm: {
        const Dm* dm = c.objects.dms.get(q.handle);
        if (!dm) return ENOENT;
        UniqueFd fd(::fcntl(dm->memfd.get(), F_DUPFD_CLOEXEC, 0));
        if (!fd) return errno;
        r.length = dm->length;
        r.map_bytes = dm->memory.size();
        c.pass_fds.push_back(std::move(fd));
        return 0;
    }
    }
    return EINVAL;
}

} // namespace nicsim
