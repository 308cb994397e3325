#!/usr/bin/env python3
"""Writes the fuzz campaign's tables into docs/pool-format.md from the JSON
that `ferrite fuzz-pool --json-out` wrote (docs/data/fuzz-pool.json), so that
no number on the page is copied by hand.

    scripts/fuzz_tables.py [--check] [JSON] [PAGE]

The tables go between the page's `<!-- fuzz-tables:begin -->` and
`<!-- fuzz-tables:end -->` lines. --check writes nothing and exits 1 when the
page differs from what the JSON gives (a ctest test runs it).
"""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEGIN, END = "<!-- fuzz-tables:begin -->", "<!-- fuzz-tables:end -->"
OUTCOMES = ["refused", "repaired", "benign", "flagged-fine", "flagged-wrong", "signal", "hang", "silent", "child-error"]


def table(rows, first):
    out = ["| " + first + " | " + " | ".join(OUTCOMES) + " |", "|" + "---|" * (len(OUTCOMES) + 1)]
    for name in sorted(rows):
        out.append("| " + name + " | " + " | ".join(str(rows[name].get(o, 0)) for o in OUTCOMES) + " |")
    return out


def render(d):
    cmd = (f"ferrite fuzz-pool --mutations {d['mutations']} --seed {d['seed']} "
           f"--pool-mib {d['pool_bytes'] >> 20} --json-out docs/data/fuzz-pool.json")
    lines = [
        f"From `docs/data/fuzz-pool.json` (`{cmd}`): {d['mutations']} mutated pools of "
        f"{d['pool_bytes']} bytes ({d['roots']} roots, {d['nodes']} nodes, {d['payloads']} payloads), "
        f"{d['seconds']:.0f} s, {d['cases_per_second']:.0f} pools/s on a shared 2-core machine.",
        "",
        "| " + " | ".join(OUTCOMES) + " |",
        "|" + "---|" * len(OUTCOMES),
        "| " + " | ".join(str(d["outcomes"].get(o, 0)) for o in OUTCOMES) + " |",
        "",
        "Per mutation kind:",
        "",
        *table(d["by_kind"], ""),
        "",
        "Per region (of the first mutated byte):",
        "",
        *table(d["by_region"], ""),
        "",
        f"Failures: {d['failures_total']}, per family:",
        "",
    ]
    fam = d["failures_by_family"]
    if not fam:
        lines.append("* none")
    for name in sorted(fam):
        lines.append("* " + name + ": " + ", ".join(f"{k} {v}" for k, v in sorted(fam[name].items())))
    lines += ["", "Each failure, with its one-line reproduction:", ""]
    for f in d["failures"]:
        lines.append(f"* case {f['case']} ({f['family']}, {f['mutation']}): {f['outcome']}: {f['detail']}")
    if not d["failures"]:
        lines.append("* none")
    return "\n".join(lines)


def main(argv):
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    src = Path(args[0]) if args else ROOT / "docs/data/fuzz-pool.json"
    page = Path(args[1]) if len(args) > 1 else ROOT / "docs/pool-format.md"
    text = page.read_text()
    if BEGIN not in text or END not in text:
        print(f"{page}: no {BEGIN} ... {END} section", file=sys.stderr)
        return 2
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = head + BEGIN + "\n" + render(json.loads(src.read_text())) + "\n" + END + tail
    if check:
        if new != text:
            print(f"{page}: the fuzz tables differ from {src}: run scripts/fuzz_tables.py", file=sys.stderr)
            return 1
        return 0
    page.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
