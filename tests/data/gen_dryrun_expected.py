#!/usr/bin/env python3
"""Expected dry-run results, computed independently of the C code.

The plain Python implementation of DESIGN §2-§3 in tests/reshard_oracle.py
(sha256_64, slots, ring, ranges with identity; shared with tests/oracle.py)
over the key files in this folder.  It writes, for each plan NAME.cfg here,
NAME.movers (key<TAB>from<TAB>to, in input order) and NAME.json (the
summary of DESIGN §5).  tests/test_dryrun.c compares the
binary's output with these files.  Run it again only when the key files or
plans change:  python3 tests/data/gen_dryrun_expected.py
"""
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(HERE))
from reshard_oracle import (MAX, identity, logical, moves,  # noqa: E402
                            ranges, ring, sha256_64, slots)

# Logical shards 0-4095 in 12 bits above 10 of sequence (ids as Instagram
# makes them), a quarter a node, then moved in ranges between the four.
ID_BITS = {"shift": 10, "bits": 12}
QUARTERS = [(1023, "a"), (2047, "b"), (3071, "c"), (4095, "d")]
SHUFFLED = [(767, "a"), (1023, "d"), (2047, "b"), (2303, "a"), (3071, "c"),
            (3583, "d"), (4095, "b")]

CASES = {
    # name: (key file, hash, from owner, to owner, from nodes, to nodes)
    "slots-2x": ("keys.txt", sha256_64,
                 slots(2, 4, ["db0", "db1"], "orders"),
                 slots(4, 4, ["db0", "db1", "db2", "db3"], "orders"),
                 ["db0", "db1"], ["db0", "db1", "db2", "db3"]),
    "ring-4to5": ("keys.txt", sha256_64,
                  ring(100, ["s0", "s1", "s2", "s3"], sha256_64),
                  ring(100, ["s0", "s1", "s2", "s3", "s4"], sha256_64),
                  ["s0", "s1", "s2", "s3"], ["s0", "s1", "s2", "s3", "s4"]),
    # The classic trap: 10 databases of 100 tables, which an application
    # hashing database and table independently fills only one in ten of.
    "slots-10x100": ("keys.txt", sha256_64,
                     slots(10, 100, [f"db{i}" for i in range(10)], "orders"),
                     slots(20, 100, [f"db{i}" for i in range(20)], "orders"),
                     [f"db{i}" for i in range(10)],
                     [f"db{i}" for i in range(20)]),
    "ranges-ids": ("ids.txt", identity,
                   ranges([(4999, "a"), (MAX, "b")]),
                   ranges([(2499, "a"), (4999, "c"), (7499, "b"), (MAX, "d")]),
                   ["a", "b"], ["a", "c", "b", "d"]),
    "logical-4096": ("logical-ids.txt", identity,
                     logical(QUARTERS, **ID_BITS),
                     logical(SHUFFLED, **ID_BITS),
                     ["a", "b", "c", "d"], ["a", "b", "c", "d"]),
    # A doubling: each node's upper logical shards go to its replica.
    "logical-2x": ("logical-ids.txt", identity,
                   logical([(2047, "a"), (4095, "b")], **ID_BITS),
                   logical([(1023, "a"), (2047, "c"), (3071, "b"),
                            (4095, "d")], **ID_BITS),
                   ["a", "b"], ["a", "c", "b", "d"]),
    # The modulo form over hashed text keys.
    "logical-mod": ("keys.txt", sha256_64,
                    logical([(299, "a"), (599, "b"), (999, "c")],
                            logical_shards=1000),
                    logical([(199, "a"), (299, "d"), (599, "b"),
                             (899, "c"), (999, "d")], logical_shards=1000),
                    ["a", "b", "c"], ["a", "b", "c", "d"]),
}


def skew(counts):
    lo, hi = min(counts), max(counts)
    return None if lo == 0 else (hi - lo) / lo


def physical(keys_points, n, t, nodes, table):
    """Rows per physical table of slots (n, t) and of db = p % n,
    table = p % t, written without the slot arithmetic of the C code."""
    own = {f"{d}.{table}_{i}": 0 for d in nodes for i in range(t)}
    indep = dict(own)
    for p in keys_points:
        own[f"{nodes[(p % (n * t)) // t]}.{table}_{p % (n * t) % t}"] += 1
        indep[f"{nodes[p % n]}.{table}_{p % t}"] += 1

    def spread(rows):
        return {"empty": sum(1 for v in rows.values() if v == 0),
                "skew": skew(list(rows.values())), "rows": rows}
    out = {"databases": n, "tables_per_db": t}
    out.update(spread(own))
    out["independent"] = spread(indep)
    return out


def hot_keys(keys, h, to):
    """Keys holding more than 5% of their shard's rows under to."""
    per_key, per_shard = {}, {}
    for k in keys:
        per_key[k] = per_key.get(k, 0) + 1
        s = to(h(k)).shard
        per_shard[s] = per_shard.get(s, 0) + 1
    hot = [(k, n, to(h(k)).shard) for k, n in per_key.items()
           if n * 20 > per_shard[to(h(k)).shard]]
    hot.sort(key=lambda x: (-x[1], x[0]))
    return [{"key": k.decode(), "rows": n, "shard": s,
             "share": n / per_shard[s]} for k, n, s in hot]


def make_keys():
    rng = random.Random(20261202)
    keys = [f"customer-{rng.randrange(10**9)}" for _ in range(6000)]
    keys += [str(rng.randrange(-10**12, 10**12)) for _ in range(3000)]
    keys += ["Grüße", "東京", "😀", "𝄞-music", "a\"b", "x`y"]
    keys += ["customer-hot"] * 250 + ["customer-warm"] * 40
    rng.shuffle(keys)
    with open(os.path.join(HERE, "keys.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(keys) + "\n")
    with open(os.path.join(HERE, "ids.txt"), "w") as f:
        f.write("\n".join(str(rng.randrange(10000)) for _ in range(5000)) + "\n")


def make_logical_ids():
    """Ids of 41 bits of time, 12 of logical shard, 10 of sequence."""
    rng = random.Random(20261214)
    ids = [rng.getrandbits(41) << 22 | rng.randrange(4096) << 10 |
           rng.getrandbits(10) for _ in range(6000)]
    with open(os.path.join(HERE, "logical-ids.txt"), "w") as f:
        f.write("\n".join(map(str, ids)) + "\n")


def main():
    make_keys()
    make_logical_ids()
    for name, (keyfile, h, frm, to, from_nodes, to_nodes) in CASES.items():
        with open(os.path.join(HERE, keyfile), "rb") as f:
            keys = [line.rstrip(b"\n") for line in f if line.rstrip(b"\n")]
        before = {s: 0 for s in from_nodes}
        after = {s: 0 for s in to_nodes}
        flows = {}
        movers = []
        for k in keys:
            p = h(k)
            f, t = frm(p), to(p)
            before[f.shard] += 1
            after[t.shard] += 1
            if moves(f, t):
                movers.append(k + b"\t" + f.label.encode() + b"\t" + t.label.encode() + b"\n")
                flows[(f.shard, t.shard)] = flows.get((f.shard, t.shard), 0) + 1
        with open(os.path.join(HERE, name + ".movers"), "wb") as f:
            f.write(b"".join(movers))
        summary = {
            "keys": len(keys), "moved": len(movers),
            "before": before, "after": after,
            "flows": [{"from": a, "to": b, "keys": n} for (a, b), n in sorted(flows.items())],
            "skew_before": skew(list(before.values())),
            "skew_after": skew(list(after.values())),
            "hot": hot_keys(keys, h, to),
        }
        points = [h(k) for k in keys]
        for side, (m, nodes) in (("before", (frm, from_nodes)),
                                 ("after", (to, to_nodes))):
            label = m(0).label
            if "." in label:  # a slots map: db.orders_i
                t = 1 + max(m(p).table for p in range(100000))
                summary["physical_" + side] = physical(
                    points, len(nodes), t, nodes, "orders")
        with open(os.path.join(HERE, name + ".json"), "w") as f:
            json.dump(summary, f, indent=1, sort_keys=True)
            f.write("\n")


if __name__ == "__main__":
    main()
