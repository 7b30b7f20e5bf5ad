#include "emu/private_files.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>

namespace emu {
namespace {

Opened failed(std::string why) {
    return {OwnedFd(), std::move(why)};
}

std::string errno_text(const std::string& path, int err) {
    return path + ": " + std::strerror(err);
}

std::string octal_mode(mode_t mode) {
    char text[8];
    std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
    return text;
}

std::string not_ours(const std::string& path, uid_t owner) {
    return path + " belongs to uid " + std::to_string(owner) + ", not to uid " +
           std::to_string(::geteuid());
}

// "PATH is a symbolic link (to TARGET)", for the link `name` in `dir`.
std::string symlink_text(int dir, const std::string& name, const std::string& path) {
    char target[4096];
    ssize_t n = ::readlinkat(dir, name.c_str(), target, sizeof target - 1);
    std::string to = n >= 0 ? std::string(target, static_cast<size_t>(n)) : "?";
    return path + " is a symbolic link (to " + to + ")";
}

// `path` without trailing slashes, which would make O_NOFOLLOW follow a final symlink.
std::string without_trailing_slash(std::string path) {
    while (path.size() > 1 && path.back() == '/')
        path.pop_back();
    return path;
}

// mkdir -p for the parents of `path`, each missing one made 0700.
void make_parents(const std::string& path) {
    for (size_t at = path.find('/', 1); at != std::string::npos; at = path.find('/', at + 1))
        ::mkdir(path.substr(0, at).c_str(), 0700); // EEXIST is fine; other errors show next
}

// Why the existing entry `name` in `dir` must not be removed to make room for a new file of
// ours; nothing when it is missing or was removed.
std::optional<std::string> clear_stale(int dir, const std::string& name, const std::string& path) {
    struct stat st {};
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? std::nullopt : std::optional(errno_text(path, errno));
    if (S_ISLNK(st.st_mode)) return symlink_text(dir, name, path) + "; not replacing it";
    if (!S_ISREG(st.st_mode)) return path + " exists and is not a regular file";
    if (st.st_uid != ::geteuid()) return not_ours(path, st.st_uid);
    if (::unlinkat(dir, name.c_str(), 0) != 0 && errno != ENOENT)
        return "cannot remove the old " + errno_text(path, errno);
    return std::nullopt;
}

} // namespace

std::optional<std::string> refuse_dir(int fd, const std::string& path) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return errno_text(path, errno);
    if (!S_ISDIR(st.st_mode)) return path + " is not a directory";
    if (st.st_uid != ::geteuid()) return not_ours(path, st.st_uid);
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return path + " is writable by group or others (mode " + octal_mode(st.st_mode) + ")";
    return std::nullopt;
}

std::pair<std::string, std::string> split_path(const std::string& path) {
    size_t slash = path.rfind('/');
    if (slash == std::string::npos) return {".", path};
    return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

Opened open_private_dir(const std::string& raw_path) {
    const std::string path = without_trailing_slash(raw_path);
    int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        struct stat st {};
        if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode))
            return failed(symlink_text(AT_FDCWD, path, path));
        if (err == ENOTDIR) return failed(path + " is not a directory");
        return failed(errno_text(path, err));
    }
    Opened dir{OwnedFd(fd), {}};
    if (auto why = refuse_dir(fd, path)) return failed(*why);
    return dir;
}

Opened make_private_dir(const std::string& raw_path, mode_t mode) {
    const std::string path = without_trailing_slash(raw_path);
    int rc = ::mkdir(path.c_str(), mode);
    if (rc != 0 && errno == ENOENT) {
        make_parents(path);
        rc = ::mkdir(path.c_str(), mode);
    }
    if (rc != 0 && errno != EEXIST) return failed("cannot create " + errno_text(path, errno));
    Opened dir = open_private_dir(path);
    // mkdir's mode passes through the umask; the directory we just made gets exactly `mode`.
    if (dir.fd && rc == 0 && ::fchmod(dir.fd.get(), mode) != 0)
        return failed("cannot set the mode of " + errno_text(path, errno));
    return dir;
}

Opened create_private_file(int dir, const std::string& name, const std::string& path, int flags,
                           mode_t mode) {
    if (auto why = clear_stale(dir, name, path)) return failed(*why);
    int fd = ::openat(dir, name.c_str(), flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0) return failed("cannot create " + errno_text(path, errno));
    Opened file{OwnedFd(fd), {}};
    if (::fchmod(fd, mode) != 0) return failed("cannot set the mode of " + errno_text(path, errno));
    return file;
}

Opened create_private_file(const std::string& path, int flags, mode_t mode) {
    auto [dir_path, name] = split_path(path);
    Opened dir = open_private_dir(dir_path);
    if (!dir.fd) return dir;
    return create_private_file(dir.fd.get(), name, path, flags, mode);
}

Opened append_private_file(int dir, const std::string& name, const std::string& path, mode_t mode) {
    struct stat st {};
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno != ENOENT) return failed(errno_text(path, errno));
        return create_private_file(dir, name, path, O_WRONLY | O_APPEND, mode);
    }
    if (S_ISLNK(st.st_mode)) return failed(symlink_text(dir, name, path));
    if (!S_ISREG(st.st_mode)) return failed(path + " exists and is not a regular file");
    if (st.st_uid != ::geteuid()) return failed(not_ours(path, st.st_uid));
    if (st.st_nlink != 1) return failed(path + " has other hard links");
    int fd = ::openat(dir, name.c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return failed(errno_text(path, errno));
    Opened file{OwnedFd(fd), {}};
    if (::fchmod(fd, mode) != 0) return failed("cannot set the mode of " + errno_text(path, errno));
    return file;
}

} // namespace emu
