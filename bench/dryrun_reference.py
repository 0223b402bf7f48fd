#!/usr/bin/env python3
"""Reference dry-run of a ring → ring reshard, in plain Python.

The same algorithm as `reshard dry-run PLAN --keys FILE` for two `ring` maps
with the `sha256_64` hash (DESIGN §2, §3), written the way a competent Python
programmer would write it with the standard library — hashlib + bisect — so
that bench/dryrun can compare the two on the same keys:

  * sha256_64(key) = the first 8 bytes of SHA-256 of the key's bytes, read
    big-endian as an unsigned 64-bit number;
  * node s places V points at sha256_64("s#0") … sha256_64("s#(V-1)");
  * a key belongs to the first ring point whose position is ≥ its point,
    wrapping past the last point to the first; equal positions are ordered
    by node name.

Each ring is compiled once into a sorted list of positions and a parallel
list of owners (with the first owner repeated at the end, so that
bisect_left's "past the end" index needs no branch).  Keys are read in
binary, in 1 MiB blocks split on LF; a CR before the LF is dropped and
empty lines are skipped.  Every key is hashed once and looked up in both
rings.  The per-(from, to) pair counts give the mover count, the per-node
counts before and after, and the flows.

Output: each mover as `key<TAB>from<TAB>to` on stdout; at the end one JSON
object on stderr, in the shape of `reshard dry-run --summary --format json`:
  {"keys": N, "moved": M, "before": {node: count}, "after": {...},
   "flows": [{"from": a, "to": b, "keys": n}, ...],
   "skew_before": x, "skew_after": y}
(skew = (max − min) / min over the map's nodes, null when a node has none).

Usage:
  dryrun_reference.py --from-nodes s0,s1,s2,s3 --to-nodes s0,s1,s2,s3,s4 \\
                      [--vnodes 100] KEYFILE|-
"""

import argparse
import hashlib
import json
import struct
import sys
from bisect import bisect_left

_BLOCK = 1 << 20
_U64BE = struct.Struct(">Q").unpack_from


def sha256_64(data):
    return _U64BE(hashlib.sha256(data).digest())[0]


def compile_ring(nodes, vnodes, index_of):
    """Return (positions, owners): positions sorted ascending (ties by node
    name), owners[i] the node index owning positions[i], plus owners[len]
    = owners[0] for the wrap-around."""
    points = []
    for name in nodes:
        raw = name.encode("utf-8")
        for v in range(vnodes):
            points.append((sha256_64(raw + b"#" + str(v).encode("ascii")), raw,
                           index_of[name]))
    points.sort()  # by position, then by node name (bytewise, as strcmp)
    positions = [p for p, _, _ in points]
    owners = [o for _, _, o in points]
    owners.append(owners[0])
    return positions, owners


def key_blocks(f):
    """Yield lists of keys (bytes), one list per block read from F."""
    rest = b""
    read = f.read
    while True:
        block = read(_BLOCK)
        if not block:
            break
        block = rest + block
        cut = block.rfind(b"\n")
        if cut < 0:
            rest = block
            continue
        rest = block[cut + 1:]
        block = block[:cut]
        if b"\r" in block:
            # The cut took the last line's LF, so its CR is now at the end.
            if block.endswith(b"\r"):
                block = block[:-1]
            block = block.replace(b"\r\n", b"\n")
        yield block.split(b"\n")
    if rest:
        if rest.endswith(b"\r"):
            rest = rest[:-1]
        yield [rest]


def skew(counts):
    lo, hi = min(counts), max(counts)
    if lo == 0:
        return None
    return round((hi - lo) / lo, 6)


def parse_nodes(text):
    nodes = [n for n in text.split(",") if n]
    if not nodes:
        raise argparse.ArgumentTypeError("needs at least one node name")
    if len(set(nodes)) != len(nodes):
        raise argparse.ArgumentTypeError("node names must be distinct")
    return nodes


def main():
    ap = argparse.ArgumentParser(
        description="Reference ring -> ring dry-run (hashlib + bisect).")
    ap.add_argument("--from-nodes", type=parse_nodes, required=True,
                    metavar="A,B,...")
    ap.add_argument("--to-nodes", type=parse_nodes, required=True,
                    metavar="A,B,...")
    ap.add_argument("--vnodes", type=int, default=100)
    ap.add_argument("keys", metavar="KEYFILE", help="one key per line, or -")
    args = ap.parse_args()
    if args.vnodes < 1:
        ap.error("--vnodes must be at least 1")

    # One index space for the nodes of both maps, in order of first mention.
    names = []
    for n in args.from_nodes + args.to_nodes:
        if n not in names:
            names.append(n)
    index_of = {n: i for i, n in enumerate(names)}
    k = len(names)

    fpos, fown = compile_ring(args.from_nodes, args.vnodes, index_of)
    tpos, town = compile_ring(args.to_nodes, args.vnodes, index_of)
    # A key's pair code is from*k + to; pre-scale the from owners.
    fown = [o * k for o in fown]
    # suffix[code] is b"\tfrom\tto\n" for a mover, None for a key that stays.
    enc = [n.encode("utf-8") for n in names]
    suffix = [None] * (k * k)
    for a in range(k):
        for b in range(k):
            if a != b:
                suffix[a * k + b] = b"\t" + enc[a] + b"\t" + enc[b] + b"\n"
    pairs = [0] * (k * k)

    sha = hashlib.sha256
    unpack = _U64BE
    bisect = bisect_left
    out = sys.stdout.buffer
    write = out.write
    join = b"".join

    f = sys.stdin.buffer if args.keys == "-" else open(args.keys, "rb",
                                                         buffering=0)
    try:
        for keys in key_blocks(f):
            movers = []
            emit = movers.append
            for key in keys:
                if not key:
                    continue
                p = unpack(sha(key).digest())[0]
                c = fown[bisect(fpos, p)] + town[bisect(tpos, p)]
                pairs[c] += 1
                s = suffix[c]
                if s is not None:
                    emit(key)
                    emit(s)
            if movers:
                write(join(movers))
    finally:
        if f is not sys.stdin.buffer:
            f.close()
    out.flush()

    before = [0] * k
    after = [0] * k
    flows = []
    for a in range(k):
        for b in range(k):
            n = pairs[a * k + b]
            before[a] += n
            after[b] += n
            if a != b and n:
                flows.append({"from": names[a], "to": names[b], "keys": n})
    flows.sort(key=lambda fl: (-fl["keys"], fl["from"], fl["to"]))
    total = sum(pairs)
    moved = sum(fl["keys"] for fl in flows)
    fb = [before[index_of[n]] for n in args.from_nodes]
    ta = [after[index_of[n]] for n in args.to_nodes]
    summary = {
        "keys": total,
        "moved": moved,
        "before": dict(zip(args.from_nodes, fb)),
        "after": dict(zip(args.to_nodes, ta)),
        "flows": flows,
        "skew_before": skew(fb),
        "skew_after": skew(ta),
    }
    sys.stderr.write(json.dumps(summary) + "\n")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        sys.exit(1)
