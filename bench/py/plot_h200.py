#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Plots of the PyTorch benchmarks' H200 results (B3, B7, B8, DCP against FileSystemWriter) from
their JSON files: one figure of four panels, medians with the min-max range of the repeats.

  /usr/bin/python3 bench/py/plot_h200.py [--results results/h200] [--out docs/pytorch-h200.png]

Each panel takes the newest file of its benchmark in the results folder (train-*, tokens-gpu-*,
hf_load-*, ddp-ckpt-dcp8-gpu-*); a benchmark with no file there leaves its panel empty, saying
so."""
import argparse
import glob
import json
import os

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def newest(results, pattern):
    files = sorted(glob.glob(os.path.join(results, pattern)))
    return files[-1] if files else None


def stat(arm, key, scale=1.0):
    s = arm.get(key) or {}
    med = s.get("median")
    if med is None:
        return None
    return (med * scale, (med - s.get("min", med)) * scale, (s.get("max", med) - med) * scale)


def bars(ax, labels, stats, title, ylabel, source):
    xs = list(range(len(labels)))
    meds = [s[0] if s else 0 for s in stats]
    err = [[s[1] if s else 0 for s in stats], [s[2] if s else 0 for s in stats]]
    ax.bar(xs, meds, yerr=err, capsize=4, color=["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                                  "#9467bd"][:len(xs)])
    for x, m in zip(xs, meds):
        ax.annotate(f"{m:.0f}" if m >= 100 else f"{m:.3g}", (x + 0.08, m), ha="left",
                    va="bottom", fontsize=8)
    ax.set_xticks(xs)
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_title(title, fontsize=10)
    ax.set_ylabel(ylabel, fontsize=9)
    ax.text(0.99, 0.98, os.path.basename(source), transform=ax.transAxes, ha="right", va="top",
            fontsize=6, color="grey")


def empty(ax, title, why):
    ax.set_title(title, fontsize=10)
    ax.text(0.5, 0.5, why, ha="center", va="center", transform=ax.transAxes, fontsize=9)
    ax.set_axis_off()


def arms_of(path):
    with open(path) as f:
        return json.load(f)["results"]["arms"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", default=os.path.join(REPO, "results", "h200"))
    ap.add_argument("--out", default=os.path.join(REPO, "docs", "pytorch-h200.png"))
    a = ap.parse_args()
    fig, axs = plt.subplots(2, 2, figsize=(11, 8))
    panels = [
        ("train-wharf-*.json", "B3: ResNet-50 training, images/s", "images/s",
         [("raw-rdma", "raw, RDMA"), ("raw-http", "raw, HTTP"), ("jpeg-http", "JPEG, HTTP")],
         "images_per_s", 1.0),
        ("tokens-gpu-wharf-*.json", "B7: TokenDataset into GPU memory", "M tokens/s",
         [("rdma", "RDMA"), ("http", "HTTP")], "tokens_per_s", 1e-6),
        ("hf_load-wharf-*.json", "B8: 16 GB HF snapshot into VRAM, seconds", "s",
         [("wharf-rdma", "wharf RDMA"), ("wharf-http", "wharf HTTP"),
          ("from-pretrained", "from_pretrained\n(local disk)"), ("boto3", "boto3 + load")],
         "wall_s", 1.0),
    ]
    for ax, (pat, title, ylabel, arms, key, scale) in zip(axs.flat, panels):
        path = newest(a.results, pat)
        if not path:
            empty(ax, title, f"no {pat} in {a.results}")
            continue
        res = arms_of(path)
        bars(ax, [lab for _, lab in arms], [stat(res.get(k, {}), key, scale) for k, _ in arms],
             title, ylabel, path)
    ax = axs.flat[3]
    title = "DCP, 8 GiB of GPU tensors: wharf vs FileSystemWriter, seconds"
    path = newest(a.results, "ddp-ckpt-dcp8-gpu-*.json")
    if not path:
        empty(ax, title, "no ddp-ckpt-dcp8-gpu-*.json")
    else:
        res = arms_of(path)
        labels, stats = [], []
        for arm, lab in (("dcp", "wharf"), ("dcpfs", "FileSystemWriter")):
            for ph in ("save", "load"):
                labels.append(f"{lab}\n{'save' if ph == 'save' else 'restore'}")
                stats.append(stat(res.get(arm, {}).get(ph, {}), "stall_s"))
        bars(ax, labels, stats, title, "s", path)
    fig.suptitle("PyTorch benchmarks on the H200 machine (medians, min-max of the repeats)")
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)
    print(a.out)


if __name__ == "__main__":
    main()
