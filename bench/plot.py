#!/usr/bin/env python3
"""Plots for `ferrite bench --json` output (schema: docs/bench-schema.md).

usage: plot.py RESULTS.json [--out DIR]

Writes, per experiment group (structure x workload x backend x heap size):
  <group>-throughput.png   Mops/s vs threads, one line per technique
                           (median, bars from min to max) — PBcomb Figs 1/3/4/6/7a
  <group>-verbs.png        pwb, pfence, psync per operation vs threads — Figs 2/5
and, when several heap sizes were measured, heap-sizes-<backend>.png
(throughput vs threads per heap size, Fig. 7b). Prints the files it wrote.
Line style: solid = Ferrite's own techniques (the record's "ferrite" field), dashed =
persistent competitor, dotted = transient. Set/map (key-mix) groups also carry the
get:insert:remove mix and key range in their names.
"""
import argparse
import json
import os
import sys
from collections import OrderedDict

import bench_json


def die(msg, code=2):
    print("plot.py: " + msg, file=sys.stderr)
    sys.exit(code)


try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    die("matplotlib is not installed (apt-get install python3-matplotlib)", 3)


def kind(rec):
    if "ferrite" in rec:
        ferrite = bool(rec["ferrite"])
    else:  # files written before the "ferrite" field existed
        ferrite = rec["technique"].startswith(("pb-", "pwf-", "pbcomb", "pwfcomb"))
    if ferrite:
        return "ferrite"
    return "persistent" if rec.get("persistent") else "transient"


STYLE = {"ferrite": "-", "persistent": "--", "transient": ":"}


def slug(text):
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in text).strip("-")


def group_key(r):
    return (r.get("experiment", ""), r["structure"], r["workload"], r["backend"], r.get("heap_size", 0),
            r.get("mix", ""), r.get("key_range", 0))


def group_name(key):
    exp, structure, workload, backend, heap, mix, keys = key
    parts = [exp] if exp else []
    parts += [structure, workload, backend]
    if heap:
        parts.append("heap%d" % heap)
    if mix:
        parts.append("mix%s-keys%d" % (mix.replace(":", "-"), keys))
    return slug("-".join(parts))


def group_title(key, machine):
    exp, structure, workload, backend, heap, mix, keys = key
    t = "%s (%s), backend %s" % (structure, workload, backend)
    if heap:
        t += ", heap size %d" % heap
    if mix:
        t += ", get:insert:remove %s, keys 1..%d" % (mix, keys)
    if exp:
        t = exp + ": " + t
    if machine:
        t += "\n%s, %s cores, %s" % (machine.get("cpu_model", "?"), machine.get("cores", "?"), machine.get("flush", "?"))
    return t


def by_technique(recs):
    out = OrderedDict()
    for r in recs:
        if r.get("error"):
            continue
        out.setdefault(r["technique"], []).append(r)
    for k in out:
        out[k].sort(key=lambda r: r["threads"])
    return out


def set_thread_ticks(ax, recs):
    threads = sorted({r["threads"] for r in recs})
    if threads and threads[-1] / threads[0] >= 8:
        ax.set_xscale("log", base=2)
    ax.set_xticks(threads)
    ax.set_xticklabels([str(t) for t in threads])
    ax.set_xlabel("threads")


def plot_throughput(key, recs, machine, path):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, rs in by_technique(recs).items():
        xs = [r["threads"] for r in rs]
        med = [r["mops_median"] for r in rs]
        lo = [r["mops_median"] - r["mops_min"] for r in rs]
        hi = [r["mops_max"] - r["mops_median"] for r in rs]
        ax.errorbar(xs, med, yerr=[lo, hi], label=name, linestyle=STYLE[kind(rs[0])], marker="o", capsize=3)
    set_thread_ticks(ax, recs)
    ax.set_ylabel("Mops/s (median; bars: min-max)")
    ax.set_title(group_title(key, machine), fontsize=9)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_verbs(key, recs, machine, path):
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.8), sharex=True)
    for name, rs in by_technique(recs).items():
        if rs[0].get("persistent") is False and all(r["pwb_per_op"] == 0 for r in rs):
            continue  # transient: nothing to show
        xs = [r["threads"] for r in rs]
        for ax, field in zip(axes, ("pwb_per_op", "pfence_per_op", "psync_per_op")):
            ax.plot(xs, [r[field] for r in rs], label=name, linestyle=STYLE[kind(rs[0])], marker="o")
    for ax, title in zip(axes, ("pwb per op", "pfence per op", "psync per op")):
        ax.set_title(title, fontsize=9)
        set_thread_ticks(ax, recs)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    if labels:
        axes[0].legend(fontsize=7)
    fig.suptitle(group_title(key, machine), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_heap_sizes(backend, recs, machine, path):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    series = OrderedDict()
    for r in recs:
        if r.get("error"):
            continue
        series.setdefault((r["technique"], r["heap_size"]), []).append(r)
    for (name, size), rs in sorted(series.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        rs.sort(key=lambda r: r["threads"])
        ax.plot([r["threads"] for r in rs], [r["mops_median"] for r in rs], marker="o",
                linestyle=STYLE[kind(rs[0])], label="%s, %d keys" % (name, size))
    set_thread_ticks(ax, recs)
    ax.set_ylabel("Mops/s (median)")
    ax.set_title(group_title(("", "heap", "heap-pairs", backend, 0, "", 0), machine), fontsize=9)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", help="output of ferrite bench --json")
    ap.add_argument("--out", default=".", help="directory for the PNG files")
    args = ap.parse_args()
    records = bench_json.load(args.json, "plot.py")
    os.makedirs(args.out, exist_ok=True)
    machine = records[0].get("machine", {}) if records else {}

    groups = OrderedDict()
    for r in records:
        groups.setdefault(group_key(r), []).append(r)
    written = []
    for key, recs in groups.items():
        base = os.path.join(args.out, group_name(key))
        plot_throughput(key, recs, machine, base + "-throughput.png")
        written.append(base + "-throughput.png")
        if any(r.get("persistent") for r in recs):
            plot_verbs(key, recs, machine, base + "-verbs.png")
            written.append(base + "-verbs.png")
    heap_by_backend = OrderedDict()
    for r in records:
        if r["structure"] == "heap":
            heap_by_backend.setdefault(r["backend"], []).append(r)
    for backend, recs in heap_by_backend.items():
        if len({r.get("heap_size", 0) for r in recs}) > 1:
            path = os.path.join(args.out, "heap-sizes-%s.png" % slug(backend))
            plot_heap_sizes(backend, recs, machine, path)
            written.append(path)
    print("wrote %d plot(s) to %s:" % (len(written), os.path.abspath(args.out)))
    for w in written:
        print("  " + w)


if __name__ == "__main__":
    main()
