#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Plots a bench/soak result: wharfd's RSS, open fds and threads over time, with the least-squares
line past the warm-up and its slope, and the well-behaved clients' operations per second.

  /usr/bin/python3 bench/soak_plot.py results/soak-....json -o docs/soak.png
"""
import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MiB = 1 << 20


def fit(xs, ys):
    """Least-squares line through (xs, ys): (slope, intercept), or None."""
    n = len(xs)
    if n < 3:
        return None
    sx, sy = sum(xs), sum(ys)
    sxx = sum(x * x for x in xs)
    sxy = sum(x * y for x, y in zip(xs, ys))
    d = n * sxx - sx * sx
    if d <= 0:
        return None
    slope = (n * sxy - sx * sy) / d
    return slope, (sy - slope * sx) / n


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("result")
    ap.add_argument("-o", "--out", required=True)
    a = ap.parse_args()
    with open(a.result) as f:
        r = json.load(f)
    par = r["parameters"]
    warm = r["after_warmup"]["from_s"]
    s = [x for x in r["samples"] if x.get("alive")]
    t = [x["t_s"] for x in s]
    series = [("RSS (MiB)", [x["rss_bytes"] / MiB for x in s], "MiB"),
              ("open fds", [x["fds"] for x in s], "fds"),
              ("threads", [x["threads"] for x in s], "threads")]
    if any("rdma_pool_busy" in x for x in s):
        series.append(("RDMA pool buffers in use", [x.get("rdma_pool_busy", 0) for x in s],
                       "buffers"))
    if any(x.get("registered_bytes") for x in s):
        series.append(("registered RDMA memory (MiB)",
                       [x.get("registered_bytes", 0) / MiB for x in s], "MiB"))
    fig, axes = plt.subplots(len(series) + 1, 1, figsize=(9, 2.3 * (len(series) + 1)),
                             sharex=True)
    for ax, (name, ys, unit) in zip(axes, series):
        ax.plot(t, ys, lw=1)
        ax.axvspan(0, warm, color="0.9", lw=0)
        pts = [(x, y) for x, y in zip(t, ys) if x >= warm]
        line = fit([p[0] / 60 for p in pts], [p[1] for p in pts])
        if line:
            k, b = line
            xs = [pts[0][0], pts[-1][0]]
            ax.plot(xs, [b + k * x / 60 for x in xs], "r--", lw=1)
            ax.set_title(f"{name}: slope after warm-up {k:+.2f} {unit}/min", fontsize=9)
        else:
            ax.set_title(name, fontsize=9)
        ax.set_ylim(bottom=0)
    rate_t, rate = [], []
    for p, q in zip(s, s[1:]):
        dt = q["t_s"] - p["t_s"]
        if dt > 0:
            rate_t.append(q["t_s"])
            rate.append((q["ops"] - p["ops"]) / dt)
    ax = axes[-1]
    ax.plot(rate_t, rate, lw=1, color="g")
    ax.axvspan(0, warm, color="0.9", lw=0)
    ax.set_title(f"well-behaved ops/s; errors {r['errors']}, wrong bytes {r['wrong_bytes']}",
                 fontsize=9)
    ax.set_xlabel("seconds")
    ax.set_ylim(bottom=0)
    fig.suptitle(f"wharfd soak: {par['clients']} clients ({par['transports']}) + "
                 f"{par['bad_clients']} misbehaving, {par['duration_s']:.0f} s, objects up to "
                 f"{par['max_object_bytes'] / MiB:.0f} MiB ({r['environment'].get('cpu_cores')} "
                 "cores)", fontsize=10)
    fig.tight_layout()
    fig.savefig(a.out, dpi=90)
    print(f"soak_plot: wrote {a.out}")


if __name__ == "__main__":
    main()
