// Why a responder refused a request, from its NIC to the requester's: the NAK carries only the
// error class, this carries which key, range or right. Every NIC of a set binds a unix datagram
// socket in the set's directory (nicsimd --diag-dir DIR: DIR/diag-<address>.sock, mode 0600),
// named by its address; a responder sends the record there before its NAK leaves, so when the
// NAK arrives the record is waiting. Only records from our own uid are taken (SCM_CREDENTIALS).
// A peer that is no host of this set (another machine, a real NIC) has no socket: the requester
// then says what the NAK code means, and nothing more.
#pragma once

#include "emu/wire/ip_address.h"
#include "support/unique_fd.h"

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <sys/types.h>

namespace nicsim {

// Why a responder refused a request, as it tells the requester's NIC (PeerReasons below): the
// NAK says only the error class, this says which key, range or right.
struct PeerReason {
    uint32_t requester_qpn = 0; // the QP the NAK goes to
    uint32_t psn = 0;           // the refused request's
    uid_t owner_uid = 0;        // who owns the responder's QP: `hint` is for that user only
    std::string what;           // "rkey 0xd53a826c names no MR"
    std::string hint;           // "the QP's PD has rkeys ..." (keys: not for other users)
};

class PeerReasons {
  public:
    static constexpr size_t kKept = 64; // records drained and not yet asked for, newest last

    PeerReasons() = default;
    PeerReasons(const PeerReasons&) = delete;
    PeerReasons& operator=(const PeerReasons&) = delete;
    ~PeerReasons(); // removes the socket it bound: `rdmaemu down` leaves only the logs

    // Binds DIR/diag-<self>.sock (an empty `dir`: off). False, with *error, when refused.
    bool open(const std::string& dir, const emu::wire::IpAddress& self, std::string* error);
    bool is_open() const { return static_cast<bool>(fd_); }
    // Sends `r` to the NIC at `peer_addr`; a peer without a socket is skipped.
    void tell(const emu::wire::IpAddress& peer_addr, const PeerReason& r);
    // What the NIC at `peer_addr` said about the refusal of `psn` of our QP `qpn`.
    std::optional<PeerReason> find(const emu::wire::IpAddress& peer_addr, uint32_t qpn,
                                   uint32_t psn);

    static std::string socket_path(const std::string& dir, const emu::wire::IpAddress& addr);

  private:
    struct Kept {
        emu::wire::IpAddress from;
        PeerReason reason;
    };
    void drain();

    UniqueFd fd_;
    std::string dir_;
    emu::wire::IpAddress self_;
    std::deque<Kept> kept_;
};

} // namespace nicsim
