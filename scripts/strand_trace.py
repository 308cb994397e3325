#!/usr/bin/env python3
"""Diagnostics on a `ferrite trace` file of the strand instrumentation
(docs/timing.md "Traces" has the format; docs/results.md, "Why strandweaver
trails hops on the single-lock queue (stop 37)", the measurements made with
it). Not part of the build or the tests.

  strand_trace.py regions TRACE [N]   event counts, and thread 0's N most
                                      common operations as event sequences
                                      (pbu: an undo entry's barrier; jso: a
                                      JoinStrand that only orders)
  strand_trace.py edit TRACE OUT WHAT what-if rewrites (diagnostics only):
                                      ns-before-entry, drop-last-barrier
                                      (drop-last-barrier: recordings made
                                      before stop 39 only; the library no
                                      longer issues a barrier before the
                                      unlock, docs/logging.md)

HOPS on the same recording needs no rewrite: `ferrite sim TRACE --design
hops` replays a strand trace as the library's HOPS code (format version 3
marks the JoinStrands that only order; model::design_replays).
"""
import struct
import sys
from collections import Counter

KINDS = ['st', 'pwb', 'pfence', 'psync', 'ofence', 'dfence', 'pb', 'ns', 'js', 'acq', 'rel', 'opend']
CODE = {k: i for i, k in enumerate(KINDS)}
HEADER = 128


def read(path):
    data = open(path, 'rb').read()
    if data[:8] != b'FRTTRACE':
        sys.exit(f'{path}: not a ferrite trace')
    threads = struct.unpack_from('<I', data, 12)[0]
    counts = struct.unpack_from(f'<{threads}Q', data, HEADER)
    off = HEADER + 8 * threads
    events = []
    for c in counts:
        events.append([decode(b) for b in struct.unpack_from(f'<{c}Q', data, off)])
        off += 8 * c
    return data[:HEADER], events


def decode(bits):
    return KINDS[bits & 0xF], (bits >> 4) & 0xFFFFF, bits >> 24


def encode(kind, gap, payload):
    return CODE[kind] | min(gap, 0xFFFFF) << 4 | payload << 24


def write(path, header, events):
    header = bytearray(header)
    with open(path, 'wb') as f:
        f.write(header)
        f.write(struct.pack(f'<{len(events)}Q', *[len(t) for t in events]))
        for t in events:
            f.write(struct.pack(f'<{len(t)}Q', *[encode(*e) for e in t]))


def name(e):
    # an undo entry's barrier (kBarrierUndo) shows as pbu, a JoinStrand that
    # only orders (kJoinOrdering) as jso
    if e[2] & 1 and e[0] in ('pb', 'js'):
        return {'pb': 'pbu', 'js': 'jso'}[e[0]]
    return e[0]


def regions(path, n=6):
    header, events = read(path)
    total = Counter(name(e) for t in events for e in t)
    print(header[40:104].split(b'\0')[0].decode(), header[104:120].split(b'\0')[0].decode(), dict(total))
    ops, cur = Counter(), []
    for e in events[0]:
        cur.append(name(e))
        if e[0] == 'opend':
            ops[' '.join(cur)] += 1
            cur = []
    for seq, count in ops.most_common(n):
        print(count, seq)


def rewrite(events, one):
    """Applies one(i, evs) -> list of (kind, gap, payload) per event; an
    empty list drops the event, whose gap moves to the next one."""
    out = []
    for evs in events:
        o, carry = [], 0
        for i, (k, g, p) in enumerate(evs):
            new = one(i, evs)
            if not new:
                carry += g
                continue
            new[0] = (new[0][0], new[0][1] + carry, new[0][2])
            carry = 0
            o.extend(new)
        out.append(o)
    return out


def ns_before_entry(i, evs):
    # a NewStrand before an undo entry (st pwb pbu) whose strand already
    # holds write-backs (a fresh node's init stores)
    k, g, p = evs[i]
    if k == 'st' and i + 2 < len(evs) and evs[i + 1][0] == 'pwb' and name(evs[i + 2]) == 'pbu':
        for j in range(i - 1, -1, -1):
            if evs[j][0] in ('ns', 'js', 'acq', 'rel'):
                break
            if evs[j][0] == 'pwb':
                return [('ns', g, 0), (k, 0, p)]
    return [(k, g, p)]


def drop_last_barrier(i, evs):
    # the prune's last barrier (the one right before the unlock)
    k, g, p = evs[i]
    if k == 'pb' and i + 1 < len(evs) and evs[i + 1][0] == 'rel':
        return []
    return [(k, g, p)]


def main(argv):
    if len(argv) >= 2 and argv[0] == 'regions':
        regions(argv[1], int(argv[2]) if len(argv) > 2 else 6)
    elif len(argv) == 4 and argv[0] == 'edit':
        one = {'ns-before-entry': ns_before_entry, 'drop-last-barrier': drop_last_barrier}.get(argv[3])
        if one is None:
            sys.exit('edit: ns-before-entry | drop-last-barrier')
        header, events = read(argv[1])
        write(argv[2], header, rewrite(events, one))
    else:
        sys.exit(__doc__)


if __name__ == '__main__':
    main(sys.argv[1:])
