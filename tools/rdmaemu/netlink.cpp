#include "netlink.h"

#include <net/if.h> // before the linux/ headers, which want glibc's if.h first

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

namespace rdmaemu::netlink {

namespace {

// One request: a header, a fixed part, then attributes, nested ones closed by end().
class Message {
  public:
    Message(uint16_t type, uint16_t flags) {
        buf_.resize(NLMSG_HDRLEN);
        hdr()->nlmsg_type = type;
        hdr()->nlmsg_flags = static_cast<uint16_t>(NLM_F_REQUEST | NLM_F_ACK | flags);
    }
    template <typename T> T* fixed() {
        size_t at = buf_.size();
        buf_.resize(at + NLMSG_ALIGN(sizeof(T)));
        return reinterpret_cast<T*>(buf_.data() + at);
    }
    void attr(uint16_t type, const void* data, size_t len) {
        size_t at = buf_.size();
        buf_.resize(at + RTA_SPACE(len));
        auto* rta = reinterpret_cast<rtattr*>(buf_.data() + at);
        rta->rta_type = type;
        rta->rta_len = static_cast<uint16_t>(RTA_LENGTH(len));
        if (len) std::memcpy(RTA_DATA(rta), data, len);
    }
    void attr_str(uint16_t type, const std::string& s) { attr(type, s.c_str(), s.size() + 1); }
    template <typename T> void attr_val(uint16_t type, T v) { attr(type, &v, sizeof v); }
    size_t begin(uint16_t type) {
        size_t at = buf_.size();
        attr(static_cast<uint16_t>(type | NLA_F_NESTED), nullptr, 0);
        return at;
    }
    void end(size_t at) {
        reinterpret_cast<rtattr*>(buf_.data() + at)->rta_len =
            static_cast<uint16_t>(buf_.size() - at);
    }
    void* data() {
        hdr()->nlmsg_len = static_cast<uint32_t>(buf_.size());
        return buf_.data();
    }
    uint32_t size() const { return static_cast<uint32_t>(buf_.size()); }

  private:
    nlmsghdr* hdr() { return reinterpret_cast<nlmsghdr*>(buf_.data()); }
    std::vector<char> buf_;
};

} // namespace

int Rtnl::open() {
    int fd = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fd < 0) return errno;
    fd_.reset(fd);
    sockaddr_nl local{};
    local.nl_family = AF_NETLINK;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) return errno;
    return 0;
}

int Rtnl::transact(void* msg, uint32_t len) {
    auto* hdr = static_cast<nlmsghdr*>(msg);
    hdr->nlmsg_seq = ++seq_;
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    if (::sendto(fd_.get(), msg, len, 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) < 0)
        return errno;
    char reply[8192];
    for (;;) {
        ssize_t n = ::recv(fd_.get(), reply, sizeof reply, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return errno;
        for (auto* h = reinterpret_cast<nlmsghdr*>(reply); NLMSG_OK(h, static_cast<size_t>(n));
             h = NLMSG_NEXT(h, n)) {
            if (h->nlmsg_seq != seq_ || h->nlmsg_type != NLMSG_ERROR) continue;
            return -static_cast<nlmsgerr*>(NLMSG_DATA(h))->error; // 0 is the ACK
        }
    }
}

// Links are named, not numbered: the kernel finds the name in the socket's namespace, which need
// not be the caller's (if_nametoindex would look in the caller's).
int Rtnl::set_up(const std::string& ifname) {
    Message m(RTM_NEWLINK, 0);
    auto* ifi = m.fixed<ifinfomsg>();
    ifi->ifi_family = AF_UNSPEC;
    ifi->ifi_flags = IFF_UP;
    ifi->ifi_change = IFF_UP;
    m.attr_str(IFLA_IFNAME, ifname);
    return transact(m.data(), m.size());
}

int Rtnl::add_veth(const std::string& name, const std::string& peer, int peer_netns_fd,
                   const std::array<uint8_t, 6>& mac, int mtu) {
    Message m(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
    m.fixed<ifinfomsg>()->ifi_family = AF_UNSPEC;
    m.attr_str(IFLA_IFNAME, name);
    m.attr(IFLA_ADDRESS, mac.data(), mac.size());
    m.attr_val<uint32_t>(IFLA_MTU, static_cast<uint32_t>(mtu));
    size_t linkinfo = m.begin(IFLA_LINKINFO);
    m.attr_str(IFLA_INFO_KIND, "veth");
    size_t data = m.begin(IFLA_INFO_DATA);
    size_t peer_info = m.begin(VETH_INFO_PEER);
    // The peer's own ifinfomsg, then its attributes. It cannot come up here: a veth opens only
    // once it has its peer (veth_open's ENOTCONN).
    m.fixed<ifinfomsg>()->ifi_family = AF_UNSPEC;
    m.attr_str(IFLA_IFNAME, peer);
    m.attr_val<uint32_t>(IFLA_MTU, static_cast<uint32_t>(mtu));
    m.attr_val<uint32_t>(IFLA_NET_NS_FD, static_cast<uint32_t>(peer_netns_fd));
    m.end(peer_info);
    m.end(data);
    m.end(linkinfo);
    if (int err = transact(m.data(), m.size())) return err;

    // No IPv6 address generation (so no fe80:: link-local address) on our end.
    Message s(RTM_NEWLINK, 0);
    s.fixed<ifinfomsg>()->ifi_family = AF_UNSPEC;
    s.attr_str(IFLA_IFNAME, name);
    size_t spec = s.begin(IFLA_AF_SPEC);
    size_t inet6 = s.begin(AF_INET6);
    s.attr_val<uint8_t>(IFLA_INET6_ADDR_GEN_MODE, IN6_ADDR_GEN_MODE_NONE);
    s.end(inet6);
    s.end(spec);
    return transact(s.data(), s.size());
}

int Rtnl::add_ipv4(const std::string& ifname, uint32_t addr, int prefix) {
    unsigned index = ::if_nametoindex(ifname.c_str());
    if (!index) return errno;
    Message m(RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL);
    auto* ifa = m.fixed<ifaddrmsg>();
    ifa->ifa_family = AF_INET;
    ifa->ifa_prefixlen = static_cast<uint8_t>(prefix);
    ifa->ifa_index = index;
    // As ip(8) gives 127.0.0.0/8 addresses: valid only inside the machine.
    ifa->ifa_scope = (ntohl(addr) >> 24) == 127 ? RT_SCOPE_HOST : RT_SCOPE_UNIVERSE;
    m.attr_val(IFA_LOCAL, addr);
    m.attr_val(IFA_ADDRESS, addr);
    return transact(m.data(), m.size());
}

} // namespace rdmaemu::netlink
