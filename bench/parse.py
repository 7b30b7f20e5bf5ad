"""Parsers for the outputs bench/run.sh collects: text in, numbers out. Each returns None (or an
empty list) for missing or garbled input and never raises: a bad output is a "failed" cell in
the report, not a crash."""

import json
import math
import re
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
# send/write and a full round trip for read. With -H the first "#bytes" line is followed by the
# samples ("#, usec", then "N, usec" lines) and the summary comes after a second one.
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


def perftest_bw(cols):
    """Average MiB/s. perftest prints it with two decimals (0.20 at 2 bytes) and the message
    rate in Mpps with six (0.000047 at 8 MiB): whichever of the two has more digits wins."""
    avg = perftest_col(cols, "BW average")
    rate = perftest_col(cols, "MsgRate")
    size = perftest_col(cols, "#bytes")
    if rate and size and (not avg or 0.005 / avg > 0.0000005 / rate):
        return rate * 1e6 * size / MIB
    return avg


def perftest_samples(text):
    """The latencies -H prints, one per iteration, in usec (perftest sorts them)."""
    if not text:
        return []
    out = []
    for m in re.finditer(r"^\s*\d+,\s*([0-9.]+)\s*$", text, re.M):
        v = to_float(m.group(1))
        if v is not None:
            out.append(v)
    return out


def perftest_header(text, key):
    """A value from perftest's parameter block, e.g. "TX depth" -> "128"."""
    m = re.search(r"^\s*" + re.escape(key) + r"\s*:\s*(\S+)", text or "", re.M)
    return m.group(1) if m else None


# sockperf ------------------------------------------------------------------------------------
# "====> avg-latency=8.011 (std-dev=35.308)" (avg-lat= in older versions),
# "---> percentile 50.000 =    7.290" and "<MAX> observation = ..."; one-way latency (RTT/2)
# in usec. "[Total Run] RunTime=1.008 sec; ... SentMessages=13972" counts the warm-up too.
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
    m = re.search(r"<MAX> observation\s*=\s*([0-9.]+)", text)
    if m:
        out["max"] = to_float(m.group(1))
    m = re.search(r"\[Total Run\].*?SentMessages=(\d+)", text)
    if m:
        out["sent"] = int(m.group(1))
    return out if "avg" in out else None


def sockperf_samples(text):
    """The latencies of --full-log's CSV ("packet, txTime(sec), rxTime(sec), latency(usec)")."""
    if not text:
        return []
    out = []
    for m in re.finditer(r"^\d+,\s*[0-9.]+,\s*[0-9.]+,\s*([0-9.]+)\s*$", text, re.M):
        v = to_float(m.group(1))
        if v is not None:
            out.append(v)
    return out


# iperf3 --------------------------------------------------------------------------------------
def parse_iperf3(text):
    """MiB/s received (iperf3 -J)."""
    if not text:
        return None
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    if not isinstance(doc, dict) or doc.get("error"):
        return None
    end = doc.get("end")
    if not isinstance(end, dict):
        return None
    for key in ("sum_received", "sum_sent", "sum"):
        part = end.get(key)
        bps = to_float(part.get("bits_per_second")) if isinstance(part, dict) else None
        if bps:
            return bps / 8 / MIB
    return None


def parse_memcpy(text):
    if not text:
        return None
    m = re.search(r"^memcpy_bw\s+\d+\s+([0-9.]+)", text, re.M)
    return to_float(m.group(1)) if m else None


# syscall counts ------------------------------------------------------------------------------
# perf stat -x, writes "COUNT,UNIT,EVENT,..." lines (COUNT "<not counted>" when it could not);
# raw_syscalls:sys_enter is every syscall, syscalls:sys_enter_NAME one of them.
# strace -c writes a table ending in a "total" line: "100.00  0.008  3  2360  48 total".
def parse_syscalls(text):
    """{"total": N, "by_name": {name: N}} or None."""
    if not text:
        return None
    total, by_name = None, {}
    for line in text.splitlines():
        fields = line.split(",")
        if len(fields) >= 3 and fields[0].strip().isdigit():
            count, event = int(fields[0]), fields[2].strip()
            if event == "raw_syscalls:sys_enter":
                total = count
            elif event.startswith("syscalls:sys_enter_"):
                by_name[event[len("syscalls:sys_enter_"):]] = count
            continue
        words = line.split()
        if len(words) >= 5 and re.fullmatch(r"[0-9.]+", words[0]) and words[-1] != "syscall":
            # strace: % time, seconds, usecs/call, calls, [errors,] name
            calls = words[3] if words[3].isdigit() else None
            if calls is None:
                continue
            if words[-1] == "total":
                total = int(calls)
            else:
                by_name[words[-1]] = int(calls)
    if total is None:
        return None
    return {"total": total, "by_name": by_name}


# idle_qps ------------------------------------------------------------------------------------
def parse_idle_qps(text):
    """{stage: (qps, rss_kib, pss_kib)} from "idle_qps STAGE QPS RSS PSS" lines."""
    out = {}
    for m in re.finditer(r"^idle_qps (\w+) (\d+) (\d+) (\d+)\s*$", text or "", re.M):
        out[m.group(1)] = (int(m.group(2)), int(m.group(3)), int(m.group(4)))
    return out


def parse_ucx_final(text):
    """ucx_perftest's Final line as {"typical_us", "avg_us", "bw_mb"} (MB/s as UCX prints it,
    2^20 bytes), or None."""
    for line in (text or "").splitlines():
        words = line.split()
        if len(words) >= 9 and words[0] == "Final:":
            return {"typical_us": to_float(words[2]), "avg_us": to_float(words[3]),
                    "bw_mb": to_float(words[5])}
    return None


def parse_netpipe(text):
    """NetPIPE's -o file (bytes, Mbps, seconds one way per line) as {"lat_us": the smallest
    message's time, "peak_mib": the highest rate in MiB/s}, or None."""
    rows = []
    for line in (text or "").splitlines():
        words = line.split()
        if len(words) >= 3 and all(to_float(w) is not None for w in words[:3]):
            rows.append(tuple(to_float(w) for w in words[:3]))
    if not rows:
        return None
    smallest = min(rows)
    return {"lat_us": smallest[2] * 1e6, "peak_mib": max(r[1] for r in rows) * 1e6 / 8 / 2**20}
