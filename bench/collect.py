"""Reads bench/run.sh's work directory into plain numbers, one function per part of the run
(table, sweep, qps, samehost, syscalls, qpmem, stacks). Missing or garbled outputs become None, never
an exception. File names are the ones run.sh's parts write (see their headers)."""

import statistics
from pathlib import Path

from parse import (parse_idle_qps, parse_iperf3, parse_memcpy, parse_netpipe, parse_perftest,
                   parse_sockperf, parse_syscalls, parse_ucx_final, perftest_bw, perftest_col,
                   perftest_header, perftest_samples, read, sockperf_samples, to_float)


def load_meta(work):
    meta = {}
    for line in (read(work / "meta.txt") or "").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            meta[key.strip()] = value.strip()
    return meta


def ints(meta, key):
    out = []
    for word in meta.get(key, "").split():
        if word.isdigit():
            out.append(int(word))
    return out


def median(values):
    """The median of the values that are there; None when none is."""
    there = [v for v in values if v is not None]
    return statistics.median(there) if there else None


def sockperf_size(size):
    return max(int(size), 14)  # sockperf's smallest message is 14 bytes


def perftest(work, name):
    return parse_perftest(read(work / f"{name}.cli"))


def table(work, meta):
    """{"lat": {(op, size): (median, p99)}, "bw": {(op, size): MiB/s}, "sockperf": {size: {..}},
    "iperf3": {size: MiB/s}, "memcpy": {size: MiB/s}}."""
    out = {"lat": {}, "bw": {}, "sockperf": {}, "iperf3": {}, "memcpy": {}}
    for size in ints(meta, "lat_sizes"):
        out["sockperf"][size] = parse_sockperf(
            read(work / f"sockperf.{sockperf_size(size)}.out")) or {}
        for op in ("send", "write", "read"):
            cols = perftest(work, f"lat.{op}.{size}")
            out["lat"][(op, size)] = (perftest_col(cols, "t_typical"),
                                      perftest_col(cols, "99% percentile"))
    for size in ints(meta, "bw_sizes"):
        out["iperf3"][size] = parse_iperf3(read(work / f"iperf3.{size}.json"))
        out["memcpy"][size] = parse_memcpy(read(work / f"memcpy.{size}.out"))
        for op in ("send", "write", "read"):
            out["bw"][(op, size)] = perftest_bw(perftest(work, f"bw.{op}.{size}"))
    return out


def latency_samples(work, meta):
    """{label: sorted usec samples} for the percentile plot: the table's perftest runs (-H) and
    sockperf's full logs. read is left out: perftest reports its full round trip."""
    out = {}
    for size in ints(meta, "lat_sizes"):
        for op in ("send", "write"):
            s = perftest_samples(read(work / f"lat.{op}.{size}.cli"))
            if s:
                out[f"ib_{op}_lat {size_label(size)}"] = sorted(s)
        sp = sockperf_size(size)
        s = sockperf_samples(read(work / f"sockperf.{sp}.csv"))
        if s:
            out[f"sockperf TCP {size_label(sp)}"] = sorted(s)
    return out


def sweep(work, meta):
    """{"bw": [(size, rdmaemu MiB/s, iperf3 MiB/s)], "lat": [(size, median, p99, sockperf p50,
    sockperf p99)]}."""
    bw = []
    for size in ints(meta, "sweep_bw_sizes"):
        bw.append((size, perftest_bw(perftest(work, f"sweep.bw.{size}")),
                   parse_iperf3(read(work / f"sweep.iperf3.{size}.json"))))
    lat = []
    for size in ints(meta, "sweep_lat_sizes"):
        cols = perftest(work, f"sweep.lat.{size}")
        sp = parse_sockperf(read(work / f"sweep.sockperf.{sockperf_size(size)}.out")) or {}
        lat.append((size, perftest_col(cols, "t_typical"), perftest_col(cols, "99% percentile"),
                    sp.get("p50.0"), sp.get("p99.0")))
    return {"bw": bw, "lat": lat}


def qps(work, meta):
    """[(qps, messages, tx depth, median MiB/s, median client seconds, [MiB/s of each round])].
    A work directory from before the rounds holds qps.Q.cli: one round."""
    rounds = (ints(meta, "qps_rounds") or [0])[0]
    out = []
    for q in ints(meta, "qp_counts"):
        stems = [f"qps.{q}.{r}" for r in range(1, rounds + 1)] or [f"qps.{q}"]
        texts = [read(work / f"{stem}.cli") for stem in stems]
        cols = [parse_perftest(t) for t in texts]
        iters = next((perftest_col(c, "#iterations") for c in cols
                      if perftest_col(c, "#iterations")), None)
        depth = next((perftest_header(t, "TX depth") for t in texts
                      if perftest_header(t, "TX depth")), None)
        bws = [perftest_bw(c) for c in cols]
        secs = [to_float((read(work / f"{stem}.secs") or "").strip()) for stem in stems]
        out.append((q, int(iters) if iters else None, depth, median(bws), median(secs), bws))
    return out


def same_host(work):
    """(same-host MiB/s, memcpy 64 KiB MiB/s)."""
    return (perftest_bw(perftest(work, "samehost.write.65536")),
            parse_memcpy(read(work / "memcpy.65536.out")))


def per_message(runs):
    """runs: [(messages, counts or None)] for two runs -> {"total": x, "by_name": {...}} per
    message, from the difference between them, or None."""
    if len(runs) != 2 or any(m is None or c is None for m, c in runs):
        return None
    (m0, c0), (m1, c1) = runs
    if m1 == m0:
        return None
    names = set(c0["by_name"]) | set(c1["by_name"])
    return {
        "total": (c1["total"] - c0["total"]) / (m1 - m0),
        "by_name": {n: (c1["by_name"].get(n, 0) - c0["by_name"].get(n, 0)) / (m1 - m0)
                    for n in names},
        "runs": runs,
    }


def syscalls(work, meta):
    """{what: per_message(...)} for write_bw, send_lat, iperf3, sockperf."""
    counts = {"write_bw": ints(meta, "syscall_runs"), "send_lat": ints(meta, "syscall_runs"),
              # runs from before iperf3 had counts of its own used perftest's
              "iperf3": ints(meta, "syscall_iperf3_blocks") or ints(meta, "syscall_runs")}
    secs = ints(meta, "syscall_sockperf_secs")
    out = {}
    for what, ns in counts.items():
        runs = [(n, parse_syscalls(read(work / f"sys.{what}.{n}.count"))) for n in ns]
        # A perftest run that failed says nothing, whatever its counter wrote.
        ok = what == "iperf3" or all(perftest(work, f"sys.{what}.{n}") for n in ns)
        out[what] = per_message(runs) if ok else None
    runs = []
    for s in secs:
        sp = parse_sockperf(read(work / f"sys.sockperf.{s}s.out")) or {}
        runs.append((sp.get("sent"), parse_syscalls(read(work / f"sys.sockperf.{s}s.count"))))
    out["sockperf"] = per_message(runs)
    return out


def qp_memory(work):
    """{"qps": N, "rss_kib": per QP, "pss_kib": per QP, "stages": {...}} or None."""
    stages = parse_idle_qps(read(work / "qpmem.out"))
    if "base" not in stages or "connected" not in stages:
        return None
    n = stages["connected"][0]
    if n <= 0:
        return None
    return {"qps": n,
            "rss_kib": (stages["connected"][1] - stages["base"][1]) / n,
            "pss_kib": (stages["connected"][2] - stages["base"][2]) / n,
            "stages": stages}


def size_label(n):
    n = int(n)
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20} MiB"
    if n >= 1024 and n % 1024 == 0:
        return f"{n // 1024} KiB"
    return f"{n} B"


def stacks(work):
    """{"tag_lat": ucx Final, "tag_bw": ucx Final, "netpipe": NetPIPE figures}; None inside
    for what did not run."""
    return {"tag_lat": parse_ucx_final(read(work / "ucx.tag_lat.cli")),
            "tag_bw": parse_ucx_final(read(work / "ucx.tag_bw.cli")),
            "netpipe": parse_netpipe(read(work / "netpipe.out"))}


def collect(work):
    work = Path(work)
    meta = load_meta(work)
    parts = meta.get("parts", "").split() or ["table"]  # runs from before the parts
    return {
        "meta": meta,
        "parts": parts,
        "table": table(work, meta) if "table" in parts else None,
        "sweep": sweep(work, meta) if "sweep" in parts else None,
        "qps": qps(work, meta) if "qps" in parts else None,
        "samehost": same_host(work) if "samehost" in parts else None,
        "syscalls": syscalls(work, meta) if "syscalls" in parts else None,
        "qpmem": qp_memory(work) if "qpmem" in parts else None,
        "stacks": stacks(work) if "stacks" in parts else None,
    }
