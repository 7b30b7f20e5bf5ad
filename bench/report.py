#!/usr/bin/env python3
"""Prints the tables of a bench/run.sh run: the issue's targets against what was measured, then
each part's own table.

usage: report.py WORKDIR [--markdown]

WORKDIR is run.sh's work directory (meta.txt and each program's raw output; collect.py names
them). A missing or unparsable output shows as "failed"; nothing here raises on bad input.
"""

import sys
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(Path(__file__).resolve().parent))

import targets  # noqa: E402
from collect import collect, size_label, sockperf_size  # noqa: E402


def fmt(v):
    if v is None:
        return "failed"
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    if v >= 0.1:
        return f"{v:.2f}"
    return f"{v:.3f}"


def ratio(a, b):
    if a is None or b is None or b == 0:
        return "-"
    r = a / b
    return f"{r:.3f}x" if r < 0.1 else f"{r:.2f}x" if r < 10 else f"{r:.1f}x"


def render(head, rows, markdown, left=(0,)):
    """A table; columns not in left are right-aligned numbers."""
    rows = [tuple(str(c) for c in r) for r in rows]
    if markdown:
        align = ["---" if i in left else "---:" for i in range(len(head))]
        return "\n".join(["| " + " | ".join(head) + " |", "|" + "|".join(align) + "|"] +
                         ["| " + " | ".join(r) + " |" for r in rows])
    widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]

    def line(r):
        return "  ".join(c.ljust(widths[i]) if i in left else c.rjust(widths[i])
                         for i, c in enumerate(r)).rstrip()
    return "\n".join([line(head), line(tuple("-" * w for w in widths))] + [line(r) for r in rows])


# The parts' tables ---------------------------------------------------------------------------
def main_table(r):
    """The perftest table: latency and bandwidth next to TCP loopback and memcpy."""
    t = r["table"]
    rows = []
    for (op, size), (median, p99) in t["lat"].items():
        sp = t["sockperf"].get(size) or {}
        k = 2 if op == "read" else 1  # perftest's read is a round trip; sockperf's RTT/2
        what = "RTT" if op == "read" else "1-way"
        label = f"sockperf {sockperf_size(size)} B"
        for name, emu, tcp in (("median", median, sp.get("p50.0")), ("p99", p99, sp.get("p99.0"))):
            tcp = tcp * k if tcp is not None else None
            rows.append((f"ib_{op}_lat {size_label(size)} {name} ({what})", "usec", fmt(emu),
                         label, fmt(tcp), ratio(emu, tcp), "-", "-"))
    for (op, size), emu in t["bw"].items():
        tcp, mem = t["iperf3"].get(size), t["memcpy"].get(size)
        rows.append((f"ib_{op}_bw {size_label(size)} average", "MiB/s", fmt(emu),
                     f"iperf3 -l {size_label(size)}", fmt(tcp), ratio(emu, tcp), fmt(mem),
                     ratio(emu, mem)))
    if r["samehost"]:
        emu, mem = r["samehost"]
        two = t["bw"].get(("write", 65536))
        rows.append(("ib_write_bw 64 KiB, same host", "MiB/s", fmt(emu), "(two hosts)",
                     fmt(two), ratio(emu, two), fmt(mem), ratio(emu, mem)))
    head = ("metric", "unit", "rdmaemu", "TCP loopback", "TCP", "rdmaemu/TCP", "memcpy",
            "rdmaemu/memcpy")
    return head, rows, (0, 1, 3)


def same_host_table(r):
    emu, mem = r["samehost"]
    return (("metric", "unit", "rdmaemu", "memcpy", "rdmaemu/memcpy"),
            [("ib_write_bw 64 KiB, both ends on host 1", "MiB/s", fmt(emu), fmt(mem),
              ratio(emu, mem))], (0, 1))


def qps_table(r):
    rows = []
    one = next((row[3] for row in r["qps"] if row[0] == 1), None)
    for q, iters, depth, bw, secs, rounds in r["qps"]:
        rows.append((f"-q {q}", iters if iters else "failed", depth or "?", fmt(bw),
                     ratio(bw, one), " / ".join(fmt(b) for b in rounds),
                     f"{secs:.1f}" if secs is not None else "-"))
    head = ("ib_write_bw 64 KiB", "messages", "TX depth", "total MiB/s (median)", "vs -q 1",
            "each round", "client s (incl. setup)")
    return head, rows, (0, 5)


SYSCALL_ROWS = (
    ("write_bw", "rdmaemu ib_write_bw 64 KiB", "WR"),
    ("iperf3", "TCP iperf3 -l 64 KiB", "write"),
    ("send_lat", "rdmaemu ib_send_lat 2 B", "round trip"),
    ("sockperf", "TCP sockperf ping-pong 14 B", "round trip"),
)


def syscalls_table(r):
    rows = []
    for key, label, per in SYSCALL_ROWS:
        s = r["syscalls"].get(key)
        if not s:
            rows.append((label, per, "failed", "failed", "failed", ""))
            continue
        (m0, c0), (m1, c1) = s["runs"]
        # Signed: a syscall the longer run made fewer of (iperf3's select) shows negative.
        top = sorted(((abs(v), v, n) for n, v in s["by_name"].items() if abs(v) >= 0.005),
                     reverse=True)
        parts = [f"{n} {v:.2f}" for _, v, n in top[:4]]
        other = s["total"] - sum(v for _, v, _ in top)
        if abs(other) >= 0.005:
            parts.append(f"other {other:.2f}")
        rows.append((label, per, f"{m0} / {m1}", f"{c0['total']} / {c1['total']}",
                     f"{s['total']:.3f}", ", ".join(parts) or "-"))
    head = ("client", "per", "messages (2 runs)", "syscalls (2 runs)", "syscalls per message",
            "of which")
    return head, rows, (0, 1, 5)


def sweep_bw_table(r):
    cap = int(r["meta"].get("sweep_tcp_max_write", 1 << 20))
    rows = [(size_label(s), fmt(e), fmt(t) + (f" (-l {size_label(cap)})" if s > cap else ""),
             ratio(e, t)) for s, e, t in r["sweep"]["bw"]]
    return ("size", "ib_write_bw MiB/s", "iperf3 -l SIZE MiB/s", "rdmaemu/TCP"), rows, (0,)


def sweep_lat_table(r):
    rows = [(size_label(s), fmt(m), fmt(p), fmt(tm), fmt(tp), ratio(m, tm))
            for s, m, p, tm, tp in r["sweep"]["lat"]]
    head = ("size", "ib_write_lat median", "p99", "sockperf median", "p99", "median ratio")
    return head, rows, (0,)


def qp_memory_table(r):
    m = r["qpmem"]
    st = m["stages"]
    rows = [(stage, st[stage][0], st[stage][1], st[stage][2]) for stage in
            ("base", "created", "connected") if stage in st]
    rows.append(("per QP (connected - base)", "", f"{m['rss_kib']:.1f}", f"{m['pss_kib']:.1f}"))
    return ("host 1 daemon", "QPs", "RSS KiB", "PSS KiB"), rows, (0,)


def stacks_table(r):
    """UCX and MPI next to perftest and TCP of the same run (when the table ran)."""
    st, t = r["stacks"], r["table"] or {}
    lat = {op_size: v[0] for op_size, v in t.get("lat", {}).items()}
    small = min((size for (op, size) in lat if op == "send"), default=None)
    send_lat = lat.get(("send", small)) if small is not None else None
    sock = (t.get("sockperf", {}).get(small) or {}).get("p50.0") if small is not None else None
    send_bw = t.get("bw", {}).get(("send", 65536))
    tcp_bw = t.get("iperf3", {}).get(65536)
    tl, tb, np = st["tag_lat"] or {}, st["tag_bw"] or {}, st["netpipe"] or {}
    mib = tb.get("bw_mb")  # UCX's MB/s are 2^20 bytes
    small_label = size_label(small) if small is not None else "?"
    rows = [
        ("ucx_perftest tag_lat 8 B typical (1-way)", "usec", fmt(tl.get("typical_us")),
         f"ib_send_lat {small_label} median", fmt(send_lat), ratio(tl.get("typical_us"), send_lat),
         fmt(sock), ratio(tl.get("typical_us"), sock)),
        ("ucx_perftest tag_bw 64 KiB", "MiB/s", fmt(mib), "ib_send_bw 64 KiB", fmt(send_bw),
         ratio(mib, send_bw), fmt(tcp_bw), ratio(mib, tcp_bw)),
        ("NPopenmpi 1 B (1-way)", "usec", fmt(np.get("lat_us")),
         f"ib_send_lat {small_label} median", fmt(send_lat), ratio(np.get("lat_us"), send_lat),
         fmt(sock), ratio(np.get("lat_us"), sock)),
        ("NPopenmpi peak (to 1 MiB)", "MiB/s", fmt(np.get("peak_mib")), "ib_send_bw 64 KiB",
         fmt(send_bw), ratio(np.get("peak_mib"), send_bw), fmt(tcp_bw),
         ratio(np.get("peak_mib"), tcp_bw)),
    ]
    if not r["table"]:  # the baselines' columns say why they are empty
        rows = [row[:4] + ("not run", "-", "not run", "-") for row in rows]
    head = ("metric", "unit", "stack", "perftest", "perftest figure", "stack/perftest", "TCP",
            "stack/TCP")
    return head, rows, (0, 1, 3)


def targets_table(r):
    head = ("measure", "at filing", "must reach", "aim", "measured", "verdict", "note")
    return head, targets.rows(r), (0, 1, 2, 3, 5, 6)


def sections(r):
    """(title, table function) for the tables this run has data for."""
    out = [("Targets of issue 10 (ratios rdmaemu/baseline, one run)", targets_table)]
    if r["table"]:
        out.append(("rdmaemu next to TCP loopback and memcpy", main_table))
    elif r["samehost"]:
        out.append(("Same host", same_host_table))
    if r["qps"]:
        out.append(("Many QPs", qps_table))
    if r["syscalls"]:
        out.append((f"Application syscalls per message "
                    f"(counted by {r['meta'].get('syscall_counter', '?')})", syscalls_table))
    if r["qpmem"]:
        out.append((f"NIC daemon memory for {r['qpmem']['qps']} idle RC QPs", qp_memory_table))
    if r["stacks"]:
        out.append(("UCX and Open MPI over UCX (TCP: sockperf median and iperf3 -l 64 KiB)",
                    stacks_table))
    if r["sweep"]:
        out.append(("Bandwidth against message size", sweep_bw_table))
        out.append(("One-way latency against message size (usec)", sweep_lat_table))
    return out


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    work = Path(argv[1])
    markdown = "--markdown" in argv[2:]
    r = collect(work)
    meta = r["meta"]
    if not meta:
        print(f"report.py: nothing to report in {work} (meta.txt missing?)", file=sys.stderr)
        return 1
    print(f"rdmaemu benchmark, {meta.get('date', '?')}, {meta.get('mode', '?')} run "
          f"({meta.get('parts', '?')}), {meta.get('seconds', '?')} s")
    print(f"machine: {meta.get('cpu', '?')}, {meta.get('nproc', '?')} CPUs; "
          f"load average before {meta.get('load_before', '?')}, after "
          f"{meta.get('load_after', '?')}")
    print(f"build: {meta.get('build', '?')} ({meta.get('build_type', '?')}); source tree at git "
          f"{meta.get('git', '?')}; emulated MTU {meta.get('mtu', '?')}, NIC --poll-us "
          f"{meta.get('poll_us', 'default')}, --scheduling {meta.get('scheduling', 'normal')} "
          f"({meta.get('scheduling_got', '?')}); "
          f"perftest {meta.get('perftest', '?')}")
    for title, fn in sections(r):
        print()
        print(f"### {title}" if markdown else f"{title}:")
        print()
        try:
            head, rows, left = fn(r)
            print(render(head, rows, markdown, left))
        except (KeyError, TypeError, ValueError, IndexError, ZeroDivisionError) as e:
            print(f"(this table could not be made: {type(e).__name__} {e})")
    print()
    print("Ratios are rdmaemu/baseline: for latency above 1 means rdmaemu is slower, for "
          "bandwidth below 1 means it is slower.")
    print("These are the numbers of an emulator (two nicsimd daemons on one machine), not of "
          "RDMA hardware.")
    failed = sum(1 for row in targets.rows(r) if row[5] == "failed")
    if failed:
        print(f"{failed} target measurement(s) failed; raw outputs in {work}")
    retried = sorted(p.name[:-len(".cli.try1")] for p in work.glob("*.cli.try1"))
    if retried:
        tries = len(list(work.glob("*.cli.try*")))
        print(f"perftest runs that failed and were retried ({tries} failed tries): "
              f"{', '.join(retried)}; their outputs are *.tryN in {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
