// The sysfs readers rdma-core exports: ibv_get_sysfs_path and ibv_read_sysfs_file (public, used
// by ibv_devinfo and old providers) and ibv_read_ibdev_sysfs_file (IBVERBS_PRIVATE_34, used by
// providers). Our devices have no sysfs entries, so for them these simply fail; they still read
// real files the way rdma-core does for any caller that asks.

#include "export.h"

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/types.h>
#include <unistd.h>

namespace rdma_core {

// The leading fields of driver.h's struct verbs_sysfs_dev (stable across rdma-core releases);
// more follow in the real struct. Only ibdev_name is read here.
struct verbs_sysfs_dev {
    void* entry[2]; // struct list_node
    void* provider_data;
    const void* match;
    unsigned int flags;
    char sysfs_name[IBV_SYSFS_NAME_MAX];
    dev_t sysfs_cdev;
    char ibdev_name[IBV_SYSFS_NAME_MAX];
    char ibdev_path[IBV_SYSFS_PATH_MAX];
};
static_assert(offsetof(verbs_sysfs_dev, ibdev_name) == 112, "rdma-core 44 layout on LP64");

} // namespace rdma_core

// "/sys", or $SYSFS_PATH without trailing slashes. Read once; ignored in setuid/setgid programs.
VERBS_EXPORT const char* ibv_get_sysfs_path(void) {
    static const char* const path = [] {
        static char buf[IBV_SYSFS_PATH_MAX + 1];
        const char* env = secure_getenv("SYSFS_PATH");
        if (!env) return "/sys";
        size_t len = strnlen(env, IBV_SYSFS_PATH_MAX);
        while (len > 0 && env[len - 1] == '/')
            --len;
        std::memcpy(buf, env, len);
        buf[len] = '\0';
        return static_cast<const char*>(buf);
    }();
    return path;
}

// Reads dir/file (one read(), as sysfs attributes come whole) into buf and NUL-terminates it,
// dropping one trailing newline. Returns the length of the string, or -1 with errno set; also -1
// when the contents fill buf with no room left for the terminator.
VERBS_EXPORT int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size) {
    std::string path = std::string(dir) + '/' + file;
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t len = read(fd, buf, size);
    int saved_errno = errno;
    close(fd);
    errno = saved_errno;
    if (len <= 0) return static_cast<int>(len);

    size_t n = static_cast<size_t>(len);
    if (buf[n - 1] == '\n') {
        buf[--n] = '\0';
    } else if (n < size) {
        buf[n] = '\0';
    } else {
        errno = EOVERFLOW;
        return -1;
    }
    return static_cast<int>(n);
}

// Reads <sysfs>/class/infiniband/<ibdev name>/<fnfmt...> for a provider.
VERBS_EXPORT __attribute__((format(printf, 4, 5))) int
ibv_read_ibdev_sysfs_file(char* buf, size_t size, rdma_core::verbs_sysfs_dev* sysfs_dev,
                          const char* fnfmt, ...) {
    if (!sysfs_dev) {
        errno = EINVAL;
        return -1;
    }
    char* file = nullptr;
    va_list ap;
    va_start(ap, fnfmt);
    int formatted = vasprintf(&file, fnfmt, ap);
    va_end(ap);
    if (formatted < 0) return -1;

    char name[IBV_SYSFS_NAME_MAX + 1] = {};
    std::memcpy(name, sysfs_dev->ibdev_name, sizeof sysfs_dev->ibdev_name);
    std::string dir = std::string(ibv_get_sysfs_path()) + "/class/infiniband/" + name;
    int res = ibv_read_sysfs_file(dir.c_str(), file, buf, size);
    int saved_errno = errno;
    std::free(file);
    errno = saved_errno;
    return res;
}
