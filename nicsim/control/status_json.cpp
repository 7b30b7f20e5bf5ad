#include "status_json.h"

#include "session.h"

#include <cstdio>
#include <unistd.h>

namespace nicsim {

std::string json_escape(const std::string& s) {
    std::string out;
    for (unsigned char ch : s) {
        if (ch == '"' || ch == '\\') {
            out += '\\';
            out += static_cast<char>(ch);
        } else if (ch < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", ch);
            out += buf;
        } else {
            out += static_cast<char>(ch);
        }
    }
    return out;
}

std::string host_status_json(const Nic& nic, const std::vector<const Session*>& sessions) {
    const Device& dev = nic.device();
    std::string j = "{\"device\":\"" + json_escape(dev.name()) + "\",\"address\":\"" +
                    dev.address_string() + "\",\"gid\":\"" + dev.gid_string() +
                    "\",\"daemon_pid\":" + std::to_string(::getpid()) +
                    ",\"mtu\":" + std::to_string(dev.config().mtu) + ",\"sessions\":[";
    bool first = true;
    for (const Session* s : sessions) {
        if (!s->is_context()) continue; // probes (device lists, status) own nothing
        if (!first) j += ",";
        first = false;
        j += "{\"session\":" + std::to_string(s->id()) + ",\"pid\":" + std::to_string(s->pid()) +
             ",\"comm\":\"" + json_escape(s->comm()) + "\",\"kind\":\"context\",\"objects\":" +
             s->objects().counts_json() + "}";
    }
    return j + "]}";
}

} // namespace nicsim
