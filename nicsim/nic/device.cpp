#include "nic/device.h"

#include "nic/device_limits.h"

#include <cstring>
#include <endian.h>

namespace nicsim {

Device::Device(const Config& config) : config_(config) {
    // The MAC 02:52 and the address's last four bytes (the IPv4 address itself): locally
    // administered, unicast. The node GUID is its EUI-64 (ff:fe in the middle).
    const uint8_t* ip = config_.address.data() + 12;
    uint8_t eui[8] = {0x02, 0x52, ip[0], 0xff, 0xfe, ip[1], ip[2], ip[3]};
    std::memcpy(&node_guid_, eui, 8);
    // RoCE v2: the GID is the address, IPv4 as ::ffff:a.b.c.d.
    GidEntry own{};
    std::memcpy(own.gid.raw, config_.address.data(), 16);
    own.usable = true;
    gids_.push_back(own);
    if (config_.address.is_ipv4()) return;
    // The interface's link-local address as addrconf makes it from the MAC (RFC 4291 2.5.1,
    // appendix A: the EUI-64 with the universal/local bit inverted): fe80::52:xxff:fexx:xxxx.
    GidEntry link_local{};
    link_local.gid.raw[0] = 0xfe;
    link_local.gid.raw[1] = 0x80;
    std::memcpy(link_local.gid.raw + 8, eui, 8);
    link_local.gid.raw[8] ^= 0x02;
    link_local.usable = false;
    gids_.push_back(link_local);
}

std::optional<Device::GidEntry> Device::gid_entry(uint32_t index) const {
    if (index >= gids_.size()) return std::nullopt;
    return gids_[index];
}

std::string Device::address_string() const {
    return config_.address.text();
}

std::string Device::gid_string() const {
    return config_.address.gid_text();
}

ibv_mtu Device::active_mtu() const {
    switch (config_.mtu) {
    case 256:
        return IBV_MTU_256;
    case 512:
        return IBV_MTU_512;
    case 2048:
        return IBV_MTU_2048;
    case 4096:
        return IBV_MTU_4096;
    default:
        return IBV_MTU_1024;
    }
}

ibv_device_attr Device::device_attr() const {
    using namespace limits;
    ibv_device_attr a{};
    std::snprintf(a.fw_ver, sizeof a.fw_ver, "rdmaemu %s", "0.1.0");
    a.node_guid = node_guid_;
    a.sys_image_guid = node_guid_;
    a.max_mr_size = kMaxMrSize;
    a.page_size_cap = 0xfffff000; // any power-of-two page from 4 KiB
    a.vendor_id = kVendorId;
    a.vendor_part_id = kVendorPartId;
    a.hw_ver = kHwVer;
    a.max_qp = kMaxQp;
    a.max_qp_wr = kMaxQpWr;
    a.device_cap_flags = IBV_DEVICE_SYS_IMAGE_GUID | IBV_DEVICE_RC_RNR_NAK_GEN |
                         IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B | IBV_DEVICE_XRC;
    a.max_mw = kMaxMw;
    a.max_sge = kMaxSge;
    a.max_sge_rd = kMaxSge;
    a.max_cq = kMaxCq;
    a.max_cqe = kMaxCqe;
    a.max_mr = kMaxMr;
    a.max_pd = kMaxPd;
    a.max_qp_rd_atom = kMaxQpRdAtom;
    a.max_res_rd_atom = kMaxQpRdAtom * kMaxQp;
    a.max_qp_init_rd_atom = kMaxQpRdAtom;
    a.atomic_cap = IBV_ATOMIC_HCA;
    a.max_mcast_grp = kMaxMcastGrp;
    a.max_mcast_qp_attach = kMaxMcastQpAttach;
    a.max_total_mcast_qp_attach = kMaxTotalMcastQpAttach;
    a.max_ah = kMaxAh;
    a.max_srq = kMaxSrq;
    a.max_srq_wr = kMaxSrqWr;
    a.max_srq_sge = kMaxSrqSge;
    a.max_pkeys = kPkeyTableLen;
    a.local_ca_ack_delay = kLocalCaAckDelay;
    a.phys_port_cnt = 1;
    return a;
}

ibv_port_attr Device::port_attr() const {
    ibv_port_attr p{};
    p.state = IBV_PORT_ACTIVE;
    p.max_mtu = IBV_MTU_4096;
    p.active_mtu = active_mtu();
    p.gid_tbl_len = limits::kGidTableLen;
    p.max_msg_sz = limits::kMaxMsgSize;
    p.pkey_tbl_len = limits::kPkeyTableLen;
    p.max_vl_num = 1;
    p.active_width = 1;  // 1X
    p.active_speed = 32; // EDR: 25 Gb/s, a nominal figure for an emulated link
    p.phys_state = 5;    // LinkUp
    p.link_layer = IBV_LINK_LAYER_ETHERNET;
    return p;
}

} // namespace nicsim
