#include "daemon.h"

#include "emu/ipc/control_client.h"
#include "emu/wire/ip_address.h"

#include <arpa/inet.h>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <fstream>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace rdmaemu {

namespace {

// 0 when UDP addr:port can be bound (and is released again), else errno. An IPv6 address is
// bound as nicsimd binds it, IPv6 only (net/roce_port.h).
int try_bind(const emu::wire::IpAddress& address, int port) {
    const int family = address.family();
    int fd = ::socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return errno;
    if (family == AF_INET6) {
        int on = 1;
        ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on);
    }
    sockaddr_storage addr;
    const socklen_t len = emu::wire::to_sockaddr({address, static_cast<uint16_t>(port)}, addr);
    int rc = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), len);
    int err = rc == 0 ? 0 : errno;
    ::close(fd);
    return err;
}

int try_bind(uint32_t addr_host_order, int port) {
    return try_bind(emu::wire::IpAddress::from_ipv4(htonl(addr_host_order)), port);
}

} // namespace

bool subnet_free(int subnet, int port) {
    return try_bind((127u << 24) | (static_cast<unsigned>(subnet) << 8) | 1u, port) == 0;
}

std::optional<int> pick_subnet(int port) {
    for (int s = 0; s <= 254; ++s)
        if (subnet_free(s, port)) return s;
    return std::nullopt;
}

bool port_held_on_all_addresses(int port) {
    return try_bind(INADDR_ANY, port) == EADDRINUSE;
}

int address_bindable(const std::string& address, int port) {
    auto a = emu::wire::IpAddress::parse(address);
    if (!a) return EINVAL;
    return try_bind(*a, port);
}

pid_t spawn_detached(const std::vector<std::string>& argv, int output_fd) {
    // Everything the child needs is prepared here: after fork only async-signal-safe calls.
    std::vector<char*> cargv;
    cargv.reserve(argv.size() + 1);
    for (const auto& a : argv)
        cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd < 0) return -errno;
    pid_t pid = ::fork();
    if (pid == 0) {
        ::setsid();
        // Ignored signals survive exec; the daemon must see SIGTERM and SIGINT as usual.
        for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE})
            ::signal(sig, SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        ::dup2(null_fd, STDIN_FILENO);
        ::dup2(output_fd, STDOUT_FILENO);
        ::dup2(output_fd, STDERR_FILENO);
        // Nothing else of ours: a descriptor the caller left open (a lock a script holds with
        // flock, a pipe) must not stay open for the daemon's whole life.
        ::close_range(3, ~0U, 0);
        ::execv(cargv[0], cargv.data());
        const char msg[] = "rdmaemu: cannot execute nicsimd\n";
        [[maybe_unused]] auto n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
        ::_exit(127);
    }
    int err = errno;
    ::close(null_fd);
    return pid < 0 ? -err : pid;
}

ReadyResult wait_ready(const std::string& socket, pid_t pid, std::chrono::milliseconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
        ReadyResult r;
        if (::waitpid(pid, &r.wait_status, WNOHANG) == pid) {
            r.exited = true;
            return r;
        }
        emu::ipc::ControlClient probe;
        if (probe.connect(socket) == 0) {
            r.ready = true;
            return r;
        }
        if (std::chrono::steady_clock::now() >= deadline) return r;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

std::string describe_wait_status(int status) {
    if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
    return "status " + std::to_string(status);
}

std::string tail_file(const std::string& path, int lines) {
    std::ifstream in(path);
    std::deque<std::string> last;
    std::string line;
    while (std::getline(in, line)) {
        last.push_back(line);
        if (static_cast<int>(last.size()) > lines) last.pop_front();
    }
    std::string out;
    for (const auto& l : last)
        out += "    " + l + "\n";
    return out;
}

} // namespace rdmaemu
