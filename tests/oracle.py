#!/usr/bin/env python3
"""The owner of each key under two maps, without reshard's code.

Reads keys on stdin, one a line (UTF-8 bytes, the line's end not part of
the key), and prints for each, in input order, the same five columns as
`reshard route`:

    key<TAB>from_owner<TAB>to_owner<TAB>moves|stays<TAB>0xPOINT

computed by tests/reshard_oracle.py, which shares no code with the binary.
The tests compare the binary's work with this, so that a bug in the C hash
or map code cannot move the rows and the expectation together.

A map is given as one argument:

    slots:N:T:NODE,…[:FMT]  N databases of T tables each; the owner is
                            NODE.TABLE, TABLE named by FMT (else by
                            --table-format) from --table and the index
    modulo:NODE,…
    ring:V:NODE,…           V virtual nodes each, placed with --hash
    ranges:END=NODE,…       END decimal, 0x… or max; the last one max
    logical:bits:S:B:LAST=NODE,…
                            logical shard = B bits of the point above its
                            lowest S; LAST the last logical shard of each
                            assigned range, the last one 2^B - 1
    logical:mod:L:LAST=NODE,…
                            logical shard = point % L

    tests/oracle.py --hash sha256_64 --table orders \\
        --from slots:2:2:db0,db1 --to slots:4:2:db0,db1,db2,db3 <keys

Exits 2 on bad arguments, 1 (naming the key) when a key cannot be hashed.
"""
import argparse
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import reshard_oracle as ro  # noqa: E402


def parse_map(spec, h, table, table_format):
    kind, _, rest = spec.partition(":")
    try:
        if kind == "slots":
            n, t, nodes, *fmt = rest.split(":", 3)
            return ro.slots(int(n), int(t), nodes.split(","), table,
                            fmt[0] if fmt else table_format)
        if kind == "modulo":
            return ro.modulo(rest.split(","))
        if kind == "ring":
            v, nodes = rest.split(":", 1)
            return ro.ring(int(v), nodes.split(","), h)
        if kind == "ranges":
            pieces = []
            for piece in rest.split(","):
                end, node = piece.split("=")
                pieces.append((ro.MAX if end == "max" else int(end, 0), node))
            return ro.ranges(pieces)
        if kind == "logical":
            form, rest = rest.split(":", 1)
            if form == "bits":
                shift, bits, rest = rest.split(":", 2)
                size = {"shift": int(shift), "bits": int(bits)}
            elif form == "mod":
                count, rest = rest.split(":", 1)
                size = {"logical_shards": int(count)}
            else:
                raise ValueError(f"logical: unknown form {form!r}")
            assign = []
            for piece in rest.split(","):
                last, node = piece.split("=")
                assign.append((int(last), node))
            return ro.logical(assign, **size)
    except (ValueError, AssertionError) as e:
        raise argparse.ArgumentTypeError(f"{spec}: {e}")
    raise argparse.ArgumentTypeError(f"{spec}: unknown map {kind!r}")


def main():
    ap = argparse.ArgumentParser(
        description="owners of the keys on stdin under two maps")
    ap.add_argument("--hash", default="sha256_64", choices=sorted(ro.HASHES))
    ap.add_argument("--from", dest="frm", required=True, metavar="MAP")
    ap.add_argument("--to", required=True, metavar="MAP")
    ap.add_argument("--table", default="orders",
                    help="logical table, names slot tables (orders)")
    ap.add_argument("--table-format", default="%s_%d",
                    help="physical slot table names (%%s_%%d)")
    args = ap.parse_args()
    h = ro.HASHES[args.hash]
    try:
        frm = parse_map(args.frm, h, args.table, args.table_format)
        to = parse_map(args.to, h, args.table, args.table_format)
    except argparse.ArgumentTypeError as e:
        ap.error(str(e))
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        key = line[:-1] if line.endswith(b"\n") else line
        try:
            p = h(key)
        except ValueError as e:
            sys.exit(f"oracle.py: key {key!r} cannot be hashed with "
                     f"{args.hash}: {e}")
        f, t = frm(p), to(p)
        out.write(b"\t".join([key, f.label.encode(), t.label.encode(),
                              b"moves" if ro.moves(f, t) else b"stays",
                              b"0x%016x" % p]) + b"\n")


if __name__ == "__main__":
    main()
