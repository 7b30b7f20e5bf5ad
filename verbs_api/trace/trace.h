// The verbs trace (RDMAEMU_TRACE=FILE, "%p" in FILE becomes the pid): one line per setup verb
// with its arguments and result, per posted work request and per completion, the same in every
// backend, so a run on the emulator and one on a real NIC can be compared line by line
// (`rdmaemu trace-compare`). Line format, after a time stamp and the thread id:
//   verb NAME(ARGS) = RESULT        wr send|recv|srq_recv ...        wc STATUS ...
//   warn TEXT                       (hardware-mode argument checks)
#pragma once

#include "emu/trace_file.h"

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace verbs::trace {

bool enabled();
void write_line(const char* kind, const std::string& text);

// Counts traced calls on this thread, so only the outermost one is traced: a verb or, since
// librdmacm shares the count (emu/trace_file.h), a CM call and the verbs it makes.
class Nesting {
  public:
    Nesting() : depth_(emu::trace_file::depth()) { ++depth_; }
    ~Nesting() { --depth_; }
    Nesting(const Nesting&) = delete;
    Nesting& operator=(const Nesting&) = delete;
    bool outermost() const { return depth_ == 1; }

  private:
    int& depth_;
};

// Arguments and results as the trace shows them.
void append(std::string& out, const ibv_context* ctx);
void append(std::string& out, const ibv_device* dev);
void append(std::string& out, const ibv_pd* pd);
void append(std::string& out, const ibv_mr* mr);
void append(std::string& out, const ibv_cq* cq);
void append(std::string& out, const ibv_qp* qp);
void append(std::string& out, const ibv_srq* srq);
void append(std::string& out, const ibv_ah* ah);
void append(std::string& out, const ibv_comp_channel* channel);
// A struct the verb reads, shown field by field (other struct pointers, which may be outputs
// the app has not filled, are shown as addresses).
template <typename T> struct Input { const T* value; };
template <typename T> Input<T> input(const T* value) {
    return {value};
}
void append(std::string& out, Input<ibv_qp_init_attr> attr);
void append(std::string& out, Input<ibv_ah_attr> attr);
void append(std::string& out, Input<ibv_srq_init_attr> attr);
// ibv_modify_qp's attributes: only those its mask names are read.
struct QpAttrInput {
    const ibv_qp_attr* attr;
    int mask;
};
void append(std::string& out, QpAttrInput attr);
// An ibv_access_flags argument, shown by its flags' names.
struct AccessFlags {
    int value;
};
void append(std::string& out, AccessFlags flags);
// An ibv_qp_attr_mask argument (ibv_query_qp), shown by its bits' names.
struct QpAttrMask {
    int value;
};
void append(std::string& out, QpAttrMask mask);
// What ibv_get_async_event filled in: the event's name and what it is about.
void append(std::string& out, const ibv_async_event* event);
void append(std::string& out, const char* text);
void append(std::string& out, const void* ptr);
void append(std::string& out, long long value);
void append(std::string& out, unsigned long long value);

template <typename T> void append_value(std::string& out, const T& value) {
    if constexpr (std::is_enum_v<T>)
        append(out, static_cast<long long>(value));
    else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>)
        append(out, static_cast<long long>(value));
    else if constexpr (std::is_integral_v<T>)
        append(out, static_cast<unsigned long long>(value));
    else if constexpr (std::is_class_v<T>)
        append(out, value); // Input<>, QpAttrInput
    else if constexpr (std::is_same_v<T, const char*> || std::is_same_v<T, char*>)
        append(out, static_cast<const char*>(value));
    else if constexpr (std::is_pointer_v<T> &&
                       std::is_class_v<std::remove_cv_t<std::remove_pointer_t<T>>>)
        append(out, static_cast<const std::remove_cv_t<std::remove_pointer_t<T>>*>(value));
    else
        append(out, static_cast<const void*>(value));
}

// Appends ", errno=NAME" for a failed call: NULL pointers, -1.
void append_failure(std::string& out);

template <typename... A> std::string call_text(const char* name, const A&... args) {
    std::string out = name;
    out += '(';
    bool first = true;
    ((out += first ? "" : ", ", first = false, append_value(out, args)), ...);
    out += ')';
    return out;
}

// Writes `call` (call_text, made before the call: a destroy verb frees what it names) with the
// verb's result.
template <typename R> void verb(std::string call, const R& result) {
    call += " = ";
    if constexpr (std::is_pointer_v<R>) {
        if (!result) {
            call += "NULL";
            append_failure(call);
        } else {
            append_value(call, result);
        }
    } else {
        append_value(call, result);
        if constexpr (std::is_signed_v<R>)
            if (result == -1) append_failure(call);
    }
    write_line("verb", call);
}

// A verb traced by hand, for those whose arguments need Input<>: made before the call (only the
// outermost verb of a thread is traced), finished with its result.
class Call {
  public:
    template <typename... A> Call(const char* name, const A&... args) {
        traced_ = nesting_.outermost() && enabled();
        if (traced_) text_ = call_text(name, args...);
    }
    template <typename R> R done(R result) {
        if (traced_) verb(std::move(text_), result);
        return result;
    }
    // The same, followed by what the verb filled in (`filled`, nullptr when it failed).
    template <typename R, typename Out> R done(R result, const Out* filled) {
        if (traced_ && filled) {
            std::string line = std::move(text_) + " = ";
            append_value(line, result);
            line += ' ';
            append(line, filled);
            write_line("verb", line);
            return result;
        }
        return done(result);
    }

  private:
    Nesting nesting_;
    bool traced_ = false;
    std::string text_;
};

// A posted send work request as every trace line shows it, whichever API posted it: the
// classic ibv_send_wr (ops_trace.cpp) or the ibv_wr_* calls (send_ops_trace.cpp). Fields are
// named as the verbs structs name them; what a WR's opcode does not use is left out.
struct SendWr {
    uint32_t qp_num = 0;
    uint64_t wr_id = 0;
    ibv_wr_opcode opcode = IBV_WR_SEND;
    unsigned flags = 0;
    std::vector<ibv_sge> sges; // inline data: its buffers, lkey 0
    bool has_remote = false;   // remote_addr and rkey (RDMA and atomic operations)
    uint64_t remote_addr = 0;
    uint32_t rkey = 0;
    bool has_imm = false; // imm_data, as the app gave it (big-endian)
    uint32_t imm_data = 0;
    bool has_invalidate = false;
    uint32_t invalidate_rkey = 0;
    bool has_atomic = false; // compare_add and swap
    uint64_t compare_add = 0, swap = 0;
    const ibv_ah* ah = nullptr; // UD: the address handle, remote_qpn, remote_qkey
    uint32_t remote_qpn = 0, remote_qkey = 0;
    bool has_srqn = false; // XRC: the target's SRQ
    uint32_t remote_srqn = 0;
};
SendWr send_wr_of(const ibv_qp* qp, const ibv_send_wr& wr);
std::string send_wr_text(const SendWr& wr);
// "recv qp=0x11 ..." / "srq_recv srq=3 ...": `queue` the first words up to the number.
std::string recv_wr_text(const char* queue, const std::string& number, const ibv_recv_wr& wr);
// A completion; its opcode only when it succeeded (ibv_poll_cq(3)).
std::string wc_text(const ibv_wc& wc);
std::string qpn_text(uint32_t qpn); // "0x11", the one QP-number format of the trace

// The per-object ops of the new post-send API (ibv_wr_*, send_ops_trace.cpp) and of extended
// CQ polling (ibv_start_poll/ibv_next_poll, cq_ex_trace.cpp): wrapped when the traced create
// verb made the object, put back before it is destroyed.
void watch_send_ops(ibv_qp* qp);
void forget_send_ops(ibv_qp* qp);
void watch_cq_ex(ibv_cq_ex* cq, uint64_t wc_flags);
void forget_cq_ex(ibv_cq* cq);

// Wraps the context's data-path ops (post_send, post_recv, post_srq_recv, poll_cq) so work
// requests and completions are traced, and the inline verbs of the extended context so they
// are traced like the exported ones; forget_context() before the context is closed.
void watch_context(ibv_context* ctx);
void forget_context(ibv_context* ctx);
// The same for the ops of the extended context (extended_ops_trace.cpp); called by the two above.
void watch_extended_ops(ibv_context* ctx);
void forget_extended_ops(ibv_context* ctx);

} // namespace verbs::trace
