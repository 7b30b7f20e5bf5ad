"""The targets of issue 10 ("Fast"), each row with the value a run measured and how it stands
against the issue's "must reach" and "aim" columns. "at filing" is the issue's "today" column:
the figure before the fast path."""

from collections import namedtuple

# measure: what; filed: the figure before the fast path; higher: True when bigger is
# better; must, aim: the thresholds; unit: how the value prints ("x" a ratio, else a unit);
# part: the part of the run that measures it; value: results -> (value or None, note).
Target = namedtuple("Target", "measure filed higher must aim unit part value")


def _ratio(a, b):
    return a / b if a is not None and b else None


class NotRun(Exception):
    """The run did not measure this (--quick measures fewer sizes)."""


def _table(r, kind, key):
    t = r["table"] or {}
    if key not in t.get(kind, {}):
        raise NotRun()
    return t


def bw_vs_tcp(op, size):
    def value(r):
        t = _table(r, "bw", (op, size))
        return (_ratio(t["bw"][(op, size)], t["iperf3"].get(size)), "")
    return value


def lat_vs_sockperf(op):
    def value(r):
        t = _table(r, "lat", (op, 2))
        median = t["lat"][(op, 2)][0]
        return (_ratio(median, (t["sockperf"].get(2) or {}).get("p50.0")), "")
    return value


def write_lat_tail(r):
    median, p99 = _table(r, "lat", ("write", 4096))["lat"][("write", 4096)]
    return (_ratio(p99, median), "")


def same_host(r):
    emu, mem = r["samehost"] or (None, None)
    return (_ratio(emu, mem), "")


def qps_vs_one(q):
    def value(r):
        by_q = {row[0]: row[3] for row in r["qps"] or []}
        return (_ratio(by_q.get(q), by_q.get(1)), "")
    return value


def syscalls_per_wr(what, tcp):
    def value(r):
        s = (r["syscalls"] or {})
        mine, theirs = s.get(what), s.get(tcp)
        note = f"TCP {theirs['total']:.2f}" if theirs else ""
        return (mine["total"] if mine else None, note)
    return value


def qp_memory(r):
    m = r["qpmem"]
    if not m:
        return (None, "")
    return (m["rss_kib"], f"PSS {m['pss_kib']:.1f} KiB")


TARGETS = [
    Target("ib_write_bw 64 KiB vs iperf3 TCP loopback", "0.018x", True, 0.5, 1.0, "x", "table",
           bw_vs_tcp("write", 65536)),
    Target("ib_send_bw 64 KiB vs iperf3 TCP loopback", "0.018x", True, 0.5, 1.0, "x", "table",
           bw_vs_tcp("send", 65536)),
    Target("ib_read_bw 64 KiB vs iperf3 TCP loopback", "0.018x", True, 0.5, 1.0, "x", "table",
           bw_vs_tcp("read", 65536)),
    Target("ib_write_bw 4 KiB vs iperf3 -l 4K", "0.05x", True, 0.5, 1.0, "x", "table",
           bw_vs_tcp("write", 4096)),
    Target("ib_send_bw 4 KiB vs iperf3 -l 4K", "0.05x", True, 0.5, 1.0, "x", "table",
           bw_vs_tcp("send", 4096)),
    Target("ib_read_bw 4 KiB vs iperf3 -l 4K", "0.05x", True, 0.5, 1.0, "x", "table",
           bw_vs_tcp("read", 4096)),
    Target("ib_send_lat 2 B median vs sockperf TCP one-way", "4.35x", False, 1.0, 0.5, "x",
           "table", lat_vs_sockperf("send")),
    Target("ib_write_lat 2 B median vs sockperf TCP one-way", "4.35x", False, 1.0, 0.5, "x",
           "table", lat_vs_sockperf("write")),
    Target("ib_write_lat 4 KiB p99 / median", "21x", False, 5.0, 2.0, "x", "table",
           write_lat_tail),
    Target("same host, ib_write_bw 64 KiB vs memcpy", "-", True, 0.3, 0.5, "x", "samehost",
           same_host),
    Target("ib_write_bw -q 100 total vs -q 1", "0.02x", True, 0.8, 1.0, "x", "qps",
           qps_vs_one(100)),
    Target("ib_write_bw -q 1000 total vs -q 1", "did not finish", True, 0.8, 1.0, "x", "qps",
           qps_vs_one(1000)),
    Target("app syscalls per WR, steady ib_write_bw 64 KiB", "~60", False, 0.01, 0, "",
           "syscalls", syscalls_per_wr("write_bw", "iperf3")),
    Target("app syscalls per WR, steady ib_send_lat 2 B", "~60", False, 0.01, 0, "",
           "syscalls", syscalls_per_wr("send_lat", "sockperf")),
    Target("daemon memory per idle RC QP (RSS)", "~10 KiB", False, 16, 8, " KiB", "qpmem",
           qp_memory),
]

# A syscall count per WR this small prints as 0.000: the aim "0" is met.
ZERO = 0.0005


def meets(value, threshold, higher):
    if higher:
        return value >= threshold
    return value <= max(threshold, ZERO)


def verdict(t, value):
    if value is None:
        return "failed"
    if meets(value, t.aim, t.higher):
        return "meets aim"
    if meets(value, t.must, t.higher):
        return "meets must"
    return "misses must"


def threshold_text(t, v):
    sign = ">=" if t.higher else "<="
    if t.unit == "x":
        return f"{sign} {v:g}x"
    if v == 0 and not t.higher:
        return "0"
    return f"{sign} {v:g}{t.unit}"


def value_text(t, v):
    if v is None:
        return "failed"
    if t.unit == "x":
        return f"{v:.3f}x" if v < 0.1 else f"{v:.2f}x" if v < 10 else f"{v:.1f}x"
    if t.unit == "":
        return f"{v:.3f}" if v < 10 else f"{v:.1f}"
    return f"{v:.1f}{t.unit}"


def rows(results):
    """(measure, at filing, must, aim, measured, verdict, note) per target."""
    out = []
    for t in TARGETS:
        if t.part not in results["parts"]:  # a part not asked for (--only, --quick)
            out.append((t.measure, t.filed, threshold_text(t, t.must), threshold_text(t, t.aim),
                        "-", "not run", ""))
            continue
        try:
            v, note = t.value(results)
        except NotRun:
            out.append((t.measure, t.filed, threshold_text(t, t.must),
                        threshold_text(t, t.aim), "-", "not run", ""))
            continue
        except (KeyError, TypeError, ValueError, ZeroDivisionError):
            v, note = None, ""
        out.append((t.measure, t.filed, threshold_text(t, t.must), threshold_text(t, t.aim),
                     value_text(t, v), verdict(t, v), note))
    return out
