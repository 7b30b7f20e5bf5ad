// Seeded, reproducible fault injection for a host's outgoing packets: drop, duplicate, reorder,
// corrupt and delay, each decided per packet. The same seed and config give the same sequence of
// decisions on every machine and standard library (a fixed PRNG, no <random> distributions).
//
// Suggested use in the sender (one FaultInjector per host, called from its one event loop):
//
//     auto d = faults.decide();
//     if (d.drop) return;                                  // send nothing
//     if (d.corrupt) faults.corrupt(udp_payload, len);    // ICRC now fails at the receiver
//     int copies = d.duplicate ? 2 : 1;                    // each copy goes out the same way
//     for (auto& p : reorder.push(packet, d.reorder))      // a held packet goes after the next
//         send_after(d.delay_us, p);                       // one; arm a timer to flush() it
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace nicsim {

// Probabilities are in [0, 1] and applied independently to each packet; `delay_us` is a fixed
// extra latency for every packet that is sent. `seed` selects the decision sequence.
struct FaultConfig {
    double drop = 0, duplicate = 0, reorder = 0, corrupt = 0;
    uint32_t delay_us = 0;
    uint64_t seed = 0;

    // True when any fault or delay is configured; false means decide() always returns "send it
    // once, now, unchanged", so the caller may skip the injector altogether.
    bool any() const;
};

// Parses a probability option value ("0", "0.05", "1", "5e-2"): the whole string must be a
// finite decimal number in [0, 1]. Rejects empty strings, signs, spaces, NaN, inf and trailing
// text.
std::optional<double> parse_probability(std::string_view text);

class FaultInjector {
  public:
    // What to do with one outgoing packet. When `drop` is set the other fields are all cleared
    // (nothing is sent), so at most one of "drop" and the rest applies.
    struct Decision {
        bool drop = false;      // send nothing
        bool duplicate = false; // send the packet twice
        bool reorder = false;   // hold it and send it after the next packet (see ReorderBuffer)
        bool corrupt = false;   // flip one bit of the UDP payload first (call corrupt())
        uint32_t delay_us = 0;  // extra latency before sending (the caller schedules)

        // True when the packet goes out once, now and unchanged.
        bool clean() const { return !drop && !duplicate && !reorder && !corrupt && !delay_us; }
    };

    // The config's probabilities must be in [0, 1] (values outside are clamped; NaN counts as 0).
    // `host` (the sending host's IPv4 address) picks the host's own streams of the seed, so two
    // hosts started with one seed do not drop, duplicate or corrupt in lockstep.
    explicit FaultInjector(const FaultConfig& config, uint32_t host = 0);

    // The fate of the next packet. Cheap and allocation-free: four PRNG draws per call whatever
    // the config, so packet n's fate depends only on the seed, the host, the probabilities and n.
    Decision decide();

    // Flips one bit (uniformly chosen among all len * 8 bits) of `packet` and returns which
    // (bit 0 is the first byte's least significant); the caller passes the UDP payload, so the
    // receiver's ICRC check catches it. Does nothing when len == 0 (returns 0). Draws from a
    // stream of its own, so calling it does not shift the decide() sequence.
    size_t corrupt(uint8_t* packet, size_t len);

    const FaultConfig& config() const { return config_; }

  private:
    // xoroshiro128** (Blackman, Vigna 2018), seeded through splitmix64.
    struct Rng {
        explicit Rng(uint64_t seed);
        uint64_t next();
        uint64_t s[2];
    };

    // A probability as a threshold on 53-bit uniform integers: p = 1 always hits, p = 0 never.
    static uint64_t threshold(double p);
    bool hit(uint64_t threshold) { return (decisions_.next() >> 11) < threshold; }

    FaultConfig config_;
    uint64_t drop_, duplicate_, reorder_, corrupt_;
    Rng decisions_;
    Rng corruption_;
};

// Holds at most one packet back so that it goes out after the next one: push(p, hold) returns
// the packets to send now, in order. `Packet` is any movable, default-constructible type (bytes,
// or bytes plus a destination); std::vector<uint8_t> by default.
//
//   nothing held, hold = false -> [p]
//   nothing held, hold = true  -> []       (p is held)
//   h held,       hold = false -> [p, h]   (h went out after the next packet)
//   h held,       hold = true  -> [p, h]   (only one packet is ever held: p's hold is ignored,
//                                           so reorder = 1 swaps packets pairwise: 2 1 4 3 ...)
//
// A packet is never lost or duplicated. If traffic stops, the held packet waits forever: the
// caller arms a timer while holding() and sends flush()'s packet when it fires, and flushes
// before shutdown.
template <class Packet = std::vector<uint8_t>> class ReorderBuffer {
  public:
    // Up to two packets to send now, in order; iterate with range-for.
    struct Ready {
        std::array<Packet, 2> packets;
        size_t count = 0;
        Packet* begin() { return packets.data(); }
        Packet* end() { return packets.data() + count; }
        size_t size() const { return count; }
        bool empty() const { return count == 0; }
    };

    Ready push(Packet packet, bool hold) {
        Ready out;
        if (held_) {
            out.packets[0] = std::move(packet);
            out.packets[1] = std::move(*held_);
            out.count = 2;
            held_.reset();
        } else if (hold) {
            held_.emplace(std::move(packet));
        } else {
            out.packets[0] = std::move(packet);
            out.count = 1;
        }
        return out;
    }

    // Gives up the held packet (to send it now), if any.
    std::optional<Packet> flush() {
        std::optional<Packet> out = std::move(held_);
        held_.reset();
        return out;
    }

    bool holding() const { return held_.has_value(); }

  private:
    std::optional<Packet> held_;
};

} // namespace nicsim
