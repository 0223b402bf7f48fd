#!/usr/bin/env bash
# A full disk under a MariaDB target: a split from a SQLite file (20,000
# orders, keys 1 … 20,000 with the identity hash) into a MariaDB server
# that takes the keys above 10,000, whose table lives on a 1 MB tmpfs
# (InnoDB's DATA DIRECTORY).  The copy fills it: InnoDB cannot extend the
# table's file, and MariaDB 10.11 then stops the whole server while rolling
# the chunk back ("[FATAL] InnoDB: Error (Out of disk space) in
# rollback").  The run must stop (exit 1) naming the target, with some
# chunks done and the source as it was; a run while the server is down
# fails the same way and changes nothing.  Once the file system is grown
# and the server restarted (its crash recovery rolls the chunk back),
# `reshard run` resumes and ends exact: every row once, on its owner by
# its key's range, unchanged.
#
# Because the server goes down, this scenario starts a MariaDB server of
# its own (mariadb-install-db into its folder, a free port on 127.0.0.1)
# rather than one of integration/servers.sh's, which the other scenarios
# share.  It runs as root (--user=root): mounting needs root anyway, and
# without it the scenario says so and exits 77 (skipped).
#
# Needs mariadbd and mariadb-install-db (integration/install-deps.sh);
# it uses none of the shared servers.  About 15 s.
# Usage: integration/scenario_full_disk_my.sh
ENGINE=my
# shellcheck source=integration/doubling_lib.sh
. "$(dirname "$0")/doubling_lib.sh"

if [ "$(id -u)" -ne 0 ]; then
	echo "ok - # SKIP mounting a tmpfs needs root (uid $(id -u))"
	exit 77
fi

dir=$tmp/full-disk
space=$tmp/space
mkdir -p "$dir" "$space" "$tmp/sock" "$tmp/tmp"
server_pid=''

# The server: its own data directory, option file and port.  The port is a
# free one below 32768, where no client socket takes its local port (the
# kernel's ephemeral range starts there), so the restart below finds it free.
port=$(python3 -c 'import os, socket
for i in range(1000):
    p = 21000 + (os.getpid() + i) % 1000
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    print(p)
    break')
[ -n "$port" ] || bail "no free port in 21000-21999"
cat >"$tmp/my.cnf" <<EOF
[mariadbd]
user                           = root
datadir                        = $tmp/data
port                           = $port
bind-address                   = 127.0.0.1
socket                         = $tmp/sock/my.sock
pid-file                       = $tmp/sock/my.pid
tmpdir                         = $tmp/tmp
log-error                      = $tmp/server.log
server-id                      = 1
log-bin                        = full-bin
binlog-format                  = ROW
innodb-buffer-pool-size        = 64M
innodb-flush-log-at-trx-commit = 2
performance-schema             = OFF
EOF
root_sql() { mariadb --no-defaults -S "$tmp/sock/my.sock" -u root --batch --skip-column-names -e "$1"; }
# server_up: start the server (not a job of this shell, whose end bash
# would report) and wait until it answers.
server_up() {
	local i
	server_pid=$(setsid mariadbd --defaults-file="$tmp/my.cnf" </dev/null \
		>>"$tmp/server.out" 2>&1 & echo $!)
	for i in $(seq 150); do
		root_sql "SELECT 1" >/dev/null 2>&1 && return 0
		kill -0 "$server_pid" 2>/dev/null || return 1
		sleep 0.2
	done
	return 1
}
# server_down: stop the server if it runs, and wait until it has.
server_down() {
	local i
	[ -n "$server_pid" ] || return 0
	kill "$server_pid" 2>/dev/null
	for i in $(seq 150); do
		kill -0 "$server_pid" 2>/dev/null || break
		sleep 0.2
	done
	server_pid=''
}
# shellcheck disable=SC2317 # run by the trap
cleanup() {
	server_down
	! mountpoint -q "$space" || umount "$space" || umount -l "$space"
	[ -n "${KEEP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT

mariadb-install-db --no-defaults --user=root --datadir="$tmp/data" \
	--auth-root-authentication-method=normal --skip-test-db >"$tmp/install.log" 2>&1 ||
	bail "mariadb-install-db (see $tmp/install.log)"
mount -t tmpfs -o size=1m,mode=0700 tmpfs "$space" || bail "mounting a 1 MB tmpfs on $space"
server_up || bail "starting MariaDB on port $port (see $tmp/server.log)"
root_sql "CREATE USER 'reshard'@'127.0.0.1' IDENTIFIED BY 'reshard';
	GRANT ALL PRIVILEGES ON *.* TO 'reshard'@'127.0.0.1';
	CREATE DATABASE rs_full_dst;
	CREATE TABLE rs_full_dst.orders (id bigint PRIMARY KEY,
		customer varchar(40) NOT NULL, amount decimal(12,2), note text)
		DATA DIRECTORY = '$space'" || bail "making the target table on the tmpfs"
dst=mysql://reshard:reshard@127.0.0.1:$port/rs_full_dst

full_disk_split "$dir" "$dst" || bail "making the source and the plan"

run_reshard 1 "full disk: the run fails when dst's table cannot grow (exit 1)" run plan.cfg --yes
echo "# full disk: $(grep -m1 '^reshard:' "$dir/err")"
has "$dir/err" "shard dst (" "full disk: the error names dst"
has "$dir/err" "resumes at step copy" "full disk: the error says that run resumes at the copy"
has "$tmp/server.log" "The table 'orders' is full" "full disk: MariaDB's log says the table is full"
full_disk_stopped 20

# The server stopped itself; if it did not, stop it, as an operator
# would to grow its disk.
if root_sql "SELECT 1" >/dev/null 2>&1; then
	echo "# full disk: MariaDB still up after the failure; stopped for the next checks"
	server_down
fi
server_pid=''
cp "$dir/full-disk.journal" "$tmp/journal.before"
run_reshard 1 "full disk: a run while dst is down fails (exit 1)" run plan.cfg --yes
echo "# full disk, dst down: $(grep -m1 '^reshard:' "$dir/err")"
has "$dir/err" "shard dst (" "full disk: that error names dst"
check "full disk: that run left the source as it was" \
	cmp "$dir/rows.before" <(src_rows "$dir/src.db")
check "full disk: and recorded no chunk" test "$(sqlite3 -readonly "$dir/full-disk.journal" \
	"SELECT count(*) FROM chunks WHERE state = 'done'")" = "$(sqlite3 -readonly \
	"$tmp/journal.before" "SELECT count(*) FROM chunks WHERE state = 'done'")"

mount -o remount,size=64m "$space" || bail "growing the tmpfs"
server_up || bail "restarting MariaDB (see $tmp/server.log)"
run_reshard 0 "full disk: with space again the run resumes and finishes" run plan.cfg --yes
q "$dst" "SELECT id, customer, amount, note FROM orders ORDER BY id" >"$tmp/got.dst"
check "full disk: dst holds every key above 10,000, unchanged" cmp "$dir/rows.dst" "$tmp/got.dst"
check "full disk: src holds the rest, unchanged" cmp "$dir/rows.src" <(src_rows "$dir/src.db")
finish
