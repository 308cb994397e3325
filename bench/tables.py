#!/usr/bin/env python3
"""Markdown tables from `ferrite bench --json` output (for docs/results.md).

Usage: python3 bench/tables.py RESULTS.json [--experiment LABEL ...]

One table per (experiment, structure, backend, heap size): a row per
technique, a column per thread count with the median Mops/s and the min-max
spread, then pwb/pfence/psync per operation and the combining degree at the
highest thread count, and the ratio to the run's reference technique at each
thread count. Everything printed comes from the JSON; nothing is computed
that the JSON does not hold except the spread in percent.
"""
import argparse
from collections import OrderedDict

import bench_json


def key(r):
    return (r["experiment"], r["structure"], r["backend"], r.get("heap_size", 0), r["workload"], r.get("mix", ""),
            r.get("key_range", 0))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json")
    ap.add_argument("--experiment", action="append", help="only these experiment labels")
    a = ap.parse_args()
    recs = bench_json.load(a.json, "tables.py")
    groups = OrderedDict()
    for r in recs:
        if a.experiment and r["experiment"] not in a.experiment:
            continue
        groups.setdefault(key(r), []).append(r)
    for (exp, structure, backend, heap, workload, mix, keys), rs in groups.items():
        threads = sorted({r["threads"] for r in rs})
        techs = list(OrderedDict.fromkeys(r["technique"] for r in rs))
        by = {(r["technique"], r["threads"]): r for r in rs}
        ref = rs[0].get("reference", "")
        title = f"{exp}: {structure}, workload {workload}, backend {backend}"
        if heap:
            title += f", heap size {heap}"
        if mix:
            title += f", get:insert:remove {mix}, keys 1..{keys}"
        print(f"#### {title}\n")
        print(f"Reference for the ratios: `{ref}`. Cells: median Mops/s [spread min-max in % of the median].\n")
        hdr = ["technique"] + [f"{t} thr" for t in threads] + ["ratio " + "/".join(map(str, threads)),
                                                               f"pwb/op ({threads[-1]})", "pfence/op", "psync/op",
                                                               "comb"]
        print("| " + " | ".join(hdr) + " |")
        print("|" + "---|" * len(hdr))
        for t in techs:
            cells = [f"`{t}`"]
            ratios = []
            for n in threads:
                r = by.get((t, n))
                if r is None or r.get("error"):
                    cells.append("-")
                    ratios.append("-")
                    continue
                med = r["mops_median"]
                spread = 100.0 * (r["mops_max"] - r["mops_min"]) / med if med > 0 else 0.0
                cells.append(f"{med:.3f} [{spread:.0f}%]")
                ratios.append(f"{r['ratio']:.2f}" if r.get("ratio") is not None else "-")
            cells.append("/".join(ratios))
            last = by.get((t, threads[-1]))
            if last is None or last.get("error"):
                cells += ["-"] * 4
            else:
                cd = last.get("combining_degree") or 0
                cells += [f"{last['pwb_per_op']:.2f}", f"{last['pfence_per_op']:.2f}", f"{last['psync_per_op']:.2f}",
                          f"{cd:.1f}" if cd else "-"]
            print("| " + " | ".join(cells) + " |")
        print()


if __name__ == "__main__":
    main()
