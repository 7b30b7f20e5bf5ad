#include "cm_config.h"

#include "nic/device.h"

namespace nicsim::cm {

CmConfig config_for(const Device& device) {
    const Config& c = device.config();
    CmConfig cm;
    cm.local_addr = c.address;
    cm.hosts = c.hosts;
    cm.node_guid = device.node_guid();
    cm.mtu = device.active_mtu();
    cm.ack_delay = device.device_attr().local_ca_ack_delay;
    cm.response_timeout = c.cm_response_timeout;
    cm.max_retries = c.cm_retries;
    return cm;
}

} // namespace nicsim::cm
