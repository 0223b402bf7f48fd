#!/usr/bin/env python3
"""The rows of integration/scenario_split.sh, and its writer.

The scenario's nodes are listed in DIR/nodes.tsv, one a line:
NAME<TAB>ENGINE<TAB>URL (ENGINE pg, my or sqlite; a sqlite URL is the file's
path).  Who owns a key comes from tests/reshard_oracle.py, which shares no
code with reshard.

    split_data.py init DIR N       rows.tsv: N orders, each with its owner
                                   under `from`; DIR/load/NODE.tsv per node
    split_data.py writer DIR SEED  write until DIR/writer.stop exists
    split_data.py expect DIR       expected.tsv: rows.tsv with every write
                                   the writer saw acknowledged, and owners
                                   under `to`
    split_data.py actual DIR       actual.tsv: what the nodes hold
    split_data.py movers DIR       the keys whose owner changes, one a line

A row is ID, CUSTOMER (the shard key), AMOUNT (a decimal with 2 places),
NOTE (text, "\\N" for NULL); the files add the owner first.  The writer
routes every write by the owners under `from` until DIR/routing.cfg exists,
then under `to`, as an application reading the routing file would.  Each
write is one statement; one acknowledged is appended to writer.log, one
refused by reshard's fence to writer.rejected, any other failure to
writer.failed.
"""
import os
import random
import sqlite3
import subprocess
import sys
from decimal import Decimal

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests"))
import reshard_oracle as ro  # noqa: E402

FROM_NODES = ["n0", "n1", "n2", "n3"]
TO_NODES = ["n0", "n1", "n2", "n3", "n4"]
FROM = ro.ring(100, FROM_NODES, ro.sha256_64)
TO = ro.ring(100, TO_NODES, ro.sha256_64)
NOTES = ["", None, "plain", "l'apostrophe", 'the "quote"', "été ✓",
         "emoji 🚀🎉", "back\\slash", "NULL"]
FENCE = "writes paused by reshard"


def owner(m, customer):
    return m(ro.sha256_64(customer.encode()))[0]


def nodes(d):
    out = {}
    for line in open(os.path.join(d, "nodes.tsv"), encoding="utf-8"):
        name, engine, url = line.rstrip("\n").split("\t")
        out[name] = (engine, url)
    return out


def amount_text(v):
    """A decimal the same way whatever the engine printed."""
    if v is None or v == "\\N":
        return "\\N"
    d = Decimal(str(v)).quantize(Decimal("0.01"))
    return str(d)


def note_field(note):
    return "\\N" if note is None else note


def read_rows(path):
    rows = {}
    for line in open(path, encoding="utf-8"):
        f = line.rstrip("\n").split("\t")
        rows[int(f[1])] = f[1:]
    return rows


def init(d, n):
    rnd = random.Random(7)
    os.makedirs(os.path.join(d, "load"), exist_ok=True)
    files = {s: open(os.path.join(d, "load", s + ".tsv"), "w",
                     encoding="utf-8") for s in FROM_NODES}
    with open(os.path.join(d, "rows.tsv"), "w", encoding="utf-8") as out:
        for i in range(n):
            customer = f"cliente:{i}"
            amount = f"{rnd.randrange(0, 10**8) / 100:.2f}"
            note = NOTES[i % len(NOTES)]
            s = owner(FROM, customer)
            fields = [str(i), customer, amount, note_field(note)]
            out.write("\t".join([s] + fields) + "\n")
            # COPY and LOAD DATA read a backslash as an escape.
            load = fields[:3] + [fields[3] if note is None
                                 else note.replace("\\", "\\\\")]
            files[s].write("\t".join(load) + "\n")
    for f in files.values():
        f.close()


def run_sql(engine, url, sql):
    """Run SQL on a node: (ok, error text)."""
    if engine == "sqlite":
        try:
            db = sqlite3.connect(url, timeout=10, isolation_level=None)
            db.execute(sql)
            db.close()
            return True, ""
        except sqlite3.Error as e:
            return False, str(e)
    if engine == "pg":
        cmd = ["psql", "-X", "-w", "-q", "-v", "ON_ERROR_STOP=1", url,
               "-c", sql]
    else:
        user, rest = url[len("mysql://"):].split(":", 1)
        password, rest = rest.split("@", 1)
        host, rest = rest.split(":", 1)
        port, db = rest.split("/", 1)
        cmd = ["mariadb", "--no-defaults", "--default-character-set=utf8mb4",
               "-u", user, f"-p{password}", "-h", host, "-P", port, db, "-e",
               sql]
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode == 0, p.stderr.strip()


def quote(s):
    return "'" + s.replace("\\", "\\\\").replace("'", "''") + "'"


def quote_for(engine, s):
    if engine == "my":
        return quote(s)
    return "'" + s.replace("'", "''") + "'"


def writer(d, seed):
    rnd = random.Random(seed)
    ns = nodes(d)
    rows = read_rows(os.path.join(d, "rows.tsv"))
    live = sorted(rows)
    next_id = max(live) + 1_000_000
    log = open(os.path.join(d, "writer.log"), "a", encoding="utf-8")
    rejected = open(os.path.join(d, "writer.rejected"), "a",
                    encoding="utf-8")
    failed = open(os.path.join(d, "writer.failed"), "a", encoding="utf-8")
    iteration = 0
    acked = False
    routing = os.path.join(d, "routing.cfg")
    while not os.path.exists(os.path.join(d, "writer.stop")):
        iteration += 1
        with open(os.path.join(d, "writer.iter.tmp"), "w") as f:
            f.write(f"{iteration}\n")
        os.replace(os.path.join(d, "writer.iter.tmp"),
                   os.path.join(d, "writer.iter"))
        m = TO if os.path.exists(routing) else FROM
        if m is TO and not acked:
            # Every write routed by `from` has ended (refused by the
            # fence, which stands until unfence): tell the publish hook
            # that this router follows the new routing.
            open(os.path.join(d, "writer.ack"), "w").close()
            acked = True
        op = rnd.choice(["insert", "update", "rekey", "delete"])
        if op == "insert" or not live:
            i = next_id
            next_id += 1
            customer = f"cliente:{rnd.randrange(10**6, 10**7)}"
            amount = f"{rnd.randrange(0, 10**6) / 100:.2f}"
            target = owner(m, customer)
            engine = ns[target][0]
            sql = (f"INSERT INTO orders (id, customer, amount, note) VALUES "
                   f"({i}, {quote_for(engine, customer)}, {amount}, "
                   f"{quote_for(engine, 'w' + str(iteration))})")
            entry = ["insert", str(i), customer, amount, f"w{iteration}"]
        else:
            i = rnd.choice(live)
            customer = rows[i][1]
            target = owner(m, customer)
            engine = ns[target][0]
            if op == "update":
                amount = f"{rnd.randrange(0, 10**6) / 100:.2f}"
                sql = f"UPDATE orders SET amount = {amount} WHERE id = {i}"
                entry = ["update", str(i), customer, amount, rows[i][3]]
            elif op == "delete":
                sql = f"DELETE FROM orders WHERE id = {i}"
                entry = ["delete", str(i), customer, "", ""]
            else:
                # A new shard key with the same owner under the routing in
                # force, so the row stays where the application writes it;
                # under `to` (or `from`) it may still change owner.
                new = customer
                for _ in range(200):
                    c = f"cliente:{rnd.randrange(10**7, 10**8)}"
                    if owner(m, c) == target:
                        new = c
                        break
                sql = (f"UPDATE orders SET customer = "
                       f"{quote_for(engine, new)} WHERE id = {i}")
                entry = ["rekey", str(i), new, rows[i][2], rows[i][3]]
        good, why = run_sql(engine, ns[target][1], sql)
        if good:
            log.write("\t".join(entry) + "\n")
            log.flush()
            verb, i = entry[0], int(entry[1])
            if verb == "delete":
                del rows[i]
                live.remove(i)
            else:
                if verb == "insert":
                    live.append(i)
                rows[i] = [str(i), entry[2], entry[3], entry[4]]
        elif FENCE in why:
            rejected.write(f"{iteration}\t{op}\t{target}\n")
            rejected.flush()
        else:
            failed.write(f"{iteration}\t{op}\t{target}\t{why}\n")
            failed.flush()


def expect(d):
    rows = read_rows(os.path.join(d, "rows.tsv"))
    path = os.path.join(d, "writer.log")
    if os.path.exists(path):
        for line in open(path, encoding="utf-8"):
            verb, i, customer, amount, note = line.rstrip("\n").split("\t")
            if verb == "delete":
                del rows[int(i)]
            else:
                rows[int(i)] = [i, customer, amount, note]
    with open(os.path.join(d, "expected.tsv"), "w", encoding="utf-8") as out:
        for i in sorted(rows):
            f = rows[i]
            out.write("\t".join([owner(TO, f[1]), f[0], f[1],
                                 amount_text(f[2]), f[3]]) + "\n")


def query(engine, url, sql):
    if engine == "sqlite":
        db = sqlite3.connect(url, timeout=10)
        out = db.execute(sql).fetchall()
        db.close()
        return out
    if engine == "pg":
        cmd = ["psql", "-X", "-w", "-q", "-At", "-F", "\t", url, "-c", sql]
    else:
        user, rest = url[len("mysql://"):].split(":", 1)
        password, rest = rest.split("@", 1)
        host, rest = rest.split(":", 1)
        port, db = rest.split("/", 1)
        cmd = ["mariadb", "--no-defaults", "--batch", "--raw",
               "--skip-column-names", "--default-character-set=utf8mb4",
               "-u", user, f"-p{password}", "-h", host, "-P", port, db,
               "-e", sql]
    p = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return [tuple(line.split("\t")) for line in p.stdout.splitlines()]


def actual(d):
    out = []
    for name, (engine, url) in sorted(nodes(d).items()):
        rows = query(engine, url,
                     "SELECT id, customer, amount, note IS NULL, "
                     "COALESCE(note, '') FROM orders")
        for r in rows:
            isnull = str(r[3]) in ("1", "t", "True")
            out.append((int(r[0]), [name, str(r[0]), r[1],
                                    amount_text(r[2]),
                                    "\\N" if isnull else r[4]]))
    with open(os.path.join(d, "actual.tsv"), "w", encoding="utf-8") as f:
        for _, fields in sorted(out):
            f.write("\t".join(fields) + "\n")


def movers(d):
    for line in open(os.path.join(d, "rows.tsv"), encoding="utf-8"):
        f = line.rstrip("\n").split("\t")
        if owner(TO, f[2]) != f[0]:
            print(f[2])


def main():
    cmd, d = sys.argv[1], sys.argv[2]
    if cmd == "init":
        init(d, int(sys.argv[3]))
    elif cmd == "writer":
        writer(d, int(sys.argv[3]))
    elif cmd == "expect":
        expect(d)
    elif cmd == "actual":
        actual(d)
    elif cmd == "movers":
        movers(d)
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
