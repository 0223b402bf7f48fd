"""The hash functions and maps of reshard, written again in plain Python.

An oracle for the tests: it shares no code with src/shardmap, so a bug in
the C hash or map code moves the rows without moving the expectation.  It
follows the written contract (the hashes of DESIGN §2 and the maps of §3,
as docs/plan.md also states them), not the C code's shortcuts (no bucket
index, no pair table).

Used by tests/oracle.py (owners of keys for the shell scenarios) and by
tests/data/gen_dryrun_expected.py (the expected dry-run results).

Keys are bytes (a text key's UTF-8).  A hash takes the key and returns its
point, an unsigned 64-bit int, or raises ValueError for a key it cannot
hash.  A map is a function point -> Owner: the shard, the table index (0
but in a slot map) and the label `reshard route` prints, "shard.orders_3"
for a slot map and the shard's name otherwise.  A key moves when its shard
or table index changes.
"""
import bisect
import collections
import hashlib

MAX = (1 << 64) - 1

Owner = collections.namedtuple("Owner", "shard table label")


def moves(a: Owner, b: Owner) -> bool:
    """Whether a key owned by A under one map and B under the other moves."""
    return (a.shard, a.table) != (b.shard, b.table)


def sha256_64(key: bytes) -> int:
    """The first 8 bytes of SHA-256 of the key, big-endian."""
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big")


def fnv1a_64(key: bytes) -> int:
    """FNV-1a, 64 bits, over the key's bytes."""
    h = 0xCBF29CE484222325
    for byte in key:
        h = ((h ^ byte) * 0x100000001B3) & MAX
    return h


def java(key: bytes) -> int:
    """Java's String.hashCode() of the UTF-8 key, then its absolute value
    as a 64-bit number (|-2^31| = 2^31).  Raises ValueError (from the
    strict decoder) for a key that is not valid UTF-8."""
    units = key.decode("utf-8").encode("utf-16-be")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return (1 << 32) - h if h & 0x80000000 else h


def identity(key: bytes) -> int:
    """A non-negative decimal integer below 2^64 (leading zeros allowed),
    as its value; any other key raises ValueError."""
    if not key or not key.isdigit() or not key.isascii():
        raise ValueError(f"not a non-negative integer: {key!r}")
    value = int(key)
    if value > MAX:
        raise ValueError(f"does not fit 64 bits: {key!r}")
    return value


HASHES = {"sha256_64": sha256_64, "fnv1a_64": fnv1a_64, "java": java,
          "identity": identity}


def modulo(nodes):
    """nodes[point % len(nodes)]."""
    def owner(p):
        s = nodes[p % len(nodes)]
        return Owner(s, 0, s)
    return owner


def slots(n, t, nodes, table, table_format="%s_%d"):
    """Slot = point % (n*t) in database slot // t, table slot % t."""
    assert len(nodes) == n, "slots: one node per database"

    def owner(p):
        slot = p % (n * t)
        s, i = nodes[slot // t], slot % t
        return Owner(s, i, f"{s}." + table_format % (table, i))
    return owner


def ring(vnodes, nodes, h):
    """Node s has points h("s#0") ... h("s#(vnodes-1)"); a point belongs to
    the first ring point >= it, wrapping past the last; equal positions are
    ordered by node name."""
    points = sorted((h(f"{s}#{v}".encode()), s)
                    for s in nodes for v in range(vnodes))
    pos = [p for p, _ in points]

    def owner(p):
        s = points[bisect.bisect_left(pos, p) % len(points)][1]
        return Owner(s, 0, s)
    return owner


def ranges(table):
    """TABLE is [(end, node), ...], ends strictly increasing, the last MAX:
    a point belongs to the first range whose end is >= it."""
    ends = [e for e, _ in table]
    assert ends == sorted(set(ends)) and ends[-1] == MAX, "ranges: bad ends"

    def owner(p):
        s = table[bisect.bisect_left(ends, p)][1]
        return Owner(s, 0, s)
    return owner


def logical(assign, shift=None, bits=None, logical_shards=None):
    """ASSIGN is [(last, node), ...], lasts strictly increasing, the last
    one the last logical shard.  A point's logical shard is its BITS bits
    above its lowest SHIFT (Instagram's ids: shift 10, bits 13), or, given
    LOGICAL_SHARDS instead, the point modulo that; it belongs to the first
    assigned range whose last logical shard is >= it."""
    assert (bits is None) != (logical_shards is None), "logical: one form"
    if bits is not None:
        assert 1 <= bits <= 32 and 0 <= shift and shift + bits <= 64
        count = 2 ** bits

        def shard_of(p):
            return (p // 2 ** shift) % count
    else:
        assert logical_shards >= 1
        count = logical_shards

        def shard_of(p):
            return p % count
    lasts = [last for last, _ in assign]
    assert lasts == sorted(set(lasts)) and lasts[-1] == count - 1, \
        "logical: bad assign table"

    def owner(p):
        s = assign[bisect.bisect_left(lasts, shard_of(p))][1]
        return Owner(s, 0, s)
    return owner
