// Address handles, and building one from a received work completion.
#include "backends/emulated/dead_nic.h"
#include "backends/emulated/emu_objects.h"
#include "backends/emulated/emulated_verbs.h"
#include "emu/wire/multicast.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <new>

using namespace verbs;
namespace ipc = emu::ipc;

ibv_ah* emulated::ibv_create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
    ipc::HandleReply r{};
    if (int err = control(pd->context).call<ipc::Op::CreateAh>({pd->handle, 0, *attr}, r))
        return fail<ibv_ah>(err);
    auto* ah = new (std::nothrow) ibv_ah{};
    if (!ah) {
        control(pd->context).call<ipc::Op::DestroyAh>({r.handle, 0});
        return fail<ibv_ah>(ENOMEM);
    }
    ah->context = pd->context;
    ah->pd = pd;
    ah->handle = r.handle;
    return ah;
}

int emulated::ibv_destroy_ah(ibv_ah* ah) {
    if (int err = control(ah->context).call<ipc::Op::DestroyAh>({ah->handle, 0});
        err && !destroyed_with_nic(ah->context, err))
        return destroy_refused(err);
    delete ah;
    return 0;
}

namespace {

void ipv4_mapped_gid(ibv_gid& gid, const uint8_t* ipv4) {
    std::memset(&gid, 0, sizeof gid);
    gid.raw[10] = gid.raw[11] = 0xff;
    std::memcpy(&gid.raw[12], ipv4, 4);
}

// The index of `gid` in the port's table, or -1.
int find_gid_index(ibv_context* ctx, uint8_t port, const ibv_gid& gid) {
    ibv_port_attr pa{};
    if (ibv_query_port(ctx, port, &pa)) return -1;
    for (int i = 0; i < pa.gid_tbl_len; ++i) {
        ibv_gid g;
        if (ibv_query_gid(ctx, port, i, &g) == 0 && std::memcmp(&g, &gid, sizeof g) == 0) return i;
    }
    return -1;
}

} // namespace

int emulated::ibv_init_ah_from_wc(ibv_context* ctx, uint8_t port_num, ibv_wc* wc, ibv_grh* grh,
                                  ibv_ah_attr* ah_attr) {
    std::memset(ah_attr, 0, sizeof *ah_attr);
    ah_attr->dlid = wc->slid;
    ah_attr->sl = wc->sl;
    ah_attr->src_path_bits = wc->dlid_path_bits;
    ah_attr->port_num = port_num;
    if (!(wc->wc_flags & IBV_WC_GRH)) return 0;
    ah_attr->is_global = 1;
    ah_attr->grh.hop_limit = 0xff;
    const auto* raw = reinterpret_cast<const uint8_t*>(grh);
    ibv_gid local;
    if ((raw[20] >> 4) == 4) {
        // RoCE v2 over IPv4: the 40 bytes hold 20 unused ones, then the IPv4 header.
        const uint8_t* ip = raw + 20;
        ah_attr->grh.traffic_class = ip[1];
        ipv4_mapped_gid(ah_attr->grh.dgid, ip + 12);
        ipv4_mapped_gid(local, ip + 16);
    } else {
        uint32_t flow = ntohl(grh->version_tclass_flow);
        ah_attr->grh.flow_label = flow & 0xfffff;
        ah_attr->grh.traffic_class = (flow >> 20) & 0xff;
        ah_attr->grh.dgid = grh->sgid;
        local = grh->dgid;
    }
    // A packet to a multicast group is answered from the port's own GID (index 0), as the
    // kernel's ib_init_ah_attr_from_wc picks a source GID for a multicast destination.
    int index = emu::wire::is_multicast_gid(local.raw) ? 0 : find_gid_index(ctx, port_num, local);
    if (index < 0) return ENOENT; // the packet was not addressed to one of our GIDs
    ah_attr->grh.sgid_index = static_cast<uint8_t>(index);
    return 0;
}

ibv_ah* emulated::ibv_create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, uint8_t port_num) {
    ibv_ah_attr attr;
    if (int err = emulated::ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr))
        return fail<ibv_ah>(err);
    return emulated::ibv_create_ah(pd, &attr);
}

// The L2 address of a RoCE peer. Emulated hosts have MAC 02:52:<IPv4 address> (for an IPv6
// host, 02:52 and its address's last four bytes: what their node GUID is built from) and no
// VLAN.
int emulated::ibv_resolve_eth_l2_from_gid(ibv_context*, ibv_ah_attr* attr, uint8_t eth_mac[6],
                                          uint16_t* vid) {
    const uint8_t* g = attr->grh.dgid.raw;
    if (!attr->is_global) return EINVAL;
    if (emu::wire::is_multicast_gid(g)) { // a group's MAC, as ib_resolve_eth_dmac gives it
        emu::wire::multicast_mac(g, eth_mac);
        if (vid) *vid = 0xffff;
        return 0;
    }
    eth_mac[0] = 0x02;
    eth_mac[1] = 0x52;
    std::memcpy(eth_mac + 2, g + 12, 4);
    if (vid) *vid = 0xffff;
    return 0;
}
