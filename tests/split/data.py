#!/usr/bin/env python3
"""The rows of the split scenarios (tests/split/*.sh), their owners, and a
writer.  Who owns a key comes from tests/oracle.py's maps, built on
tests/reshard_oracle.py, which shares no code with reshard.

    data.py init DIR FROM TO      DIR/master.db: the tables orders and items
                                  with every row, and routes (below)
    data.py routes DB FROM TO     (re)make DB's routes: one line per key of
                                  its orders and items: key, from_owner,
                                  to_owner, moves (1 or 0)
    data.py owners FROM TO KEY... the key's owners, "FROM_OWNER TO_OWNER"
    data.py writer DIR SEED FROM TO
                                  write to DIR's shards until DIR/writer.stop
                                  exists (below)
    data.py apply DIR             DIR/master.db with DIR/writer.log applied

FROM and TO are maps as tests/oracle.py takes them (ring:100:n0,n1,n2,n3 or
ranges:0x3fffffffffffffff=n0,…,max=n3), the hash sha256_64: keep them in
step with the plan (tests/split/lib.sh writes both).

The rows: orders (id INTEGER PRIMARY KEY, customer TEXT NOT NULL, amount
DECIMAL(12,2), note TEXT) and items (order_id, line, customer, sku BLOB,
qty INTEGER; PRIMARY KEY (order_id, line)), both sharded by customer, every
item with its order's customer.  Keys are Cyrillic, Chinese, quoted, emoji
and plain; notes NULL, empty, quoted, with a backslash or the text 'NULL';
amounts NULL, 0, negative, up to 10 digits; skus any bytes, NUL and 0xff
among them, and NULL.  Deterministic: a fixed seed.

The writer is an application of the orders table.  It routes each write by
the `from` map until DIR/routing.cfg exists, then by the `to` map, to the
shard's file DIR/NODE.db.  Its operations, chosen by SEED: insert, update
(amount and note), rekey (a new customer with the same owner under the
routing in force, so the row stays where the application wrote it; about
half of them change the row's owner under the other map, so the row starts
or stops moving) and delete.  Every write it saw committed is appended to
DIR/writer.log (one line: verb, id, customer, amount, note, shard, flags;
values as JSON), every refusal by reshard's fence to DIR/writer.rejected,
any other failure (an error, or an update or delete that found no row: the
row was lost) to DIR/writer.failed.  A refused write is retried, routed
again, after a pause, until it goes through.

Between publish and unfence a shard new in `to` is writable while the
sources are fenced; the window section of tests/split/writer.sh writes
there on purpose.  This writer keeps its record simple instead: after a
refusal, and when the routing file appears, it writes nothing until a
probe (a same-value update of a row that stays on its source) goes through
on a source, which is so only after unfence.
"""
import json
import os
import random
import sqlite3
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import oracle  # noqa: E402
import reshard_oracle as ro  # noqa: E402

N_ORDERS = 3000
N_KEYS = 700
FENCE = "writes paused by reshard"
NOTES = [None, "", "plain", "l'apostrophe", 'the "quote"', "été ✓",
         "emoji 🚀🎉", "back\\slash", "NULL", "tab\there"]
ORDERS_SQL = ("CREATE TABLE orders (id INTEGER PRIMARY KEY, "
              "customer TEXT NOT NULL, amount DECIMAL(12,2), note TEXT)")
ITEMS_SQL = ("CREATE TABLE items (order_id INTEGER NOT NULL, "
             "line INTEGER NOT NULL, customer TEXT NOT NULL, sku BLOB, "
             "qty INTEGER, PRIMARY KEY (order_id, line))")


def make_map(spec):
    """A map as tests/oracle.py takes it, optionally followed by pinned
    keys: SPEC+pin:KEY=NODE,KEY=NODE (an override: the key's owner
    whatever its point).  Returns (map, pins)."""
    spec, _, pins = spec.partition("+pin:")
    pinned = dict(p.rsplit("=", 1) for p in pins.split(",")) if pins else {}
    return oracle.parse_map(spec, ro.sha256_64, "orders", "%s_%d"), pinned


def owner(m, key):
    m, pinned = m
    if key in pinned:
        return pinned[key]
    return m(ro.sha256_64(key.encode())).shard


def key_text(n):
    kind = n % 10
    if kind == 3:
        return f"клиент-{n}"
    if kind == 5:
        return f"客户-{n}"
    if kind == 7:
        return f"Zoë O'Brien {n}"
    if kind == 9:
        return f"🙂 {n}"
    return f"cust-{n:05d}"


def amount_of(rnd, i):
    if i % 17 == 0:
        return None
    if i % 41 == 0:
        return "0"
    cents = rnd.randrange(-10**5, 10**12)
    sign = "-" if cents < 0 else ""
    return f"{sign}{abs(cents) // 100}.{abs(cents) % 100:02d}"


def init(d, frm, to):
    rnd = random.Random(7)
    path = os.path.join(d, "master.db")
    if os.path.exists(path):
        os.remove(path)
    db = sqlite3.connect(path)
    db.execute(ORDERS_SQL)
    db.execute(ITEMS_SQL)
    for i in range(1, N_ORDERS + 1):
        key = key_text(i * 7919 % N_KEYS)
        # Amounts as text: the column's numeric affinity stores them as
        # the application's INSERT would.
        db.execute("INSERT INTO orders VALUES (?, ?, ?, ?)",
                   (i, key, amount_of(rnd, i), NOTES[i % len(NOTES)]))
        for line in range(i % 3 if i % 2 == 0 else 0):
            sku = None if (i + line) % 13 == 0 else bytes(
                rnd.randrange(256) for _ in range(rnd.randrange(0, 9)))
            if i % 10 == 4 and line == 0:
                sku = b"\x00\xff\x00"
            db.execute("INSERT INTO items VALUES (?, ?, ?, ?, ?)",
                       (i, line, key, sku, rnd.randrange(-5, 1000)))
    db.commit()
    db.close()
    routes(path, frm, to)


def routes(path, frm, to):
    f, t = make_map(frm), make_map(to)
    db = sqlite3.connect(path)
    db.execute("DROP TABLE IF EXISTS routes")
    db.execute("CREATE TABLE routes (key TEXT PRIMARY KEY, from_owner TEXT "
               "NOT NULL, to_owner TEXT NOT NULL, moves INTEGER NOT NULL)")
    keys = [k for (k,) in db.execute(
        "SELECT customer FROM orders UNION SELECT customer FROM items")]
    for k in keys:
        a, b = owner(f, k), owner(t, k)
        db.execute("INSERT INTO routes VALUES (?, ?, ?, ?)",
                   (k, a, b, int(a != b)))
    db.commit()
    db.close()


class Writer:
    def __init__(self, d, seed, frm, to):
        self.d = d
        self.rnd = random.Random(seed)
        self.frm, self.to = make_map(frm), make_map(to)
        self.sources = sorted({owner(self.frm, key_text(n))
                               for n in range(N_KEYS)})
        self.conns = {}
        master = sqlite3.connect(os.path.join(d, "master.db"))
        self.rows = {i: [c, a, n] for i, c, a, n in master.execute(
            "SELECT id, customer, CAST(amount AS TEXT), note FROM orders")}
        master.close()
        self.keys = sorted({r[0] for r in self.rows.values()})
        # The probe of each source: a row that stays there under both maps.
        self.probes = {}
        for i in sorted(self.rows):
            c = self.rows[i][0]
            s = owner(self.frm, c)
            if s not in self.probes and owner(self.to, c) == s:
                self.probes[s] = i
        self.next_id = 1_000_000
        self.fresh_key = 0
        self.gate_open = True
        self.routing_seen = False
        self.files = {name: open(os.path.join(d, "writer." + name), "a",
                                 encoding="utf-8")
                      for name in ("log", "rejected", "failed")}

    def note(self, name, text):
        self.files[name].write(text + "\n")
        self.files[name].flush()

    def conn(self, shard):
        if shard not in self.conns:
            self.conns[shard] = sqlite3.connect(
                os.path.join(self.d, shard + ".db"), timeout=10,
                isolation_level=None)
        return self.conns[shard]

    def routing(self):
        published = os.path.exists(os.path.join(self.d, "routing.cfg"))
        if published and not self.routing_seen:
            self.routing_seen = True
            self.gate_open = False
        return self.to if published else self.frm

    def execute(self, shard, sql, args):
        """'ok', 'fenced' or 'failed' (noted in writer.failed)."""
        try:
            cur = self.conn(shard).execute(sql, args)
            if cur.rowcount != 1:
                self.note("failed", f"{shard}: {sql} {args!r}: "
                          f"{cur.rowcount} rows changed, not 1")
                return "failed"
            return "ok"
        except sqlite3.Error as e:
            if FENCE in str(e):
                self.note("rejected", f"{shard}: {sql}: {e}")
                return "fenced"
            self.note("failed", f"{shard}: {sql} {args!r}: {e}")
            return "failed"

    def new_key(self, m, target, other, want):
        """A new key owned by TARGET under M whose owner under OTHER
        passes WANT, or None when 400 tries find none."""
        for _ in range(400):
            self.fresh_key += 1
            k = f"w{self.rnd.randrange(10**6)}-{self.fresh_key}"
            if owner(m, k) == target and want(owner(other, k)):
                return k
        return None

    def choosable(self):
        """The ids it may change: all but the probes'."""
        probes = set(self.probes.values())
        return sorted(i for i in self.rows if i not in probes)

    def choose(self):
        """The next operation: (verb, id, [customer, amount, note])."""
        r = self.rnd.random()
        if r < 0.3 or not self.choosable():
            self.next_id += 1
            key = (self.rnd.choice(self.keys) if self.rnd.random() < 0.7
                   else f"new-{self.rnd.randrange(10**6)}")
            amount = f"{self.rnd.randrange(0, 10**7) / 100:.2f}"
            return ("insert", self.next_id,
                    [key, amount, f"w {self.next_id} ünï '"])
        i = self.rnd.choice(self.choosable())
        row = list(self.rows[i])
        if r < 0.6:
            row[1] = f"{self.rnd.randrange(0, 10**7) / 100:.2f}"
            row[2] = f"updated {self.rnd.randrange(10**6)}"
            return ("update", i, row)
        if r < 0.8:
            return ("rekey", i, row)
        return ("delete", i, row)

    def attempt(self, op):
        """'ok', 'fenced' or 'failed' for OP, routed by the routing now."""
        verb, i, row = op
        m = self.routing()
        other = self.frm if m is self.to else self.to
        old = self.rows.get(i)
        key = row[0] if old is None else old[0]
        target = owner(m, key)
        flags = ""
        if verb == "rekey":
            before = owner(other, key)
            change = self.rnd.random() < 0.5
            new = self.new_key(m, target, other,
                               lambda s: (s != before) == change)
            if new is None:
                return "skipped"
            row = [new, row[1], row[2]]
            flags = "owner-changes" if change else ""
            sql, args = "UPDATE orders SET customer = ? WHERE id = ?", (
                new, i)
        elif verb == "insert":
            sql, args = "INSERT INTO orders VALUES (?, ?, ?, ?)", (
                i, row[0], row[1], row[2])
        elif verb == "update":
            sql, args = ("UPDATE orders SET amount = ?, note = ? "
                         "WHERE id = ?", (row[1], row[2], i))
        else:
            sql, args = "DELETE FROM orders WHERE id = ?", (i,)
        if owner(self.to, key) != owner(self.frm, key):
            flags += ",mover"
        flags += ",to-routing" if m is self.to else ",from-routing"
        outcome = self.execute(target, sql, args)
        if outcome == "ok":
            self.note("log", json.dumps([verb, i] + row + [target, flags],
                                        ensure_ascii=False))
            if verb == "delete":
                del self.rows[i]
            else:
                self.rows[i] = row
        return outcome

    def probe(self):
        """Whether a same-value update goes through on a source."""
        s = self.sources[0]
        return self.execute(
            s, "UPDATE orders SET note = note WHERE id = ?",
            (self.probes[s],)) == "ok"

    def run(self):
        stop = os.path.join(self.d, "writer.stop")
        pending = None
        while not os.path.exists(stop):
            self.routing()
            if not self.gate_open:
                if not self.probe():
                    time.sleep(0.02)
                    continue
                self.gate_open = True
            op = pending or self.choose()
            outcome = self.attempt(op)
            if outcome == "fenced":
                pending, self.gate_open = op, False
            else:
                pending = None
            # About 100 writes a second at most: an application, not a
            # benchmark; catch-up must be able to overtake it.
            time.sleep(0.01 if outcome == "ok" else 0.02)


def apply(d):
    db = sqlite3.connect(os.path.join(d, "master.db"))
    for line in open(os.path.join(d, "writer.log"), encoding="utf-8"):
        verb, i, customer, amount, note, _, _ = json.loads(line)
        if verb == "delete":
            db.execute("DELETE FROM orders WHERE id = ?", (i,))
        else:
            db.execute("INSERT OR REPLACE INTO orders VALUES (?, ?, ?, ?)",
                       (i, customer, amount, note))
    db.commit()
    db.close()


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "init":
        init(*args)
    elif cmd == "routes":
        routes(*args)
    elif cmd == "owners":
        f, t = make_map(args[0]), make_map(args[1])
        for k in args[2:]:
            print(owner(f, k), owner(t, k))
    elif cmd == "writer":
        Writer(args[0], int(args[1]), args[2], args[3]).run()
    elif cmd == "apply":
        apply(*args)
    else:
        sys.exit(f"data.py: unknown command {cmd}")


if __name__ == "__main__":
    main()
