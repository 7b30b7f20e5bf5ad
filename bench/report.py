#!/usr/bin/env python3
"""Parses the raw outputs bench/run.sh left in its work directory and prints the table.

usage: report.py WORKDIR [--markdown]

WORKDIR holds, per measurement, the program's own output, named by run.sh:
  meta.txt                     key=value lines: date, machine, load, build, mode, sizes
  lat.<op>.<size>.cli          perftest ib_<op>_lat client output (op: send, write, read)
  bw.<op>.<size>.cli           perftest ib_<op>_bw client output
  sockperf.<size>.out          sockperf ping-pong over TCP
  iperf3.<size>.json           iperf3 -J client output
  memcpy.<size>.out            bench/memcpy_bw output
A missing or unparsable file shows as "failed" in the table; nothing here raises on bad input.
"""

import json
import math
import re
import sys
from pathlib import Path

MIB = 1 << 20


def read(path):
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return None


def strip_ansi(text):
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def to_float(s):
    try:
        v = float(s)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


# perftest ------------------------------------------------------------------------------------
# The result table is a header line starting with "#bytes", then one data line of numbers. The
# column names hold blanks ("BW peak[MB/sec]", "99% percentile[usec]") and are separated by
# varying blanks, so a name is the run of words up to one that starts with "#" or holds "]".
# perftest's MB/sec is MiB/s (format factor 0x100000); latencies are usec, one-way (RTT/2) for
# send/write and a full round trip for read.
def parse_perftest(text):
    if not text:
        return None
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not line.strip().startswith("#bytes"):
            continue
        names, words = [], []
        for word in line.split():
            words.append(word)
            if word.startswith("#") or "]" in word:
                names.append(" ".join(words))
                words = []
        if words:
            names.append(" ".join(words))
        for data in lines[i + 1:i + 4]:
            fields = data.split()
            if len(fields) < 3 or not fields[0].isdigit():
                continue
            values = [to_float(f) for f in fields]
            if len(values) < len(names):
                continue
            return {name: values[k] for k, name in enumerate(names)}
    return None


def perftest_col(cols, *prefixes):
    """The first column whose name starts with one of prefixes (names vary across versions)."""
    if not cols:
        return None
    for p in prefixes:
        for name, value in cols.items():
            if name.startswith(p):
                return value
    return None


# sockperf ------------------------------------------------------------------------------------
# "====> avg-latency=8.011 (std-dev=35.308)" (avg-lat= in older versions) and
# "---> percentile 50.000 =    7.290"; one-way latency (RTT/2) in usec.
def parse_sockperf(text):
    if not text:
        return None
    text = strip_ansi(text)
    out = {}
    m = re.search(r"avg-lat(?:ency)?\s*=\s*([0-9.]+)", text)
    if m:
        out["avg"] = to_float(m.group(1))
    for m in re.finditer(r"percentile\s+([0-9.]+)\s*=\s*([0-9.]+)", text):
        out["p" + str(to_float(m.group(1)))] = to_float(m.group(2))
    return out if "avg" in out else None


# iperf3 --------------------------------------------------------------------------------------
def parse_iperf3(text):
    if not text:
        return None
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    if not isinstance(doc, dict) or doc.get("error"):
        return None
    end = doc.get("end", {})
    for key in ("sum_received", "sum_sent", "sum"):
        bps = to_float(end.get(key, {}).get("bits_per_second"))
        if bps:
            return bps / 8 / MIB
    return None


def parse_memcpy(text):
    if not text:
        return None
    m = re.search(r"^memcpy_bw\s+\d+\s+([0-9.]+)", text, re.M)
    return to_float(m.group(1)) if m else None


# the table -----------------------------------------------------------------------------------
def size_label(n):
    n = int(n)
    return f"{n // 1024} KiB" if n >= 1024 and n % 1024 == 0 else f"{n} B"


def fmt(v):
    if v is None:
        return "failed"
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def ratio(a, b):
    if a is None or b is None or b == 0:
        return "-"
    r = a / b
    return f"{r:.3f}x" if r < 0.1 else f"{r:.2f}x" if r < 10 else f"{r:.1f}x"


def load_meta(work):
    meta = {}
    for line in (read(work / "meta.txt") or "").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            meta[key.strip()] = value.strip()
    return meta


def build_rows(work, meta):
    rows = []  # (metric, unit, rdmaemu, tcp_label, tcp, memcpy)
    lat_sizes = meta.get("lat_sizes", "").split()
    bw_sizes = meta.get("bw_sizes", "").split()
    for size in lat_sizes:
        sp_size = max(int(size), 14)  # sockperf's smallest message is 14 bytes
        sp = parse_sockperf(read(work / f"sockperf.{sp_size}.out")) or {}
        for op in ("send", "write", "read"):
            cols = parse_perftest(read(work / f"lat.{op}.{size}.cli"))
            median = perftest_col(cols, "t_typical")
            p99 = perftest_col(cols, "99% percentile")
            # read is a full round trip in perftest; sockperf reports RTT/2.
            k = 2 if op == "read" else 1
            what = "RTT" if op == "read" else "1-way"
            tcp_med = sp.get("p50.0") and sp["p50.0"] * k
            tcp_p99 = sp.get("p99.0") and sp["p99.0"] * k
            label = f"sockperf {sp_size} B"
            rows.append((f"ib_{op}_lat {size_label(size)} median ({what})", "usec", median,
                         label, tcp_med, None))
            rows.append((f"ib_{op}_lat {size_label(size)} p99 ({what})", "usec", p99, label,
                         tcp_p99, None))
    for size in bw_sizes:
        tcp = parse_iperf3(read(work / f"iperf3.{size}.json"))
        mem = parse_memcpy(read(work / f"memcpy.{size}.out"))
        for op in ("send", "write", "read"):
            cols = parse_perftest(read(work / f"bw.{op}.{size}.cli"))
            avg = perftest_col(cols, "BW average")
            rows.append((f"ib_{op}_bw {size_label(size)} average", "MiB/s", avg,
                         f"iperf3 -l {size_label(size)}", tcp, mem))
    return rows


def render(rows, markdown):
    head = ("metric", "unit", "rdmaemu", "TCP loopback", "TCP", "rdmaemu/TCP", "memcpy",
            "rdmaemu/memcpy")
    table = []
    for metric, unit, emu, tcp_label, tcp, mem in rows:
        table.append((metric, unit, fmt(emu), tcp_label, fmt(tcp), ratio(emu, tcp),
                      "-" if mem is None and "bw" not in metric else fmt(mem), ratio(emu, mem)))
    if markdown:
        lines = ["| " + " | ".join(head) + " |",
                 "|" + "|".join(["---", "---", "---:", "---", "---:", "---:", "---:", "---:"]) +
                 "|"]
        lines += ["| " + " | ".join(r) + " |" for r in table]
        return "\n".join(lines)
    widths = [max(len(r[i]) for r in [head] + table) for i in range(len(head))]
    right = {2, 4, 5, 6, 7}

    def line(r):
        return "  ".join(c.rjust(widths[i]) if i in right else c.ljust(widths[i])
                         for i, c in enumerate(r)).rstrip()
    return "\n".join([line(head), line(tuple("-" * w for w in widths))] +
                     [line(r) for r in table])


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    work = Path(argv[1])
    markdown = "--markdown" in argv[2:]
    meta = load_meta(work)
    rows = build_rows(work, meta)
    if not rows:
        print(f"report.py: nothing to report in {work} (meta.txt missing?)", file=sys.stderr)
        return 1
    print(f"rdmaemu benchmark, {meta.get('date', '?')}, {meta.get('mode', '?')} run")
    print(f"machine: {meta.get('cpu', '?')}, {meta.get('nproc', '?')} CPUs; "
          f"load average before {meta.get('load_before', '?')}, after "
          f"{meta.get('load_after', '?')}")
    print(f"build: {meta.get('build', '?')} ({meta.get('build_type', '?')}); source tree at git "
          f"{meta.get('git', '?')}; emulated MTU {meta.get('mtu', '?')}")
    print()
    print(render(rows, markdown))
    print()
    print("Ratios are rdmaemu/baseline: for latency above 1 means rdmaemu is slower, for "
          "bandwidth below 1 means it is slower.")
    print("These are the numbers of an emulator (two nicsimd daemons on one machine), not of "
          "RDMA hardware.")
    failed = sum(1 for r in rows if r[2] is None)
    if failed:
        print(f"{failed} rdmaemu measurement(s) failed; raw outputs in {work}")
    retried = sorted(p.name[:-len(".cli.try1")] for p in work.glob("*.cli.try1"))
    if retried:
        tries = len(list(work.glob("*.cli.try*")))
        print(f"perftest runs that failed and were retried ({tries} failed tries): "
              f"{', '.join(retried)}; their outputs are *.tryN in {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
