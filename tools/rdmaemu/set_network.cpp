#include "set_network.h"

#include "emu/private_files.h"
#include "netlink.h"
#include "path_mtu.h"

#include <net/if.h>

#include <arpa/inet.h>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <poll.h>
#include <sched.h>
#include <sstream>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace rdmaemu {

namespace {

constexpr auto kHolderReadyLimit = std::chrono::seconds(5);
constexpr auto kCarrierLimit = std::chrono::seconds(2);

std::string record_path(const std::string& runtime) {
    return runtime + "/network";
}

struct Holder {
    pid_t pid = 0;
    unsigned long long start_time = 0; // /proc/PID/stat's, so that a recycled pid does not count
};

// Field 22 of /proc/PID/stat (after the parenthesized name, which may hold spaces), unless the
// process is gone or a zombie.
std::optional<unsigned long long> start_time_of(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(in, line)) return std::nullopt;
    size_t close = line.rfind(')');
    if (close == std::string::npos || close + 2 >= line.size()) return std::nullopt;
    std::istringstream rest(line.substr(close + 2));
    std::string state, field;
    rest >> state;
    if (state == "Z" || state == "X") return std::nullopt;
    for (int i = 4; i < 22; ++i)
        rest >> field;
    unsigned long long t = 0;
    if (!(rest >> t)) return std::nullopt;
    return t;
}

std::optional<Holder> read_record(const std::string& runtime) {
    std::ifstream in(record_path(runtime));
    long long pid = 0;
    Holder h;
    if (!(in >> pid >> h.start_time) || pid <= 0 || pid > INT32_MAX) return std::nullopt;
    h.pid = static_cast<pid_t>(pid);
    return h;
}

bool alive(const Holder& h) {
    auto t = start_time_of(h.pid);
    return t && *t == h.start_time;
}

std::string errno_text(const std::string& what, int err) {
    return what + ": " + std::strerror(err);
}

bool write_file(const char* path, const std::string& text) {
    emu::OwnedFd fd(::open(path, O_WRONLY | O_CLOEXEC));
    return fd && ::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
}

bool same_namespace(int fd, const char* self) {
    struct stat a {
    }, b{};
    return ::fstat(fd, &a) == 0 && ::stat(self, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

// A veth's carrier comes up a moment after both ends are up (the kernel's link watch): the
// holder answers once every interface runs, or after kCarrierLimit, so that the first program
// of the set sees its interface as it stays.
void wait_running(int count) {
    emu::OwnedFd sock(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!sock) return;
    const auto deadline = std::chrono::steady_clock::now() + kCarrierLimit;
    for (int i = 1; i <= count;) {
        ifreq req{};
        std::snprintf(req.ifr_name, sizeof req.ifr_name, "%s", netdev_name(i).c_str());
        if (::ioctl(sock.get(), SIOCGIFFLAGS, &req) != 0 || (req.ifr_flags & IFF_RUNNING)) {
            ++i;
            continue;
        }
        if (std::chrono::steady_clock::now() >= deadline) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

// In the holder: the namespaces and interfaces. Returns "" or why not; `peers` gets the
// namespace of the veth peers, which the holder keeps open.
std::string build(int subnet, int count, int roce_mtu, emu::OwnedFd& peers) {
    const bool root = ::geteuid() == 0;
    const uid_t uid = ::geteuid();
    const gid_t gid = ::getegid();
    if (root) {
        if (::unshare(CLONE_NEWNET) != 0)
            return errno_text("cannot make a network namespace (unshare)", errno);
    } else {
        if (::unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0)
            return errno_text("no user namespace for uid " + std::to_string(uid) +
                                  " here (unshare; see /proc/sys/user/max_user_namespaces, "
                                  "kernel.unprivileged_userns_clone)",
                              errno);
        // The caller's own ids only: programs keep their uid and gid and are not root inside.
        if (!write_file("/proc/self/setgroups", "deny") ||
            !write_file("/proc/self/uid_map",
                        std::to_string(uid) + " " + std::to_string(uid) + " 1") ||
            !write_file("/proc/self/gid_map",
                        std::to_string(gid) + " " + std::to_string(gid) + " 1"))
            return errno_text("cannot map uid and gid into the user namespace", errno);
    }
    emu::OwnedFd set_ns(::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
    if (!set_ns || ::unshare(CLONE_NEWNET) != 0)
        return errno_text("cannot make the peers' network namespace", errno);
    peers.reset(::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
    netlink::Rtnl peers_rtnl; // made here, it speaks for the peers' namespace from anywhere
    if (!peers) return errno_text("cannot open the peers' network namespace", errno);
    if (int err = peers_rtnl.open()) return errno_text("rtnetlink socket", err);
    if (::setns(set_ns.get(), CLONE_NEWNET) != 0)
        return errno_text("cannot return to the set's network namespace", errno);

    netlink::Rtnl rtnl;
    if (int err = rtnl.open()) return errno_text("rtnetlink socket", err);
    if (int err = rtnl.set_up("lo")) return errno_text("cannot bring lo up", err);
    const int mtu = netdev_mtu(roce_mtu);
    for (int i = 1; i <= count; ++i) {
        const std::string name = netdev_name(i);
        // nicsim/nic/device.cpp makes the node GUID from this MAC, 02:52 and the IPv4 address.
        const std::array<uint8_t, 6> mac = {
            0x02, 0x52, 127, 0, static_cast<uint8_t>(subnet), static_cast<uint8_t>(i)};
        const uint32_t addr =
            htonl((127u << 24) | (static_cast<uint32_t>(subnet) << 8) | static_cast<uint32_t>(i));
        if (int err = rtnl.add_veth(name, name, peers.get(), mac, mtu))
            return errno_text("cannot make the veth pair " + name, err);
        if (int err = peers_rtnl.set_up(name))
            return errno_text("cannot bring " + name + "'s peer up", err);
        if (int err = rtnl.add_ipv4(name, addr, 24))
            return errno_text("cannot give " + name + " its address", err);
        if (int err = rtnl.set_up(name)) return errno_text("cannot bring " + name + " up", err);
    }
    wait_running(count);
    return "";
}

[[noreturn]] void hold(int report_fd, int subnet, int count, int roce_mtu) {
    ::setsid();
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE})
        ::signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    emu::OwnedFd peers;
    std::string why = build(subnet, count, roce_mtu, peers);
    [[maybe_unused]] auto n = ::write(report_fd, why.data(), why.size());
    if (!why.empty()) ::_exit(1);
    // Nothing of `up` stays open but the peers' namespace: stdio on /dev/null, the rest closed.
    int null_fd = ::open("/dev/null", O_RDWR);
    for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO})
        ::dup2(null_fd, fd);
    int keep = ::dup2(peers.release(), 3);
    ::syscall(SYS_close_range, static_cast<unsigned>(keep + 1), ~0u, 0u);
    [[maybe_unused]] int rc = ::chdir("/");
    for (;;)
        ::pause();
}

} // namespace

std::string netdev_name(int host) {
    return "host" + std::to_string(host);
}

std::optional<std::string> start_set_network(const std::string& runtime, int subnet, int count,
                                             int roce_mtu, mode_t record_mode) {
    stop_set_network(runtime);
    int report[2];
    if (::pipe2(report, O_CLOEXEC) != 0) return errno_text("pipe", errno);
    pid_t pid = ::fork();
    if (pid < 0) {
        int err = errno;
        ::close(report[0]);
        ::close(report[1]);
        return errno_text("fork", err);
    }
    if (pid == 0) {
        ::close(report[0]);
        hold(report[1], subnet, count, roce_mtu);
    }
    ::close(report[1]);
    emu::OwnedFd in(report[0]);
    std::string why;
    auto deadline = std::chrono::steady_clock::now() + kHolderReadyLimit;
    for (;;) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        pollfd p{in.get(), POLLIN, 0};
        int ready = ::poll(&p, 1, static_cast<int>(std::max<long long>(left.count(), 0)));
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) {
            why = "the namespace holder did not answer within 5 s";
            break;
        }
        char buf[512];
        ssize_t n = ::read(in.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break; // the holder closed its end: all it had to say was said
        why.append(buf, static_cast<size_t>(n));
    }
    auto start = start_time_of(pid);
    if (why.empty() && !start) why = "the namespace holder exited";
    if (!why.empty()) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
        return why;
    }
    emu::Opened file = emu::create_private_file(record_path(runtime), O_WRONLY, record_mode);
    std::string text = std::to_string(pid) + " " + std::to_string(*start) + "\n";
    if (!file.fd ||
        ::write(file.fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
        return file.fd ? errno_text("cannot write " + record_path(runtime), errno) : file.error;
    }
    return std::nullopt;
}

void stop_set_network(const std::string& runtime) {
    if (auto h = read_record(runtime); h && alive(*h)) {
        ::kill(h->pid, SIGKILL);
        // Reaped here when it is our child (an `up` that failed later); else by its parent.
        for (int i = 0; i < 100 && alive(*h); ++i) {
            ::waitpid(h->pid, nullptr, WNOHANG);
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    }
    std::error_code ec;
    std::filesystem::remove(record_path(runtime), ec);
}

bool set_network_alive(const std::string& runtime) {
    auto h = read_record(runtime);
    return h && alive(*h);
}

std::optional<std::string> join_set_network(const std::string& runtime) {
    auto h = read_record(runtime);
    if (!h) return "the set has no network namespace (rdmaemu up said why)";
    if (!alive(*h))
        return "the set's namespace holder (pid " + std::to_string(h->pid) + ") is gone";
    const std::string proc = "/proc/" + std::to_string(h->pid);
    struct stat st {};
    if (::stat(proc.c_str(), &st) != 0) return errno_text("cannot look at " + proc, errno);
    if (st.st_uid != ::geteuid())
        return "the set's namespaces are uid " + std::to_string(st.st_uid) + "'s";
    emu::OwnedFd user(::open((proc + "/ns/user").c_str(), O_RDONLY | O_CLOEXEC));
    emu::OwnedFd net(::open((proc + "/ns/net").c_str(), O_RDONLY | O_CLOEXEC));
    if (!user || !net) return errno_text("cannot open " + proc + "/ns", errno);
    // Already inside (a program of the set runs rdmaemu run again): nothing to join.
    if (!same_namespace(user.get(), "/proc/self/ns/user") &&
        ::setns(user.get(), CLONE_NEWUSER) != 0)
        return errno_text("cannot join the set's user namespace", errno);
    if (!same_namespace(net.get(), "/proc/self/ns/net") && ::setns(net.get(), CLONE_NEWNET) != 0)
        return errno_text("cannot join the set's network namespace", errno);
    return std::nullopt;
}

} // namespace rdmaemu
