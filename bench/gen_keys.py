#!/usr/bin/env python3
"""Write a deterministic file of shard keys, one per line, for the benchmarks.

The keys look like customer ids: three in four are decimal integers
("8374619203"), one in four is a text id ("cust-8374619203").  Key i is built
from x_i = (i * A + B) mod 2^40 with A odd, which is a bijection on
[0, 2^40), so every key in a file is distinct and the ids are scattered
rather than sequential; as far as sha256_64 is concerned the exact shape
hardly matters, but the lengths (mostly 10–17 bytes) are realistic.

The same COUNT always gives the same bytes (the format is versioned by
FORMAT_VERSION; bench/dryrun names its cache file after it).

Usage: gen_keys.py COUNT OUTFILE      (OUTFILE "-" for stdout)
"""

import os
import sys

FORMAT_VERSION = 1
_A = 0x9E3779B97F  # odd: i -> (i*A + B) mod 2^40 is a permutation
_B = 1_000_000_007
_MASK = (1 << 40) - 1
_CHUNK = 200_000


def keys(count):
    """Yield the keys 0..count-1 as bytes blocks of up to _CHUNK lines."""
    for start in range(0, count, _CHUNK):
        end = min(start + _CHUNK, count)
        lines = []
        append = lines.append
        for i in range(start, end):
            x = (i * _A + _B) & _MASK
            if i & 3 == 3:
                append("cust-%d" % x)
            else:
                append("%d" % x)
        yield ("\n".join(lines) + "\n").encode("ascii")


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: gen_keys.py COUNT OUTFILE\n")
        return 2
    try:
        count = int(argv[1])
        if count < 0:
            raise ValueError
    except ValueError:
        sys.stderr.write("gen_keys.py: COUNT must be a non-negative integer\n")
        return 2
    out = argv[2]
    if out == "-":
        w = sys.stdout.buffer
        for block in keys(count):
            w.write(block)
        w.flush()
        return 0
    # Write beside the target and rename, so that an interrupted run never
    # leaves a truncated file that a later run would take for the cache.
    tmp = "%s.tmp.%d" % (out, os.getpid())
    try:
        with open(tmp, "wb") as f:
            for block in keys(count):
                f.write(block)
        os.replace(tmp, out)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
