#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""wharf_bench report: a folder of benchmark result JSONs -> a Markdown report with PNG plots.

  /usr/bin/python3 bench/report.py RESULTS_DIR [--out DIR]
  (also: build/bench/wharf_bench report RESULTS_DIR)

Reads every *.json with schema "wharf-bench/1" in RESULTS_DIR (the C grid: b1-fetch, b1-put,
rdma-vs-http; bench/http_vs_nginx.py; the Python benchmarks) and writes DIR/report.md (default: the
results folder) and DIR/plots/*.png with Debian's matplotlib (Agg):
- throughput against object size per arm, one panel per concurrency, with this run's limits
  (memcpy, process_vm_writev, loopback TCP) drawn as horizontal lines;
- CPU-seconds per GB per arm: client, server, whole host;
- latency percentiles (p50/p90/p99) against size per arm;
- aggregate throughput against client processes (runs with --processes 1,2,4);
- wharfd against nginx (HTTP GET and PUT of one large object, and many small GETs).
Every figure is a median of paired repeats; error bars are min-max.
"""
import argparse
import glob
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MIB = 1 << 20
ARM_STYLE = {"rdma-shm": ("tab:blue", "o"), "rdma-tcp": ("tab:green", "s"),
             "http": ("tab:red", "^"), "rdma-verbs": ("tab:purple", "D")}
LIMIT_STYLE = [("process_vm_writev_1", "process_vm_writev, 1 thread", "tab:blue", "--"),
               ("process_vm_writev_n", "process_vm_writev, N threads", "tab:blue", ":"),
               ("tcp_loopback_1", "loopback TCP, 1 stream", "tab:red", "--"),
               ("tcp_loopback_n", "loopback TCP, N streams", "tab:red", ":"),
               ("memcpy_1", "memcpy, 1 thread", "gray", "--"),
               ("md5_1", "MD5, 1 thread (HTTP PUT ETag)", "tab:orange", "-.")]


def size_axis(ax, cells):
    """log2 x axis ticked at the sizes measured, labelled in MiB."""
    sizes = sorted({c["size_bytes"] / MIB for c in cells})
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes)
    ax.set_xticklabels([f"{s:g}" for s in sizes])
    ax.minorticks_off()
    ax.set_xlabel("object size (MiB)")


def arm_style(arm):
    return ARM_STYLE.get(arm, ("black", "v"))


def med(o, *path):
    for p in path:
        if o is None:
            return None
        o = o.get(p)
    if isinstance(o, dict):
        return o.get("median")
    return o


def rng(o):
    if not isinstance(o, dict) or o.get("n", 0) == 0:
        return ""
    return f"{o['min']:.3g}–{o['max']:.3g}"


def fmt(v, d=3):
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.{d}g}" if abs(v) < 1000 else f"{v:.0f}"
    return str(v)


def size_label(b):
    b = int(b)
    if b >= MIB and b % MIB == 0:
        return f"{b // MIB} MiB"
    if b >= 1024 and b % 1024 == 0:
        return f"{b // 1024} KiB"
    return f"{b} B"


def load(results_dir):
    runs = []
    for p in sorted(glob.glob(os.path.join(results_dir, "*.json"))):
        try:
            with open(p) as f:
                d = json.load(f)
        except (OSError, ValueError) as e:
            print(f"report: skipping {p}: {e}", file=sys.stderr)
            continue
        if not isinstance(d, dict) or d.get("schema") != "wharf-bench/1":
            continue
        d["_path"] = p
        d["_name"] = os.path.splitext(os.path.basename(p))[0]
        runs.append(d)
    runs.sort(key=lambda d: (d.get("timestamp", ""), d["_name"]))
    return runs


# ---------------------------------------------------------------------------------------------
# grid runs (b1-fetch, b1-put, rdma-vs-http)

def grid_cells(run):
    return [c for c in run.get("results", {}).get("cells", []) if "runs" in c]


def limits_md(lim):
    if not lim or "error" in lim:
        return ["Limits: not measured" + (f" ({lim['error']})" if lim else "") + ".", ""]
    rows = ["| limit (this run) | median GB/s | min–max |", "|---|---|---|"]
    for key, label, _, _ in LIMIT_STYLE:
        if key in lim:
            rows.append(f"| {label} | {lim[key]['median']:.2f} | {rng(lim[key])} |")
    return rows + [""]


def draw_limits(ax, lim, keys):
    if not lim or "error" in lim:
        return
    for key, label, color, ls in LIMIT_STYLE:
        if key in keys and key in lim:
            ax.axhline(lim[key]["median"], color=color, ls=ls, lw=1, alpha=0.7,
                       label=f"{label} {lim[key]['median']:.2f}")


def plot_throughput(run, op, cells, out):
    concs = sorted({c["concurrency"] for c in cells})
    procs = min({c["processes"] for c in cells})
    n = len(concs)
    ncols = min(n, 3)
    nrows = (n + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(max(8.0, 4.4 * ncols), 0.6 + 4.0 * nrows),
                             sharey=True, squeeze=False)
    flat = [ax for row in axes for ax in row]
    for ax in flat[n:]:
        ax.set_visible(False)
    arms = sorted({c["arm"] for c in cells})
    lim = run.get("limits")
    lim_keys = (("process_vm_writev_1", "tcp_loopback_1", "md5_1") if op == "put" else
                ("process_vm_writev_1", "process_vm_writev_n", "tcp_loopback_1",
                 "tcp_loopback_n", "memcpy_1"))
    top = 0.0
    for ax, conc in zip(flat, concs):
        for arm in arms:
            pts = sorted((c["size_bytes"], c) for c in cells
                         if c["arm"] == arm and c["concurrency"] == conc
                         and c["processes"] == procs)
            if not pts:
                continue
            xs = [p[0] / MIB for p in pts]
            ys = [p[1]["throughput_gbps_bytes"]["median"] for p in pts]
            lo = [y - p[1]["throughput_gbps_bytes"]["min"] for y, p in zip(ys, pts)]
            hi = [p[1]["throughput_gbps_bytes"]["max"] - y for y, p in zip(ys, pts)]
            color, marker = arm_style(arm)
            ax.errorbar(xs, ys, yerr=[lo, hi], color=color, marker=marker, capsize=3,
                        label=arm)
            top = max([top] + [p[1]["throughput_gbps_bytes"]["max"] for p in pts])
            for x, p in zip(xs, pts):
                if p[1].get("status") != "ok":
                    ax.plot([x], [p[1]["throughput_gbps_bytes"]["median"]], "x", color="black",
                            ms=14, mew=2.5)
        draw_limits(ax, lim, lim_keys)
        size_axis(ax, cells)
        ax.set_title(f"{op.upper()}, {conc} stream{'s' if conc > 1 else ''} x {procs} proc")
        ax.grid(True, alpha=0.3)
    for row in axes:
        row[0].set_ylabel("GB/s (1e9 B/s), median of repeats")
    # keep the data readable: show limits up to ~3x the best figure (at least the lowest one)
    lims = [lim[k]["median"] for k in lim_keys if lim and "error" not in lim and k in lim]
    ymax = max(top * 1.3, min(lims) * 1.1 if lims else 0, min(max(lims), 3 * top) * 1.05
               if lims else 0)
    axes[0][0].set_ylim(0, ymax or None)
    handles, labels = axes[0][0].get_legend_handles_labels()
    ncol = 4
    fig.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=8)
    fig.suptitle(f"{op.upper()} throughput against size (x = failed cell) — {run['_name']}",
                 fontsize=10)
    rows = (len(labels) + ncol - 1) // ncol
    fig.tight_layout(rect=(0, (0.05 + 0.045 * rows) / nrows, 1, 1 - 0.05 / nrows))
    fig.savefig(out, dpi=90)
    plt.close(fig)


def ref_conc(cells):
    concs = sorted({c["concurrency"] for c in cells})
    return 4 if 4 in concs else concs[0]


def plot_cpu(run, op, cells, out):
    conc = ref_conc(cells)
    procs = min({c["processes"] for c in cells})
    arms = sorted({c["arm"] for c in cells})
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2), squeeze=False)
    for ax, (key, title) in zip(axes[0], (("client_cpu_s_per_gb", "client processes"),
                                          ("server_cpu_s_per_gb", "server (wharfd /metrics)"),
                                          ("host_cpu_s_per_gb", "whole host (/proc/stat)"))):
        for arm in arms:
            pts = sorted((c["size_bytes"], c) for c in cells
                         if c["arm"] == arm and c["concurrency"] == conc
                         and c["processes"] == procs and c["cpu"].get(key))
            if not pts:
                continue
            xs = [p[0] / MIB for p in pts]
            ys = [p[1]["cpu"][key]["median"] for p in pts]
            lo = [y - p[1]["cpu"][key]["min"] for y, p in zip(ys, pts)]
            hi = [p[1]["cpu"][key]["max"] - y for y, p in zip(ys, pts)]
            color, marker = arm_style(arm)
            ax.errorbar(xs, ys, yerr=[lo, hi], color=color, marker=marker, capsize=3, label=arm)
        size_axis(ax, cells)
        ax.set_title(title)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
    axes[0][0].set_ylabel("CPU-seconds per GB moved")
    axes[0][0].legend(fontsize=8)
    fig.suptitle(f"{op.upper()} CPU per GB, {conc} streams x {procs} proc (lower is better) — "
                 f"{run['_name']}", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    fig.savefig(out, dpi=90)
    plt.close(fig)


def plot_latency(run, op, cells, out):
    conc = ref_conc(cells)
    procs = min({c["processes"] for c in cells})
    arms = sorted({c["arm"] for c in cells})
    fig, axes = plt.subplots(1, len(arms), figsize=(max(7.0, 4.5 * len(arms)), 4.2), sharey=True,
                             squeeze=False)
    for ax, arm in zip(axes[0], arms):
        pts = sorted((c["size_bytes"], c) for c in cells
                     if c["arm"] == arm and c["concurrency"] == conc and c["processes"] == procs)
        xs = [p[0] / MIB for p in pts]
        for key, ls, mk in (("p50_ms", "-", "o"), ("p90_ms", "--", "s"), ("p99_ms", ":", "^"),
                            ("max_ms", "-.", "x")):
            ax.plot(xs, [p[1]["latency"][key] for p in pts], ls=ls, marker=mk,
                    color=arm_style(arm)[0], label=key.replace("_ms", ""))
        if op == "get" and all(p[1].get("ttfb") for p in pts) and pts:
            ax.plot(xs, [p[1]["ttfb"]["p50_ms"] for p in pts], color="black", marker=".",
                    lw=1, label="TTFB p50")
        size_axis(ax, cells)
        ax.set_yscale("log")
        ax.set_title(arm)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel("latency per transfer (ms)")
    fig.suptitle(f"{op.upper()} latency percentiles, {conc} streams x {procs} proc — "
                 f"{run['_name']}", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    fig.savefig(out, dpi=90)
    plt.close(fig)


def plot_processes(run, op, cells, out):
    arms = sorted({c["arm"] for c in cells})
    keys = sorted({(c["size_bytes"], c["concurrency"]) for c in cells})
    procs_all = sorted({c["processes"] for c in cells})
    fig, axes = plt.subplots(1, len(arms), figsize=(max(7.0, 4.4 * len(arms)), 4.6),
                             sharey=True, squeeze=False)
    for ax, arm in zip(axes[0], arms):
        color, _ = arm_style(arm)
        for i, (size, conc) in enumerate(keys):
            pts = sorted((c["processes"], c) for c in cells
                         if c["arm"] == arm and c["size_bytes"] == size
                         and c["concurrency"] == conc)
            if len(pts) < 2:
                continue
            xs = [p[0] for p in pts]
            ys = [p[1]["throughput_gbps_bytes"]["median"] for p in pts]
            lo = [y - p[1]["throughput_gbps_bytes"]["min"] for y, p in zip(ys, pts)]
            hi = [p[1]["throughput_gbps_bytes"]["max"] - y for y, p in zip(ys, pts)]
            ax.errorbar([x + 0.04 * (i - len(keys) / 2) for x in xs], ys, yerr=[lo, hi],
                        color=color, alpha=0.4 + 0.6 * (i + 1) / len(keys), capsize=3,
                        marker="os^Dv"[i % 5], ls=["-", "--", ":", "-."][i % 4],
                        label=f"{size_label(size)}, {conc} stream{'s' if conc > 1 else ''}/proc")
        draw_limits(ax, run.get("limits"),
                    ("process_vm_writev_n",) if arm.startswith("rdma-shm") else
                    ("tcp_loopback_n",))
        ax.set_xlabel("client processes")
        ax.set_xticks(procs_all)
        ax.set_title(arm)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    axes[0][0].set_ylabel("aggregate GB/s (bytes / span of all workers)")
    axes[0][0].set_ylim(bottom=0)
    fig.suptitle(f"{op.upper()} aggregate throughput against client processes — {run['_name']}",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    fig.savefig(out, dpi=90)
    plt.close(fig)


def grid_section(run, plots_dir, rel):
    cells = grid_cells(run)
    lines = []
    p = run.get("params", {})
    env = run.get("environment", {})
    lines += [f"## {run['_name']}", "",
              f"`{os.path.basename(run['_path'])}` — benchmark **{run.get('benchmark')}**, "
              f"{run.get('timestamp', '')}, {p.get('repeats')} paired repeats per cell, "
              f"arms {', '.join(a['name'] + ' (' + a['provider'] + ')' for a in p.get('arms', []))}, "
              f"budget {int(p.get('budget_bytes_per_measurement', 0)) // MIB} MiB per "
              f"measurement, GET length: {p.get('get_length', 'known size')}, "
              f"wall {run.get('wall_s', 0):.0f} s.", "",
              f"Host: {env.get('cpu_model')} x {env.get('cpu_cores')} cores, "
              f"{env.get('kernel')}, libfabric {env.get('libfabric_version')}, GPUs: "
              f"{', '.join(g['name'] for g in env.get('gpus', [])) or 'none'}, commit "
              f"`{env.get('git_commit', '')[:12]}`{' (dirty)' if env.get('git_dirty') else ''}.",
              ""]
    lines += limits_md(run.get("limits"))
    goals = run_goals(run.get("results", {}))
    if goals:
        lines += goals_md(goals, "Goals: RDMA against HTTP and against the raw copy rate "
                                 "(256 MiB; paired ratios are per repeat)")
    for op in ("get", "put"):
        oc = [c for c in cells if c["op"] == op]
        if not oc:
            continue
        base = f"{run['_name']}-{op}"
        for kind, fn in (("throughput", plot_throughput), ("cpu", plot_cpu),
                         ("latency", plot_latency)):
            if kind != "throughput" and len({c["size_bytes"] for c in oc}) < 2 and kind != "cpu":
                pass
            path = os.path.join(plots_dir, f"{base}-{kind}.png")
            fn(run, op, oc, path)
            lines += [f"![{op} {kind}]({rel}/{os.path.basename(path)})", ""]
        if len({c["processes"] for c in oc}) > 1:
            path = os.path.join(plots_dir, f"{base}-processes.png")
            plot_processes(run, op, oc, path)
            lines += [f"![{op} processes]({rel}/{os.path.basename(path)})", ""]
        lines += cells_md(op, oc)
    skipped = [c for c in run.get("results", {}).get("cells", []) if "runs" not in c]
    if skipped:
        seen = sorted({(c["op"], c["size_bytes"], c["concurrency"], c["processes"], c["error"])
                       for c in skipped})
        lines += ["Skipped cells: " + "; ".join(
            f"{o} {size_label(s)} c{cc} p{pp} ({e})" for o, s, cc, pp, e in seen), ""]
    return lines


def cells_md(op, cells):
    rows = [f"### {op.upper()} cells", "",
            "| size | conc x procs | arm | GB/s median (min–max) | ops/s | p50 / p99 ms | "
            "TTFB p50 ms | client / server / host CPU-s/GB | witness | verified | status |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in sorted(cells, key=lambda c: (c["processes"], c["size_bytes"], c["concurrency"],
                                          c["arm"])):
        t = c["throughput_gbps_bytes"]
        cpu = c["cpu"]
        ver = c["verification"]
        ttfb = c.get("ttfb") or {}
        srv = med(cpu, "server_cpu_s_per_gb")
        status = "ok" if c["status"] == "ok" else f"**{c['status']}**: {c.get('error', '')}"
        rows.append(
            f"| {size_label(c['size_bytes'])} | {c['concurrency']} x {c['processes']} | "
            f"{c['arm']} | {t['median']:.3f} ({rng(t)}) | {med(c, 'ops_per_s'):.1f} | "
            f"{c['latency']['p50_ms']:.2f} / {c['latency']['p99_ms']:.2f} | "
            f"{fmt(ttfb.get('p50_ms'))} | {med(cpu, 'client_cpu_s_per_gb'):.3f} / "
            f"{fmt(srv)} / {med(cpu, 'host_cpu_s_per_gb'):.3f} | "
            f"{c['witness']['median']:.3f} | "
            f"{ver['bytes_verified'] / 1e9:.2f} GB{' BAD' if not ver['ok'] else ''} | {status} |")
    return rows + [""]


def run_goals(results):
    """The goals list of a run's results: "goals", or, in result files written before the
    field had that name, the one other key that starts with "goals_"."""
    if not isinstance(results, dict):
        return []
    if isinstance(results.get("goals"), list):
        return results["goals"]
    for k, v in sorted(results.items()):
        if k.startswith("goals_") and isinstance(v, list):
            return v
    return []


def goals_md(goals, title):
    rows = [f"**{title}**", "", "| goal | value | paired min–max | met |", "|---|---|---|---|"]
    for g in goals:
        note = f" ({g['note']})" if g.get("note") else ""
        rows.append(f"| {g['goal']} | {g['value']:.3f} | {rng(g.get('paired'))} | "
                    f"{'yes' if g['met'] else '**no**'}{note} |")
    return rows + [""]


# ---------------------------------------------------------------------------------------------
# wharfd vs nginx over HTTP

def http_section(run, plots_dir, rel):
    r = run["results"]
    p = run.get("params", {})
    lines = [f"## {run['_name']}", "",
             f"`{os.path.basename(run['_path'])}` — wharfd against nginx (sendfile), "
             f"{p.get('size_mib')} MiB object, {p.get('repeats')} paired GET repeats, "
             f"{p.get('put_repeats')} PUTs, {p.get('connections')} connections x "
             f"{p.get('small_kib')} KiB GETs ({p.get('load_repeats')} paired runs of "
             f"{p.get('duration')} s), {run.get('timestamp', '')}.", ""]
    lines += limits_md(run.get("limits"))
    lines += goals_md(run_goals(r), "Goals: wharfd against nginx")
    gw, gn = r["get_big"]["wharfd"], r["get_big"]["nginx"]
    pw = r["put_big"]
    lw, ln = r["small_gets"]["wharfd"], r["small_gets"]["nginx"]
    lines += ["| measurement | wharfd | nginx |", "|---|---|---|",
              f"| GET GB/s median (min–max) | {gw['throughput_gbps_bytes']['median']:.3f} "
              f"({rng(gw['throughput_gbps_bytes'])}) | {gn['throughput_gbps_bytes']['median']:.3f}"
              f" ({rng(gn['throughput_gbps_bytes'])}) |",
              f"| GET curl CPU-s/GB | {med(gw, 'client_cpu_s_per_gb'):.3f} | "
              f"{med(gn, 'client_cpu_s_per_gb'):.3f} |",
              f"| GET server CPU-s/GB | {med(gw, 'server_cpu_s_per_gb'):.3f} | "
              f"{med(gn, 'server_cpu_s_per_gb'):.3f} |",
              f"| GET host CPU-s/GB | {med(gw, 'host_cpu_s_per_gb'):.3f} | "
              f"{med(gn, 'host_cpu_s_per_gb'):.3f} |",
              f"| PUT GB/s median (min–max), ETag = MD5: {pw.get('etag_md5_ok')} | "
              f"{pw['throughput_gbps_bytes']['median']:.3f} ({rng(pw['throughput_gbps_bytes'])})"
              f" | – |",
              f"| PUT server CPU-s/GB | {med(pw, 'server_cpu_s_per_gb'):.3f} | – |",
              f"| small GETs ops/s | {lw['ops_per_s']['median']:.0f} ({rng(lw['ops_per_s'])}) | "
              f"{ln['ops_per_s']['median']:.0f} ({rng(ln['ops_per_s'])}) |",
              f"| small GETs p50 / p99 ms | {lw['latency']['p50_ms']['median']:.2f} / "
              f"{lw['latency']['p99_ms']['median']:.2f} | {ln['latency']['p50_ms']['median']:.2f}"
              f" / {ln['latency']['p99_ms']['median']:.2f} |",
              "", f"Verification (outside the timed runs): {r.get('verification')}", ""]
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2))
    lim = run.get("limits")

    def bars(ax, labels, vals, title, ylabel, limit_keys=()):
        meds = [v["median"] for v in vals]
        err = [[m - v["min"] for m, v in zip(meds, vals)], [v["max"] - m for m, v in zip(meds, vals)]]
        ax.bar(labels, meds, yerr=err, capsize=4, color=["tab:blue", "tab:gray", "tab:orange"][:len(vals)])
        draw_limits(ax, lim, limit_keys)
        ax.set_title(title)
        ax.set_ylabel(ylabel)
        ax.grid(True, axis="y", alpha=0.3)
        if limit_keys:
            ax.legend(fontsize=7, loc="lower right")

    bars(axes[0], ["wharfd", "nginx"], [gw["throughput_gbps_bytes"], gn["throughput_gbps_bytes"]],
         f"GET {p.get('size_mib')} MiB (curl)", "GB/s", ("tcp_loopback_1", "memcpy_1"))
    bars(axes[1], ["wharfd PUT"], [pw["throughput_gbps_bytes"]], f"PUT {p.get('size_mib')} MiB (curl)",
         "GB/s", ("md5_1", "tcp_loopback_1"))
    bars(axes[2], ["wharfd", "nginx"], [lw["ops_per_s"], ln["ops_per_s"]],
         f"{p.get('connections')} conns x {p.get('small_kib')} KiB GETs", "ops/s")
    fig.suptitle(f"{run['_name']} (median of paired repeats, bars min–max)")
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    path = os.path.join(plots_dir, f"{run['_name']}.png")
    fig.savefig(path, dpi=90)
    plt.close(fig)
    lines += [f"![wharfd vs nginx]({rel}/{os.path.basename(path)})", ""]
    return lines


def generic_section(run):
    """Benchmarks of other programs (the Python suite): their summary, as they wrote it."""
    lines = [f"## {run['_name']}", "",
             f"`{os.path.basename(run['_path'])}` — benchmark **{run.get('benchmark')}**, "
             f"{run.get('timestamp', '')}.", ""]
    res = run.get("results", {})
    lines += limits_md(run.get("limits")) if run.get("limits") else []
    arms = res.get("arms") if isinstance(res, dict) else None
    if isinstance(arms, dict) and arms:
        # {arm: {phase: {metric: summary}}} or {arm: {metric: summary}}
        rows = []
        for arm, v in arms.items():
            if not isinstance(v, dict):
                continue
            phases = v if all(isinstance(x, dict) and not {"median", "n"} <= set(x)
                              for x in v.values()) else {"": v}
            for phase, m in phases.items():
                if not isinstance(m, dict):
                    continue
                for metric, summ in m.items():
                    if isinstance(summ, dict) and "median" in summ:
                        rows.append(f"| {arm} | {phase} | {metric} | {fmt(summ['median'])} | "
                                    f"{rng(summ)} |")
        if rows:
            lines += ["| arm | phase | figure | median | min–max |", "|---|---|---|---|---|"]
            lines += rows + [""]
        ratios = res.get("ratios")
        if ratios:
            lines += ["Ratios: `" + json.dumps(ratios, sort_keys=True)[:1500] + "`", ""]
        if run_goals(res):
            try:
                lines += goals_md(run_goals(res), "Goals")
            except (KeyError, TypeError):
                pass
        return lines
    summary = res.get("summary") if isinstance(res, dict) else None
    if isinstance(summary, list) and summary and isinstance(summary[0], dict):
        keys = list(summary[0].keys())
        lines += ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
        for row in summary:
            lines.append("| " + " | ".join(fmt(row.get(k)) for k in keys) + " |")
        lines.append("")
    else:
        text = json.dumps(res, indent=1, sort_keys=True)
        if len(text) > 4000:
            text = text[:4000] + "\n... (truncated; see the JSON)"
        lines += ["```json", text, "```", ""]
    return lines


def main():
    ap = argparse.ArgumentParser(description="wharf benchmark report")
    ap.add_argument("results_dir")
    ap.add_argument("--out", default=None, help="output folder (default: RESULTS_DIR)")
    ap.add_argument("--latest", action="store_true",
                    help="only the latest run of each benchmark (and tag)")
    a = ap.parse_args()
    runs = load(a.results_dir)
    if not runs:
        print(f"report: no wharf-bench/1 JSON files in {a.results_dir}", file=sys.stderr)
        return 1
    if a.latest:
        latest = {}
        for r in runs:
            stem = r["_name"].rsplit("-", 3)[0]
            latest[stem] = r
        runs = sorted(latest.values(), key=lambda d: d.get("timestamp", ""))
    out = a.out or a.results_dir
    plots = os.path.join(out, "plots")
    os.makedirs(plots, exist_ok=True)
    lines = ["# wharf benchmark report", "",
             f"Generated by `wharf_bench report` (bench/report.py) from {len(runs)} result file(s) in "
             f"`{a.results_dir}`. GB/s are 1e9 bytes per second. Every figure is the median of "
             "paired repeats (arms alternate A B A B over the same objects and server) with the "
             "min–max range; limits are measured in the same run. A cell fails when the server's "
             "counters (the witness) cover less than the gate of its payload, when any transfer "
             "fails, or when any byte read back differs.", ""]
    lines += ["| run | benchmark | timestamp | failures |", "|---|---|---|---|"]
    for r in runs:
        res = r.get("results", {})
        fails = res.get("failures") if isinstance(res, dict) else None
        lines.append(f"| {r['_name']} | {r.get('benchmark')} | {r.get('timestamp', '')} | "
                     f"{fmt(fails)} |")
    lines.append("")
    for r in runs:
        try:
            if grid_cells(r):
                lines += grid_section(r, plots, "plots")
            elif r.get("benchmark") == "http-vs-nginx":
                lines += http_section(r, plots, "plots")
            else:
                lines += generic_section(r)
        except (KeyError, TypeError, ValueError, ZeroDivisionError) as e:
            lines += [f"## {r['_name']}", "", f"Could not render: {type(e).__name__}: {e}", ""]
    path = os.path.join(out, "report.md")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
