#!/usr/bin/python3
"""Draws a bench/run.sh run as PNG and SVG plots, one figure per question:
  bw_vs_size       ib_write_bw and iperf3 against message size (sweep)
  lat_vs_size      ib_write_lat and sockperf median and p99 against message size (sweep)
  lat_percentiles  the latency distribution of the table's 2 B and 4 KiB runs (every sample)
  qps              total ib_write_bw 64 KiB over 1-1000 QPs (qps)
  syscalls         the application's syscalls per message, rdmaemu against TCP (syscalls)
A figure whose data is missing is skipped with a line on stderr.

usage: plot.py WORKDIR OUTDIR      (Debian's /usr/bin/python3 with python3-matplotlib)
"""

import math
import sys
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(Path(__file__).resolve().parent))

import matplotlib  # noqa: E402

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

from collect import collect, latency_samples, size_label  # noqa: E402

EMU, TCP, MEM = "tab:red", "tab:blue", "tab:gray"


def subtitle(meta):
    return (f"{meta.get('date', '?')}, git {meta.get('git', '?')}, {meta.get('nproc', '?')} CPUs, "
            f"load {meta.get('load_before', '?').split(' ')[0]}, MTU {meta.get('mtu', '?')}")


def size_axis(ax):
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: size_label(v) if v >= 1 else ""))
    ax.set_xlabel("message size")
    ax.grid(True, which="major", alpha=0.3)


def points(rows, x, y):
    """(xs, ys) of the rows where column y has a value (positive: the axes are logarithmic)."""
    pts = [(row[x], row[y]) for row in rows if row[y] is not None and row[y] > 0]
    return [p[0] for p in pts], [p[1] for p in pts]


def bw_vs_size(r, ax):
    rows = r["sweep"]["bw"]
    ax.plot(*points(rows, 0, 1), "o-", color=EMU, label="rdmaemu ib_write_bw (2 hosts)")
    cap = size_label(r["meta"].get("sweep_tcp_max_write", 1 << 20))
    ax.plot(*points(rows, 0, 2), "s--", color=TCP,
            label=f"TCP loopback, iperf3 -l SIZE (at most {cap})")
    t = r["table"]
    if t:
        mem = sorted((s, v) for s, v in t["memcpy"].items() if v)
        if mem:
            ax.plot(*zip(*mem), "^", color=MEM, label="memcpy (1 thread)")
    size_axis(ax)
    ax.set_yscale("log")
    ax.set_ylabel("MiB/s")
    ax.set_title("Bandwidth against message size")
    ax.legend()


def lat_vs_size(r, ax):
    rows = r["sweep"]["lat"]
    ax.plot(*points(rows, 0, 1), "o-", color=EMU, label="rdmaemu ib_write_lat median")
    ax.plot(*points(rows, 0, 2), "o:", color=EMU, alpha=0.6, label="rdmaemu ib_write_lat p99")
    ax.plot(*points(rows, 0, 3), "s--", color=TCP, label="TCP sockperf median (>= 14 B)")
    ax.plot(*points(rows, 0, 4), "s:", color=TCP, alpha=0.6, label="TCP sockperf p99")
    size_axis(ax)
    ax.set_yscale("log")
    ax.set_ylabel("one-way latency, usec")
    ax.set_title("Latency against message size")
    ax.legend(fontsize="small")


# The percentile axis: 0, 90, 99, 99.9 ... evenly spaced ("nines"), as latency tails are read.
NINES = [50, 90, 99, 99.9, 99.99]


def nines(p):
    return -math.log10(1 - p / 100) if p < 100 else 5


def lat_percentiles(r, ax, samples):
    colors = {"ib_send_lat": EMU, "ib_write_lat": "tab:orange", "sockperf": TCP}
    for label, s in samples.items():
        s = [v for v in s if v > 0]
        n = len(s)
        if n < 10:
            continue
        xs = [nines(100 * (i + 0.5) / n) for i in range(n)]
        # One color per program; bytes solid, KiB dashed.
        ax.plot(xs, s, "--" if label.endswith("KiB") else "-",
                color=colors.get(label.split(" ")[0]), label=f"{label} ({n} samples)")
    ax.set_xticks([nines(p) for p in NINES])
    ax.set_xticklabels([f"p{p:g}" for p in NINES])
    ax.set_xlim(nines(0), nines(99.99))
    ax.set_yscale("log")
    ax.set_ylabel("one-way latency, usec")
    ax.set_xlabel("percentile")
    ax.grid(True, alpha=0.3)
    ax.set_title("Latency distribution (every sample)")
    ax.legend(fontsize="small")


def qps(r, ax):
    rows = [row for row in r["qps"]]
    labels = [f"-q {row[0]}" for row in rows]
    values = [row[3] or 0 for row in rows]
    bars = ax.bar(labels, values, color=EMU)
    for b, row in zip(bars, rows):
        ax.annotate("failed" if row[3] is None else f"{row[3]:.0f}",
                    (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom")
    ax.set_ylabel("total MiB/s, all QPs")
    ax.set_title("ib_write_bw 64 KiB over many QPs")
    ax.grid(True, axis="y", alpha=0.3)


def syscalls(r, ax):
    rows = [("rdmaemu\nib_write_bw 64 KiB", "write_bw", EMU),
            ("TCP iperf3\n-l 64 KiB", "iperf3", TCP),
            ("rdmaemu\nib_send_lat 2 B", "send_lat", EMU),
            ("TCP sockperf\nping-pong 14 B", "sockperf", TCP)]
    labels, values, colors = [], [], []
    for label, key, color in rows:
        s = r["syscalls"].get(key)
        labels.append(label)
        values.append(max(s["total"], 0) if s else 0)
        colors.append(color)
    bars = ax.bar(labels, values, color=colors)
    for b, (label, key, _) in zip(bars, rows):
        s = r["syscalls"].get(key)
        ax.annotate("failed" if not s else f"{s['total']:.2f}",
                    (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom")
    # Both ~100 and ~1 must show: logarithmic above 0.01, linear below (0 stays 0).
    ax.set_yscale("symlog", linthresh=0.01)
    ax.set_ylim(0, max(values + [1]) * 3)
    ax.set_ylabel("syscalls per message (WR, write or round trip)")
    ax.set_title(f"Kernel involvement: the application's syscalls per message\n"
                 f"(steady state, counted by {r['meta'].get('syscall_counter', '?')})")
    ax.grid(True, axis="y", alpha=0.3)


def save(fig, out, name, meta):
    fig.text(0.99, 0.005, subtitle(meta), ha="right", va="bottom", fontsize=7, color="gray")
    fig.tight_layout(rect=(0, 0.02, 1, 1))
    for ext in ("png", "svg"):
        fig.savefig(out / f"{name}.{ext}", dpi=110)
    plt.close(fig)
    print(f"plot.py: {out / name}.png, .svg", file=sys.stderr)


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    work, out = Path(argv[1]), Path(argv[2])
    out.mkdir(parents=True, exist_ok=True)
    r = collect(work)
    samples = latency_samples(work, r["meta"]) if r["table"] else {}
    figures = [("bw_vs_size", r["sweep"], bw_vs_size),
               ("lat_vs_size", r["sweep"], lat_vs_size),
               ("lat_percentiles", samples, lambda r, ax: lat_percentiles(r, ax, samples)),
               ("qps", r["qps"], qps),
               ("syscalls", r["syscalls"], syscalls)]
    for name, data, draw in figures:
        if not data:
            print(f"plot.py: no data for {name}, skipped", file=sys.stderr)
            continue
        fig, ax = plt.subplots(figsize=(7.5, 4.8))
        try:
            draw(r, ax)
            save(fig, out, name, r["meta"])
        except Exception as e:  # odd data (nothing positive on a log axis): skip this figure
            print(f"plot.py: {name} not drawn: {type(e).__name__} {e}", file=sys.stderr)
            plt.close(fig)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
