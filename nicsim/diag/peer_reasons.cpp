#include "diag/peer_reasons.h"

#include "emu/private_files.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

namespace nicsim {

namespace {

constexpr uint32_t kMagic = 0x52454153; // "REAS"
constexpr size_t kMaxText = 480;

// One record as it travels: fixed fields, then `what_len` and `hint_len` bytes of text.
struct Record {
    uint32_t magic;
    uint8_t from_addr[16]; // the responder's address, as its GID
    uint32_t requester_qpn;
    uint32_t psn;
    uint32_t owner_uid;
    uint16_t what_len;
    uint16_t hint_len;
    char text[2 * kMaxText];
};

bool address_of(const std::string& path, sockaddr_un* addr) {
    *addr = {};
    addr->sun_family = AF_UNIX;
    if (path.size() >= sizeof addr->sun_path) return false;
    std::memcpy(addr->sun_path, path.c_str(), path.size() + 1);
    return true;
}

} // namespace

std::string PeerReasons::socket_path(const std::string& dir, const emu::wire::IpAddress& addr) {
    return dir + "/diag-" + addr.text() + ".sock";
}

PeerReasons::~PeerReasons() {
    if (fd_) ::unlink(socket_path(dir_, self_).c_str());
}

bool PeerReasons::open(const std::string& dir, const emu::wire::IpAddress& self,
                       std::string* error) {
    if (dir.empty()) return true;
    emu::Opened checked = emu::open_private_dir(dir);
    if (!checked.fd) {
        *error = "refusing the diagnostics directory: " + checked.error;
        return false;
    }
    std::string path = socket_path(dir, self);
    sockaddr_un addr;
    if (!address_of(path, &addr)) {
        *error = "socket path too long: " + path;
        return false;
    }
    auto [dir_path, name] = emu::split_path(path);
    struct stat st {};
    if (::fstatat(checked.fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        // What an earlier daemon of this address left; anything but a socket is not ours.
        if (!S_ISSOCK(st.st_mode) || ::unlinkat(checked.fd.get(), name.c_str(), 0) != 0) {
            *error = path + " exists and cannot be replaced";
            return false;
        }
    }
    UniqueFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    int on = 1;
    if (!fd || ::setsockopt(fd.get(), SOL_SOCKET, SO_PASSCRED, &on, sizeof on) != 0) {
        *error = std::string("socket: ") + std::strerror(errno);
        return false;
    }
    // bind() makes the file 0777 & ~umask: 0600, the set's owner's alone.
    const mode_t old_umask = ::umask(0177);
    int rc = ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::umask(old_umask);
    if (rc != 0) {
        *error = "cannot bind " + path + ": " + std::strerror(errno);
        return false;
    }
    fd_ = std::move(fd);
    dir_ = dir;
    self_ = self;
    return true;
}

void PeerReasons::tell(const emu::wire::IpAddress& peer_addr, const PeerReason& r) {
    if (!fd_) return;
    sockaddr_un to;
    if (!address_of(socket_path(dir_, peer_addr), &to)) return;
    Record rec{};
    rec.magic = kMagic;
    std::memcpy(rec.from_addr, self_.data(), sizeof rec.from_addr);
    rec.requester_qpn = r.requester_qpn;
    rec.psn = r.psn;
    rec.owner_uid = r.owner_uid;
    rec.what_len = static_cast<uint16_t>(std::min(r.what.size(), kMaxText));
    rec.hint_len = static_cast<uint16_t>(std::min(r.hint.size(), kMaxText));
    std::memcpy(rec.text, r.what.data(), rec.what_len);
    std::memcpy(rec.text + rec.what_len, r.hint.data(), rec.hint_len);
    size_t len = offsetof(Record, text) + rec.what_len + rec.hint_len;
    // Never blocks: a peer that reads nothing just misses the detail (its NAK still comes).
    [[maybe_unused]] ssize_t n = ::sendto(fd_.get(), &rec, len, MSG_DONTWAIT,
                                          reinterpret_cast<const sockaddr*>(&to), sizeof to);
}

void PeerReasons::drain() {
    for (;;) {
        Record rec;
        iovec iov{&rec, sizeof rec};
        alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
        msghdr m{};
        m.msg_iov = &iov;
        m.msg_iovlen = 1;
        m.msg_control = control;
        m.msg_controllen = sizeof control;
        ssize_t n = ::recvmsg(fd_.get(), &m, MSG_DONTWAIT);
        if (n < 0) return;
        const cmsghdr* c = CMSG_FIRSTHDR(&m);
        ucred cred{};
        if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS)
            std::memcpy(&cred, CMSG_DATA(c), sizeof cred);
        bool ours = c && cred.uid == ::geteuid();
        size_t head = offsetof(Record, text);
        if (!ours || size_t(n) < head || rec.magic != kMagic || rec.what_len > kMaxText ||
            rec.hint_len > kMaxText || size_t(n) != head + rec.what_len + rec.hint_len)
            continue;
        PeerReason r{rec.requester_qpn, rec.psn, rec.owner_uid, std::string(rec.text, rec.what_len),
                     std::string(rec.text + rec.what_len, rec.hint_len)};
        if (kept_.size() == kKept) kept_.pop_front();
        kept_.push_back({emu::wire::IpAddress::from_gid(rec.from_addr), std::move(r)});
    }
}

std::optional<PeerReason> PeerReasons::find(const emu::wire::IpAddress& peer_addr, uint32_t qpn,
                                            uint32_t psn) {
    if (!fd_) return std::nullopt;
    drain();
    for (auto it = kept_.begin(); it != kept_.end(); ++it)
        if (it->from == peer_addr && it->reason.requester_qpn == qpn && it->reason.psn == psn) {
            PeerReason r = std::move(it->reason);
            kept_.erase(it);
            return r;
        }
    return std::nullopt;
}

} // namespace nicsim
