#!/usr/bin/env python3
"""Owners under logical maps, computed without reshard's code.

Writes tests/data/logical-owners.txt for tests/test_logical.c: a few logical
maps (both forms: bits of the point, and the point modulo a number of
logical shards), each followed by points and their owners as computed by
tests/reshard_oracle.py's logical map, which follows the written rule and
shares no code with src/shardmap.  The points are random, the first and
last point of every assigned range's logical shards, and the ends of the
point space.  Deterministic; run it again only when the maps change:
python3 tests/data/gen_logical_owners.py

The file, one record a line:

    map NAME bits SHIFT BITS LAST:NODE,…   a map (NODE a shard index)
    map NAME mod L LAST:NODE,…
    POINT NODE                             a point of the last map, its owner
"""
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(HERE))
from reshard_oracle import MAX, logical  # noqa: E402

MAPS = [
    # Instagram's ids: 13 bits of logical shard above 10 of sequence.
    ("instagram", {"shift": 10, "bits": 13},
     [(999, 0), (2047, 1), (2048, 2), (4095, 3), (6000, 0), (8191, 1)]),
    # The top 12 bits of a hash: an interval map over the point space.
    ("top12", {"shift": 52, "bits": 12},
     [(1023, 0), (2047, 1), (3071, 2), (4000, 3), (4095, 0)]),
    ("top32", {"shift": 32, "bits": 32},
     [(5, 1), (2**31, 0), (2**32 - 1, 2)]),
    ("lowbit", {"shift": 0, "bits": 1}, [(0, 3), (1, 2)]),
    ("mod1000", {"logical_shards": 1000},
     [(249, 0), (499, 1), (500, 3), (998, 2), (999, 1)]),
    ("mod1", {"logical_shards": 1}, [(0, 2)]),
    ("mod2e32", {"logical_shards": 2**32},
     [(7, 0), (2**31 + 1, 1), (2**32 - 1, 3)]),
]


def first_point(size, shard):
    return shard << size["shift"] if "bits" in size else shard


def main():
    rng = random.Random(20261214)
    lines = []
    for name, size, assign in MAPS:
        owner = logical(assign, **size)
        if "bits" in size:
            head = f"bits {size['shift']} {size['bits']}"
            step = 1 << size["shift"]
        else:
            head = f"mod {size['logical_shards']}"
            step = 1
        lines.append(f"map {name} {head} " +
                     ",".join(f"{last}:{node}" for last, node in assign))
        points = {0, MAX, MAX - 1, 1}
        for last, _ in assign:
            points.add(first_point(size, last))
            points.add(first_point(size, last) + step - 1)
            points.add(first_point(size, last + 1) & MAX)
        points.update(rng.getrandbits(64) for _ in range(200))
        points.update(rng.getrandbits(24) for _ in range(100))
        for p in sorted(points):
            lines.append(f"{p} {owner(p).shard}")
    with open(os.path.join(HERE, "logical-owners.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
