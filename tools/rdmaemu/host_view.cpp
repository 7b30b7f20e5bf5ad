#include "host_view.h"

#include "emu/ipc/control_client.h"
#include "emu/private_files.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <endian.h>
#include <fcntl.h>
#include <fstream>
#include <sched.h>
#include <sstream>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

namespace rdmaemu {

namespace ipc = emu::ipc;

std::optional<std::string> snapshot_device(const std::string& socket, DeviceSnapshot& out) {
    ipc::ControlClient client;
    if (int err = client.connect(socket))
        return "cannot reach the NIC: " + std::string(strerror(err));
    ipc::HelloReply hello{};
    ipc::QueryDeviceReply device{};
    ipc::QueryPortReply port{};
    if (int err = client.call<ipc::Op::Hello>({0, 0}, hello))
        return "the NIC refused hello: " + std::string(strerror(err));
    if (int err = client.call<ipc::Op::QueryDevice>({}, device))
        return "query_device: " + std::string(strerror(err));
    if (int err = client.call<ipc::Op::QueryPort>({1}, port))
        return "query_port: " + std::string(strerror(err));
    out.name.assign(hello.dev_name, strnlen(hello.dev_name, sizeof hello.dev_name));
    out.node_guid = hello.node_guid;
    out.node_type = hello.node_type;
    out.device = device.attr;
    out.port = port.attr;
    out.gids.clear();
    for (int i = 0; i < out.port.gid_tbl_len; ++i) {
        ipc::QueryGidReply g{};
        if (int err = client.call<ipc::Op::QueryGid>({1, static_cast<uint32_t>(i)}, g))
            return "query_gid: " + std::string(strerror(err));
        DeviceSnapshot::Gid gid{};
        std::memcpy(gid.raw, g.gid, 16);
        gid.type = g.gid_type;
        gid.valid = g.valid != 0;
        out.gids.push_back(gid);
    }
    out.pkeys.clear();
    for (int i = 0; i < out.port.pkey_tbl_len; ++i) {
        ipc::QueryPkeyReply p{};
        if (int err = client.call<ipc::Op::QueryPkey>({1, static_cast<uint32_t>(i)}, p))
            return "query_pkey: " + std::string(strerror(err));
        out.pkeys.push_back(be16toh(p.pkey));
    }
    return std::nullopt;
}

namespace {

template <typename... Args> std::string format(const char* fmt, Args... args) {
    char buf[256];
    std::snprintf(buf, sizeof buf, fmt, args...);
    return buf;
}

// "%04x:%04x:%04x:%04x", the four big-endian 16-bit words of a GUID.
std::string guid_text(uint64_t guid_be) {
    uint8_t b[8];
    std::memcpy(b, &guid_be, 8);
    return format("%02x%02x:%02x%02x:%02x%02x:%02x%02x\n", b[0], b[1], b[2], b[3], b[4], b[5], b[6],
                  b[7]);
}

// %pI6: eight groups of four hex digits.
std::string gid_text(const uint8_t* raw) {
    std::string out;
    for (int i = 0; i < 16; i += 2)
        out += format("%s%02x%02x", i ? ":" : "", raw[i], raw[i + 1]);
    return out + "\n";
}

std::string node_type_text(uint32_t type) {
    switch (type) {
    case IBV_NODE_CA:
        return format("%u: CA\n", type);
    case IBV_NODE_RNIC:
        return format("%u: RNIC\n", type);
    case IBV_NODE_USNIC:
        return format("%u: usNIC\n", type);
    case IBV_NODE_SWITCH:
        return format("%u: switch\n", type);
    case IBV_NODE_ROUTER:
        return format("%u: router\n", type);
    default:
        return format("%u: <unknown>\n", type);
    }
}

std::string port_state_text(ibv_port_state s) {
    static const char* const names[] = {"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"};
    const unsigned i = static_cast<unsigned>(s);
    return format("%u: %s\n", i, i < 6 ? names[i] : "UNKNOWN");
}

std::string phys_state_text(uint8_t s) {
    static const char* const names[] = {"<unknown>",
                                        "Sleep",
                                        "Polling",
                                        "Disabled",
                                        "PortConfigurationTraining",
                                        "LinkUp",
                                        "LinkErrorRecovery",
                                        "Phy Test"};
    return format("%u: %s\n", s, s < 8 ? names[s] : "<unknown>");
}

// rate_show: lanes times the speed's rate per lane, in tenths of Gb/s.
std::string rate_text(uint8_t width, uint32_t speed) {
    int lanes = width == 2 ? 4 : width == 4 ? 8 : width == 8 ? 12 : width == 16 ? 2 : 1;
    int rate = 25;
    const char* name = "";
    switch (speed) {
    case 2:
        rate = 50, name = " DDR";
        break;
    case 4:
        rate = 100, name = " QDR";
        break;
    case 8:
        rate = 100, name = " FDR10";
        break;
    case 16:
        rate = 140, name = " FDR";
        break;
    case 32:
        rate = 250, name = " EDR";
        break;
    case 64:
        rate = 500, name = " HDR";
        break;
    case 128:
        rate = 1000, name = " NDR";
        break;
    default:
        break;
    }
    rate *= lanes;
    return format("%d%s Gb/sec (%dX%s)\n", rate / 10, rate % 10 ? ".5" : "", lanes, name);
}

std::string gid_type_text(uint32_t type) {
    return type == IBV_GID_TYPE_ROCE_V2 ? "RoCE v2\n" : "IB/RoCE v1\n";
}

} // namespace

std::vector<std::pair<std::string, std::string>> sysfs_files(const DeviceSnapshot& dev,
                                                             const std::string& netdev) {
    std::vector<std::pair<std::string, std::string>> f;
    f.emplace_back("node_type", node_type_text(dev.node_type));
    f.emplace_back("node_guid", guid_text(dev.node_guid));
    f.emplace_back("sys_image_guid", guid_text(dev.device.sys_image_guid));
    f.emplace_back("fw_ver", std::string(dev.device.fw_ver) + "\n");
    const ibv_port_attr& p = dev.port;
    const std::string port = "ports/1/";
    f.emplace_back(port + "state", port_state_text(p.state));
    f.emplace_back(port + "phys_state", phys_state_text(p.phys_state));
    f.emplace_back(port + "rate", rate_text(p.active_width, p.active_speed));
    f.emplace_back(port + "lid", format("0x%x\n", p.lid));
    f.emplace_back(port + "sm_lid", format("0x%x\n", p.sm_lid));
    f.emplace_back(port + "sm_sl", format("%u\n", p.sm_sl));
    f.emplace_back(port + "lid_mask_count", format("%u\n", p.lmc));
    f.emplace_back(port + "cap_mask", format("0x%08x\n", p.port_cap_flags));
    f.emplace_back(port + "link_layer",
                   p.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet\n" : "InfiniBand\n");
    for (size_t i = 0; i < dev.gids.size(); ++i) {
        const auto& g = dev.gids[i];
        const std::string n = std::to_string(i);
        f.emplace_back(port + "gids/" + n, gid_text(g.raw));
        // The kernel answers EINVAL for the attributes of an empty entry: no file here.
        if (!g.valid) continue;
        f.emplace_back(port + "gid_attrs/types/" + n, gid_type_text(g.type));
        f.emplace_back(port + "gid_attrs/ndevs/" + n, netdev + "\n");
    }
    for (size_t i = 0; i < dev.pkeys.size(); ++i)
        f.emplace_back(port + "pkeys/" + std::to_string(i), format("0x%04x\n", dev.pkeys[i]));
    return f;
}

namespace {

constexpr unsigned long kTmpfsFlags = MS_NOSUID | MS_NODEV | MS_NOEXEC;

struct Failure {
    std::string why;
};

[[noreturn]] void fail(const std::string& what, int err = errno) {
    throw Failure{what + ": " + std::strerror(err)};
}

std::string fd_path(int dir_fd, const std::string& name) {
    return "/proc/self/fd/" + std::to_string(dir_fd) + "/" + name;
}

void bind(const std::string& from, const std::string& to, bool recursive) {
    if (::mount(from.c_str(), to.c_str(), nullptr, MS_BIND | (recursive ? MS_REC : 0), nullptr))
        fail("cannot bind " + from + " on " + to);
}

// `path` and its missing parents.
void mkdirs(const std::string& path) {
    for (size_t end = path.find('/', 1);; end = path.find('/', end + 1)) {
        const std::string part = path.substr(0, end);
        if (::mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) fail("mkdir " + part);
        if (end == std::string::npos) return;
    }
}

void write_file(const std::string& path, const std::string& text, mode_t mode = 0444) {
    mkdirs(path.substr(0, path.rfind('/')));
    emu::OwnedFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
    if (!fd || ::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
        fail("cannot write " + path);
}

// An empty file or directory to bind something on.
void make_mountpoint(const std::string& path, bool dir) {
    if (dir) {
        if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) fail("mkdir " + path);
        return;
    }
    emu::OwnedFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
    if (!fd) fail("cannot make " + path);
}

std::vector<std::string> entries(int dir_fd) {
    std::vector<std::string> names;
    DIR* d = ::fdopendir(::dup(dir_fd));
    if (!d) fail("opendir");
    while (dirent* e = ::readdir(d))
        if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
            names.emplace_back(e->d_name);
    ::closedir(d);
    return names;
}

emu::OwnedFd open_dir(const char* path) {
    emu::OwnedFd fd(::open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd) fail(std::string("cannot open ") + path);
    return fd;
}

void remount_read_only(const char* path, unsigned long flags) {
    if (::mount(nullptr, path, nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | flags, nullptr))
        fail(std::string("cannot make ") + path + " read-only");
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 3 < s.size()) {
            out += static_cast<char>(std::stoi(s.substr(i + 1, 3), nullptr, 8));
            i += 3;
        } else {
            out += s[i];
        }
    }
    return out;
}

// The mount points directly on top of /sys's mount (cgroups, debugfs, ...), relative to /sys.
std::vector<std::string> sys_submounts() {
    std::ifstream in("/proc/self/mountinfo");
    std::string line;
    std::vector<std::tuple<std::string, std::string, std::string>> all; // id, parent, point
    std::string sys_id;
    while (std::getline(in, line)) {
        std::istringstream f(line);
        std::string id, parent, devno, root, point;
        f >> id >> parent >> devno >> root >> point;
        point = unescape(point);
        all.emplace_back(id, parent, point);
        if (point == "/sys") sys_id = id; // the last one is on top
    }
    std::vector<std::string> out;
    for (const auto& [id, parent, point] : all)
        if (parent == sys_id && point.rfind("/sys/", 0) == 0) out.push_back(point.substr(5));
    return out;
}

// /sys for the current network namespace (/sys/class/net and /sys/devices/virtual/net show its
// interfaces), with the old /sys's submounts bound back. False when sysfs cannot be mounted here
// (a container that hides parts of /sys): /sys then stays as it was.
bool remount_sys() {
    struct statvfs vfs {};
    if (::statvfs("/sys", &vfs) != 0) fail("statvfs /sys");
    const auto submounts = sys_submounts();
    emu::OwnedFd old_sys(::open("/sys", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!old_sys) fail("cannot open /sys");
    unsigned long flags =
        MS_NOSUID | MS_NODEV | MS_NOEXEC | (vfs.f_flag & ST_RDONLY ? MS_RDONLY : 0);
    if (::mount("sysfs", "/sys", "sysfs", flags, nullptr) != 0) return false;
    for (const auto& rel : submounts) {
        struct stat st {};
        if (::stat(("/sys/" + rel).c_str(), &st) != 0) continue; // not in this sysfs
        bind(fd_path(old_sys.get(), rel), "/sys/" + rel, true);
    }
    return true;
}

// The RDMA classes are made of entries (symbolic links into /sys/devices, and abi_version) that
// the view copies or binds one by one, so that the device's own can go next to the machine's;
// the other classes are bound as they are.
bool is_rdma_class(const std::string& name) {
    return name == "infiniband" || name == "infiniband_verbs";
}

void build_sys_class(const DeviceSnapshot& dev, const std::string& netdev, bool netns_sysfs) {
    emu::OwnedFd old_class = open_dir("/sys/class");
    const auto classes = entries(old_class.get());
    if (::mount("tmpfs", "/sys/class", "tmpfs", kTmpfsFlags, "mode=755"))
        fail("cannot mount a tmpfs on /sys/class");
    for (const auto& name : classes) {
        const std::string to = "/sys/class/" + name;
        make_mountpoint(to, true);
        if (!is_rdma_class(name)) {
            bind(fd_path(old_class.get(), name), to, true);
            continue;
        }
        emu::OwnedFd cls(::openat(old_class.get(), name.c_str(), O_RDONLY | O_DIRECTORY));
        if (!cls) fail("cannot open /sys/class/" + name);
        for (const auto& entry : entries(cls.get())) {
            struct stat st {};
            if (::fstatat(cls.get(), entry.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
            const std::string path = to + "/" + entry;
            if (S_ISREG(st.st_mode)) { // abi_version, which rdma-core's library reads
                make_mountpoint(path, false);
                bind(fd_path(cls.get(), entry), path, false);
                continue;
            }
            char target[4096];
            ssize_t n = ::readlinkat(cls.get(), entry.c_str(), target, sizeof target - 1);
            if (n < 0) continue; // no device of the kernel's
            target[n] = 0;
            if (::symlink(target, path.c_str()) != 0) fail("symlink " + path);
        }
    }
    const std::string ib = "/sys/class/infiniband/" + dev.name;
    if (::access(ib.c_str(), F_OK) != 0) {
        for (const auto& [path, text] : sysfs_files(dev, netdev))
            write_file(ib + "/" + path, text);
        // device/net/<netdev>: the interface's own sysfs directory when /sys shows this
        // namespace, else an empty one of that name.
        const std::string net = ib + "/device/net/" + netdev;
        mkdirs(net);
        if (netns_sysfs) bind("/sys/class/net/" + netdev, net, false);
    }
    const std::string uverbs = std::string("/sys/class/infiniband_verbs/") + kUverbsName;
    if (::access(uverbs.c_str(), F_OK) != 0) {
        struct stat null_dev {};
        if (::stat("/dev/null", &null_dev) != 0) fail("stat /dev/null");
        write_file(uverbs + "/ibdev", dev.name + "\n");
        // The node's own numbers: /dev/infiniband/uverbs0 is /dev/null's node (below).
        write_file(uverbs + "/dev",
                   format("%u:%u\n", major(null_dev.st_rdev), minor(null_dev.st_rdev)));
    }
    remount_read_only("/sys/class", kTmpfsFlags);
}

// /dev: every entry of the machine's (directories, nodes, sockets bound; symbolic links copied),
// and /dev/infiniband with the machine's nodes and the device's.
void build_dev() {
    emu::OwnedFd old_dev = open_dir("/dev");
    const auto names = entries(old_dev.get());
    if (::mount("tmpfs", "/dev", "tmpfs", MS_NOSUID, "mode=755"))
        fail("cannot mount a tmpfs on /dev");
    for (const auto& name : names) {
        struct stat st {};
        if (::fstatat(old_dev.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        const std::string to = "/dev/" + name;
        if (S_ISLNK(st.st_mode)) {
            char target[4096];
            ssize_t n = ::readlinkat(old_dev.get(), name.c_str(), target, sizeof target - 1);
            if (n < 0) continue;
            target[n] = 0;
            if (::symlink(target, to.c_str()) != 0) fail("symlink " + to);
            continue;
        }
        if (name == "infiniband") continue; // below
        make_mountpoint(to, S_ISDIR(st.st_mode));
        bind(fd_path(old_dev.get(), name), to, S_ISDIR(st.st_mode));
    }
    // An unprivileged user cannot make device nodes; /dev/null's, which any user may open for
    // reading and writing, stands for the uverbs device. Only the emulator's libibverbs stands
    // behind the device, and it never opens the node (verbs go to the NIC's socket); a program
    // that opened it and sent uverbs commands would get ENOTTY.
    make_mountpoint("/dev/infiniband", true);
    emu::OwnedFd old_ib(::openat(old_dev.get(), "infiniband", O_RDONLY | O_DIRECTORY));
    if (old_ib) {
        for (const auto& name : entries(old_ib.get())) {
            make_mountpoint("/dev/infiniband/" + name, false);
            bind(fd_path(old_ib.get(), name), "/dev/infiniband/" + name, false);
        }
    }
    const std::string node = std::string("/dev/infiniband/") + kUverbsName;
    if (::access(node.c_str(), F_OK) != 0) {
        make_mountpoint(node, false);
        bind(fd_path(old_dev.get(), "null"), node, false);
    }
    remount_read_only("/dev", MS_NOSUID);
}

} // namespace

ViewResult enter_host_view(const DeviceSnapshot& dev, const std::string& netdev, std::string& why) {
    if (::unshare(CLONE_NEWNS) != 0) {
        why = "cannot make a mount namespace: " + std::string(std::strerror(errno));
        return ViewResult::Unchanged;
    }
    // Nothing done here reaches the machine's mounts.
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
        why = "cannot make the mounts private: " + std::string(std::strerror(errno));
        return ViewResult::Unchanged;
    }
    try {
        const bool netns_sysfs = remount_sys();
        build_sys_class(dev, netdev, netns_sysfs);
        build_dev();
    } catch (const Failure& f) {
        why = f.why;
        return ViewResult::Broken;
    }
    return ViewResult::Done;
}

} // namespace rdmaemu
