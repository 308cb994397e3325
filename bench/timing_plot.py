#!/usr/bin/env python3
"""Plots for `ferrite sim --paper strandweaver|hops --plot DIR` (docs/timing.md).

usage: timing_plot.py RESULTS.json [--out DIR]

strandweaver: fig7-speedup.png (speedup over x86 per workload and design),
              fig8-stalls.png (stall cycles by cause, per design, normalised to
              x86's cycles), fig9-strand-buffers.png (speedup vs strand buffers x
              entries, SFR workloads).
hops:         fig2-hops.png (speedup over x86 of HOPS, HOPS+ and the ideal design).
both:         directions.png (the ratios the issue's directions compare, per
              workload: the mean over the --recordings, whiskers from the
              lowest to the highest recording; documents without
              `directions`, from before stop 39, get none).
Prints the files it wrote.
"""
import argparse
import json
import os
import sys


def die(msg, code=2):
    print("timing_plot.py: " + msg, file=sys.stderr)
    sys.exit(code)


try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    die("matplotlib is not installed (apt-get install python3-matplotlib)", 3)


def bars(ax, rows, designs, value, ylabel):
    width = 0.8 / len(designs)
    for i, d in enumerate(designs):
        ys = [value(next(x for x in r["designs"] if x["design"] == d)) for r in rows]
        ax.bar([k + i * width for k in range(len(rows))], ys, width, label=d)
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(rows))])
    ax.set_xticklabels([r["workload"] for r in rows], rotation=30, ha="right")
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)


def directions(rows, note, out, written):
    """Each direction ratio per workload: mean over the recordings, min-max whiskers; 1.0 marked."""
    if not rows or "directions" not in rows[0]:
        return
    names = sorted(rows[0]["directions"].keys())
    fig, ax = plt.subplots(figsize=(max(9.0, 0.55 * len(rows) + 2), 4))
    width = 0.8 / len(names)
    for i, n in enumerate(names):
        mean = [r["directions"][n]["geomean"] for r in rows]
        lo = [m - r["directions"][n]["min"] for m, r in zip(mean, rows)]
        hi = [r["directions"][n]["max"] - m for m, r in zip(mean, rows)]
        ax.bar([k + i * width for k in range(len(rows))], mean, width, yerr=[lo, hi], capsize=2, label=n,
               error_kw={"lw": 0.8})
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(rows))])
    ax.set_xticklabels([r["workload"] for r in rows], rotation=30, ha="right")
    ax.set_ylabel("ratio (mean; whiskers: min-max)")
    ax.set_ylim(bottom=0.8)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7)
    k = len(rows[0]["directions"][names[0]]["recordings"])
    ax.set_title("Directions over %d recording(s) per workload (%s)" % (k, note))
    save(fig, out, "directions.png", written)


def save(fig, out, name, written):
    path = os.path.join(out, name)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    written.append(path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--out", default=".")
    a = ap.parse_args()
    with open(a.results) as f:
        doc = json.load(f)
    os.makedirs(a.out, exist_ok=True)
    written = []
    note = "timing model, %d threads x %d ops per trace" % (doc["threads"], doc["ops"])
    if doc["paper"] == "strandweaver":
        rows = doc["figure7"]
        designs = ["hops", "no-persist-queue", "strandweaver", "non-atomic-paper", "non-atomic"]
        wide = max(9.0, 0.55 * len(rows) + 2)  # 18 Table II workloads since stop 36
        fig, ax = plt.subplots(figsize=(wide, 4))
        bars(ax, rows, designs, lambda x: x["speedup_over_x86"], "speedup over x86")
        ax.axhline(1.0, color="black", lw=0.8)
        ax.set_title("StrandWeaver Fig. 7 (" + note + ")")
        save(fig, a.out, "fig7-speedup.png", written)

        causes = list(rows[0]["designs"][0]["stalls"].keys())
        all_designs = ["x86"] + designs
        fig, ax = plt.subplots(figsize=(max(10.0, 0.7 * len(rows) + 2), 4))
        width = 0.8 / len(all_designs)
        for i, d in enumerate(all_designs):
            bottom = [0.0] * len(rows)
            for c in causes:
                ys = []
                for r in rows:
                    x86 = next(x for x in r["designs"] if x["design"] == "x86")["cycles"]
                    rec = next(x for x in r["designs"] if x["design"] == d)
                    ys.append(rec["stalls"][c] / x86)
                ax.bar([k + i * width for k in range(len(rows))], ys, width, bottom=bottom,
                       label=c if i == 0 else None, color="C%d" % causes.index(c), edgecolor="white", lw=0.3)
                bottom = [b + y for b, y in zip(bottom, ys)]
        ax.set_xticks([k + 0.4 - width / 2 for k in range(len(rows))])
        ax.set_xticklabels([r["workload"] for r in rows], rotation=30, ha="right")
        ax.set_ylabel("stall cycles (sum over cores) / x86 cycles")
        ax.set_xlabel("bars, left to right: " + ", ".join(all_designs), fontsize=8)
        ax.legend(fontsize=7)
        ax.set_title("StrandWeaver Fig. 8: stall breakdown (" + note + ")")
        save(fig, a.out, "fig8-stalls.png", written)

        f9 = doc["figure9"]
        if f9:
            fig, ax = plt.subplots(figsize=(7, 4))
            configs = sorted({(r["buffers"], r["entries"]) for r in f9})
            ws = sorted({r["workload"] for r in f9})
            for w in ws:
                ys = [next(r["speedup_over_x86"] for r in f9 if r["workload"] == w and (r["buffers"], r["entries"]) == c)
                      for c in configs]
                ax.plot(range(len(configs)), ys, marker="o", label=w)
            ax.set_xticks(range(len(configs)))
            ax.set_xticklabels(["(%d,%d)" % c for c in configs], rotation=60, fontsize=7)
            ax.set_xlabel("(strand buffers, entries per buffer)")
            ax.set_ylabel("speedup over x86")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
            ax.set_title("StrandWeaver Fig. 9 (" + note + ")")
            save(fig, a.out, "fig9-strand-buffers.png", written)

        f10 = doc.get("figure10", [])
        if f10:
            fig, ax = plt.subplots(figsize=(6, 4))
            ks = sorted({r["ops_per_sfr"] for r in f10})
            for w in sorted({r["workload"] for r in f10}):
                ys = [next(r["speedup_over_x86"] for r in f10 if r["workload"] == w and r["ops_per_sfr"] == k)
                      for k in ks]
                ax.plot(ks, ys, marker="o", label=w)
            avg = doc.get("figure10_average_speedup_over_x86", {})
            if avg:
                ax.plot(ks, [avg[str(k)] for k in ks], marker="s", color="black", label="geometric mean")
            ax.set_xscale("log", base=2)
            ax.set_xticks(ks)
            ax.set_xticklabels([str(k) for k in ks])
            ax.set_xlabel("operations per SFR")
            ax.set_ylabel("StrandWeaver speedup over x86")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
            ax.set_title("StrandWeaver Fig. 10 (" + note + ")")
            save(fig, a.out, "fig10-ops-per-sfr.png", written)
        directions(rows, note, a.out, written)
    else:
        rows = doc["figure2"]
        fig, ax = plt.subplots(figsize=(7, 4))
        bars(ax, rows, ["hops", "hops+", "ideal"], lambda x: x["speedup_over_x86"], "speedup over x86")
        ax.axhline(1.0, color="black", lw=0.8)
        ax.set_title("HOPS+ Fig. 2 (" + note + ")")
        save(fig, a.out, "fig2-hops.png", written)
        directions(rows, note, a.out, written)
    for w in written:
        print(w)


if __name__ == "__main__":
    main()
