"""Reading `ferrite bench --json` output (shared by plot.py and tables.py).

No third-party imports: tables.py must work without matplotlib.
"""
import json
import sys

REQUIRED = ("structure", "technique", "threads", "backend", "workload", "mops_median")


def load(path, prog):
    """The list of records in `path`; exits with a message naming `prog`
    when the file is unreadable, not JSON, or a record lacks a field."""
    def die(msg):
        print(f"{prog}: {msg}", file=sys.stderr)
        sys.exit(2)
    try:
        with open(path) as f:
            records = json.load(f)
    except (OSError, ValueError) as e:
        die(f"cannot read {path}: {e}")
    if not isinstance(records, list):
        die(f"{path}: expected a JSON list of records")
    for i, r in enumerate(records):
        for field in REQUIRED:
            if field not in r:
                die(f"{path}: record {i} lacks field '{field}'")
    return records
