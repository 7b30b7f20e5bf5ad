// Files and directories that only their owner reaches: a set of hosts' runtime directory and
// everything in it (sockets, logs, pid files), and packet captures.
//
// A directory may hold such files when it is not a symbolic link, belongs to our (effective)
// uid and is not writable by group or others. Then nobody but us (and root) can add, rename or
// replace a name in it, so an entry checked there stays what we checked. Files are created
// new (O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC) with an exact mode whatever the umask: nothing that
// exists is truncated or written through a link.
#pragma once

#include <optional>
#include <string>
#include <sys/types.h>
#include <unistd.h>
#include <utility>

namespace emu {

// Owns a file descriptor.
class OwnedFd {
  public:
    OwnedFd() = default;
    explicit OwnedFd(int fd) : fd_(fd) {}
    OwnedFd(OwnedFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    OwnedFd& operator=(OwnedFd&& o) noexcept {
        if (this != &o) reset(std::exchange(o.fd_, -1));
        return *this;
    }
    ~OwnedFd() { reset(); }
    int get() const { return fd_; }
    explicit operator bool() const { return fd_ >= 0; }
    int release() { return std::exchange(fd_, -1); }
    void reset(int fd = -1) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = fd;
    }

  private:
    int fd_ = -1;
};

// A descriptor, or why there is none: the path and the reason ("/x is a symbolic link (to /y)",
// "/x belongs to uid 65534, not to uid 0", "/x is writable by group or others (mode 0777)").
struct Opened {
    OwnedFd fd;
    std::string error;
};

// Opens the existing directory `path` and checks it (above); a symbolic link is refused.
Opened open_private_dir(const std::string& path);

// As open_private_dir, but makes `path` first when it is missing: its missing parents with mode
// 0700, `path` itself with exactly `mode`. An existing directory keeps its mode.
Opened make_private_dir(const std::string& path, mode_t mode);

// Creates `name` in the checked directory `dir` (`path` is its full name, for messages) as a new
// regular file with exactly `mode`, opened with `flags` (O_WRONLY, O_APPEND, ...) and
// O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC. A regular file of ours already there (left by an earlier
// run) is removed first; a symbolic link, another user's file or anything not a regular file is
// refused.
Opened create_private_file(int dir, const std::string& name, const std::string& path, int flags,
                           mode_t mode);
// The same for `path`, in its directory opened and checked by open_private_dir.
Opened create_private_file(const std::string& path, int flags, mode_t mode);

// Opens `name` in the checked directory `dir` for appending when it is a regular file of ours
// with no other link (a log made for us by rdmaemu up), and sets it to exactly `mode`; creates
// it as create_private_file does when it is missing. Anything else there is refused.
Opened append_private_file(int dir, const std::string& name, const std::string& path, mode_t mode);

// Why the directory open at `fd`, named `path`, may not hold private files, or nothing.
std::optional<std::string> refuse_dir(int fd, const std::string& path);

// The directory part of `path` ("." when it has none) and its last component.
std::pair<std::string, std::string> split_path(const std::string& path);

} // namespace emu
