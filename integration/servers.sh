#!/usr/bin/env bash
# Start, stop and inspect the real database servers that reshard's
# integration tests run against: a fleet of RESHARD_PAIRS (default 2)
# PostgreSQL 15 primaries, each with a streaming replica made by
# pg_basebackup -R, and as many MariaDB primaries, each with a GTID replica.
# Every pair is an independent cluster.  All servers are plain processes (no
# systemd, no system clusters) living in one directory, listening on
# 127.0.0.1 only, run as an unprivileged user (`reshard-test`, created when
# invoked as root).
#
# Usage:
#   integration/servers.sh start  [DIR]   start the fleet, write DIR/env
#   integration/servers.sh stop   [DIR]   stop every server, remove DIR
#   integration/servers.sh status [DIR]   one line per server; exit 0 if all up
#   integration/servers.sh env    [DIR]   print DIR/env (source it, or eval)
#   integration/servers.sh reset-replicas [pg|my|all] [DIR]
#                                         rebuild every replica (and downstream)
#                                         of that engine (default all) from
#                                         its primary
#
# DIR defaults to $RESHARD_SERVERS_DIR, then /tmp/reshard-servers.  Pair 1
# uses RESHARD_PG_PRIMARY_PORT (24321), RESHARD_PG_REPLICA_PORT (24322),
# RESHARD_MY_PRIMARY_PORT (23061) and RESHARD_MY_REPLICA_PORT (23062); pair k
# uses each of those plus 10*(k-1).  With RESHARD_DOWNSTREAM=1 (default 0),
# pair 1's primaries get a second replica each, in no plan, for the
# downstream lag of a purge: pg-downstream (a streaming standby, slot
# pg_downstream) on RESHARD_PG_PRIMARY_PORT + 5 (24326) and my-downstream (a
# GTID replica, server_id 33) on RESHARD_MY_PRIMARY_PORT + 5 (23066); the
# pairs' ports end in 1 and 2 (base + 10*(k-1)), so + 5 meets none of them
# with the default ports.  Every wait is bounded by RESHARD_SERVERS_TIMEOUT
# seconds (30).  See docs/servers.md.  The credentials are for tests only.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PG_BIN=/usr/lib/postgresql/15/bin
HOST=127.0.0.1
OWNER=reshard-test             # system user that runs the servers when we are root
MARKER=.reshard-servers        # only a directory holding this file is ever removed
LOCK=.lock                     # DIR/.lock: held by start, stop and reset-replicas
MAX_PAIRS=16
PORT_STEP=10                   # pair k listens on the base ports + PORT_STEP*(k-1)
DOWNSTREAM_OFFSET=5            # a downstream listens on its primary's port + this

PAIRS=${RESHARD_PAIRS:-2}
PG_PRIMARY_PORT=${RESHARD_PG_PRIMARY_PORT:-24321}
PG_REPLICA_PORT=${RESHARD_PG_REPLICA_PORT:-24322}
MY_PRIMARY_PORT=${RESHARD_MY_PRIMARY_PORT:-23061}
MY_REPLICA_PORT=${RESHARD_MY_REPLICA_PORT:-23062}
TIMEOUT=${RESHARD_SERVERS_TIMEOUT:-30}
DOWNSTREAM=${RESHARD_DOWNSTREAM:-0}

APP_USER=reshard APP_PASSWORD=reshard APP_DB=app
REPL_USER=replicator REPL_PASSWORD=replicator

# A client that cannot connect gives up after this many seconds, so that a
# wait loop overruns its deadline by at most that much.
CONNECT_TIMEOUT=5
export PGCONNECT_TIMEOUT=$CONNECT_TIMEOUT

MAIN_PID=$$
JOB_PIDS=()

log() { echo "servers.sh: $*" >&2; }
die() {
	log "error: $*"
	exit 1
}

# Print the last lines of a server log to stderr, to explain a failure.
show_log() {
	local file=$1 lines=${2:-25}
	if [ -s "$file" ]; then
		echo "---- last lines of $file ----" >&2
		tail -n "$lines" "$file" >&2
		echo "----" >&2
	fi
}

# fail NAME MESSAGE: report a failure of server NAME with the tails of its
# logs (the server's own and the one of its setup tools), then exit.  Most
# callers run as one of several parallel jobs; the command that started the
# jobs then says what to do next.
fail() {
	local name=$1
	shift
	log "error: $name: $*"
	show_log "$DIR/$name-setup.log" 8
	show_log "$DIR/$name.log"
	exit 1
}

# wait_for NAME WHAT COMMAND...: run COMMAND until it succeeds, for at most
# $TIMEOUT seconds; on timeout fail with WHAT and the tails of NAME's logs.
wait_for() {
	local name=$1 what=$2
	shift 2
	local deadline=$((SECONDS + TIMEOUT))
	until "$@" >/dev/null 2>&1; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			fail "$name" "timed out after ${TIMEOUT}s waiting for $what"
		fi
		sleep 0.2
	done
}

# bounded COMMAND...: COMMAND, killed (with its process group) after
# $TIMEOUT seconds.  For setup tools that could otherwise hang; as_owner
# takes `as_owner timeout -k 5 "$TIMEOUT" COMMAND...` for the same.
bounded() { timeout -k 5 "$TIMEOUT" "$@"; }

# as_owner COMMAND...: run COMMAND as the unprivileged server owner.  When we
# are not root the owner is simply the current user.
as_owner() {
	if [ "$(id -u)" -eq 0 ]; then
		HOME=$DIR USER=$OWNER LOGNAME=$OWNER \
			setpriv --reuid="$OWNER" --regid="$OWNER" --init-groups -- "$@"
	else
		"$@"
	fi
}

ensure_owner() {
	[ "$(id -u)" -eq 0 ] || return 0
	id "$OWNER" >/dev/null 2>&1 && return 0
	useradd --system --user-group --no-create-home --home-dir /nonexistent \
		--shell /usr/sbin/nologin "$OWNER" ||
		id "$OWNER" >/dev/null 2>&1 || die "cannot create user $OWNER"
}

chown_owner() {
	[ "$(id -u)" -eq 0 ] || return 0
	chown "$OWNER:$OWNER" "$@"
}

# Set DIR and the paths inside it from the optional command argument.
set_dir() {
	DIR=${1:-${RESHARD_SERVERS_DIR:-/tmp/reshard-servers}}
	DIR=$(realpath -m -- "$DIR")
	[ "$DIR" != / ] || die "refusing to use / as the servers directory"
	RUN=$DIR/run                      # unix sockets and MariaDB pid files
	ENV_FILE=$DIR/env
	LAYOUT_FILE=$DIR/layout
	# Unix socket paths are limited to 107 bytes ("/my-replica-16.sock").
	[ ${#RUN} -le 80 ] || die "directory path too long for unix sockets: $DIR"
}

port_in_use() {
	(exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null
}

is_uint() { [[ "$1" =~ ^[0-9]+$ ]]; }

# alive PID: PID is a live process (a zombie is not: it holds no port and no
# file, and init here reaps exited processes only after a second or more).
alive() {
	local state
	state=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
	[[ "$state" != Z* ]]
}

# wait_gone PID: wait until PID is no longer a live process; return 1 after
# $TIMEOUT seconds.
wait_gone() {
	local pid=$1 deadline=$((SECONDS + TIMEOUT))
	while alive "$pid"; do
		[ "$SECONDS" -lt "$deadline" ] || return 1
		sleep 0.1
	done
}

# ---- the fleet ----------------------------------------------------------
#
# Every server has a name, an engine (pg, my), a role (primary, replica,
# downstream), a pair number, a port, an upstream (a replica's primary, "-"
# for a primary) and a MariaDB server id ("-" for PostgreSQL).  Pair 1 keeps
# the names it always had (pg-primary, pg-replica, my-primary, my-replica);
# pair k > 1 appends "-k" (pg-primary-2 ...).  A downstream (pg-downstream,
# my-downstream: RESHARD_DOWNSTREAM=1) is a second replica of pair 1's
# primary that no plan names; everything done to replicas (start, status,
# reset-replicas, stop) is done to it too: both are standbys.  `start` writes the fleet to DIR/layout,
# one server a line, and every other command reads it from there, so that
# stop, status and reset-replicas need neither RESHARD_PAIRS nor the ports.

NAMES=()
declare -A ENGINE=() ROLE=() PAIR=() PORT=() UPSTREAM=() SID=()

add_server() { # NAME ENGINE ROLE PAIR PORT UPSTREAM SID
	NAMES+=("$1")
	ENGINE[$1]=$2 ROLE[$1]=$3 PAIR[$1]=$4 PORT[$1]=$5 UPSTREAM[$1]=$6 SID[$1]=$7
}

# is_standby NAME: NAME replicates from an upstream (a replica, a downstream).
is_standby() { [ "${UPSTREAM[$1]}" != - ]; }

clear_fleet() {
	NAMES=()
	ENGINE=() ROLE=() PAIR=() PORT=() UPSTREAM=() SID=()
}

# plan_fleet PAIRS: the fleet that `start` makes from the environment.
plan_fleet() {
	local pairs=$1 k off sfx
	clear_fleet
	for ((k = 1; k <= pairs; k++)); do
		off=$((PORT_STEP * (k - 1)))
		sfx=
		[ "$k" -eq 1 ] || sfx=-$k
		add_server "pg-primary$sfx" pg primary "$k" $((PG_PRIMARY_PORT + off)) - -
		add_server "pg-replica$sfx" pg replica "$k" $((PG_REPLICA_PORT + off)) "pg-primary$sfx" -
		add_server "my-primary$sfx" my primary "$k" $((MY_PRIMARY_PORT + off)) - $((2 * k - 1))
		add_server "my-replica$sfx" my replica "$k" $((MY_REPLICA_PORT + off)) "my-primary$sfx" $((2 * k))
	done
	[ "$DOWNSTREAM" = 1 ] || return 0
	add_server pg-downstream pg downstream 1 $((PG_PRIMARY_PORT + DOWNSTREAM_OFFSET)) pg-primary -
	add_server my-downstream my downstream 1 $((MY_PRIMARY_PORT + DOWNSTREAM_OFFSET)) my-primary \
		$((2 * MAX_PAIRS + 1))
}

layout_text() {
	local name
	echo "# name engine role pair port upstream server_id (integration/servers.sh)"
	for name in "${NAMES[@]}"; do
		echo "$name ${ENGINE[$name]} ${ROLE[$name]} ${PAIR[$name]} ${PORT[$name]} ${UPSTREAM[$name]} ${SID[$name]}"
	done
}

# load_fleet: the fleet that lives in DIR.  A directory made by an older
# servers.sh has no layout file and holds exactly pair 1, on the default
# ports of that time (or the RESHARD_*_PORT it was started with).
load_fleet() {
	local name engine role pair port upstream sid
	if [ -r "$LAYOUT_FILE" ]; then
		clear_fleet
		while read -r name engine role pair port upstream sid; do
			case $name in '' | \#*) continue ;; esac
			add_server "$name" "$engine" "$role" "$pair" "$port" "$upstream" "$sid"
		done <"$LAYOUT_FILE"
		[ ${#NAMES[@]} -gt 0 ] || die "$LAYOUT_FILE lists no server"
	elif [ -f "$DIR/$MARKER" ]; then
		PG_PRIMARY_PORT=${RESHARD_PG_PRIMARY_PORT:-54321}
		PG_REPLICA_PORT=${RESHARD_PG_REPLICA_PORT:-54322}
		MY_PRIMARY_PORT=${RESHARD_MY_PRIMARY_PORT:-33061}
		MY_REPLICA_PORT=${RESHARD_MY_REPLICA_PORT:-33062}
		plan_fleet 1
	else
		check_settings
	fi
}

# Check the settings `start` is asked for: numbers, and no two servers on
# one port (as when a replica's port is another pair's primary port).
check_settings() {
	local var name port
	local -A owner=()
	if ! is_uint "$PAIRS" || [ "$PAIRS" -lt 1 ] || [ "$PAIRS" -gt "$MAX_PAIRS" ]; then
		die "RESHARD_PAIRS must be a number from 1 to $MAX_PAIRS, not '$PAIRS'"
	fi
	case $DOWNSTREAM in
	0 | 1) ;;
	*) die "RESHARD_DOWNSTREAM must be 0 or 1, not '$DOWNSTREAM'" ;;
	esac
	for var in PG_PRIMARY_PORT PG_REPLICA_PORT MY_PRIMARY_PORT MY_REPLICA_PORT; do
		is_uint "${!var}" || die "RESHARD_$var must be a port number, not '${!var}'"
	done
	plan_fleet "$PAIRS"
	for name in "${NAMES[@]}"; do
		port=${PORT[$name]}
		if [ "$port" -lt 1024 ] || [ "$port" -gt 65535 ]; then
			die "$name would listen on port $port, outside 1024-65535"
		fi
		[ -z "${owner[$port]:-}" ] ||
			die "$name and ${owner[$port]} would both listen on port $port" \
				"(pair k listens on the four base ports + $PORT_STEP*(k-1)," \
				"a downstream on its primary's + $DOWNSTREAM_OFFSET)"
		owner[$port]=$name
	done
	warn_ephemeral_ports
}

# warn_ephemeral_ports: say which servers' ports lie in the kernel's range of
# ephemeral ports.  Every outgoing connection (the tests make thousands) takes
# its local port from that range, so a server restarted there can find its
# port held by a client socket and fail with "Address already in use", and a
# probe of a closed port there can connect to itself.  The default ports lie
# below 32768, the range's default start on Linux.
warn_ephemeral_ports() {
	local lo hi name inside=()
	read -r lo hi </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || return 0
	for name in "${NAMES[@]}"; do
		if [ "${PORT[$name]}" -ge "$lo" ] && [ "${PORT[$name]}" -le "$hi" ]; then
			inside+=("$name:${PORT[$name]}")
		fi
	done
	[ ${#inside[@]} -eq 0 ] ||
		echo "servers.sh: warning: ${inside[*]} in the ephemeral port range" \
			"$lo-$hi: a restart may find its port taken by a client;" \
			"choose base ports below $lo" >&2
}

# names_where FIELD=VALUE...: the servers (in fleet order) matching all.
# Fields: engine, role, and standby (yes: a replica or a downstream, which
# replicate from an upstream; no: a primary).
names_where() {
	local name cond field value ok
	for name in "${NAMES[@]}"; do
		ok=1
		for cond in "$@"; do
			field=${cond%%=*} value=${cond#*=}
			case $field in
			engine) [ "${ENGINE[$name]}" = "$value" ] || ok=0 ;;
			role) [ "${ROLE[$name]}" = "$value" ] || ok=0 ;;
			standby) [ "$(is_standby "$name" && echo yes || echo no)" = "$value" ] || ok=0 ;;
			esac
		done
		[ "$ok" -eq 0 ] || echo "$name"
	done
}

# ---- parallel jobs ------------------------------------------------------

# parent_alive: the servers.sh that started this job still runs.  A job of
# a killed start stops before it starts another server.
parent_alive() { alive "$MAIN_PID"; }

# run_jobs WHAT FUNCTION NAME...: run FUNCTION NAME for every NAME at once,
# each in a subshell; wait for all of them (each bounds its own waits).
# Returns 1, naming the failed ones, if any failed.
run_jobs() {
	local what=$1 func=$2 i
	shift 2
	local -a names=("$@") failed=()
	JOB_PIDS=()
	for i in "${!names[@]}"; do
		("$func" "${names[i]}") &
		JOB_PIDS+=($!)
	done
	for i in "${!names[@]}"; do
		wait "${JOB_PIDS[i]}" || failed+=("${names[i]}")
	done
	JOB_PIDS=()
	[ ${#failed[@]} -eq 0 ] && return 0
	log "error: $what failed for: ${failed[*]}"
	return 1
}

# On SIGINT/SIGTERM, end the running jobs and their direct children (setup
# tools, servers being started) before exiting.
on_signal() {
	local pid
	trap - INT TERM
	for pid in "${JOB_PIDS[@]}"; do
		pkill -TERM -P "$pid" 2>/dev/null || true
		kill -TERM "$pid" 2>/dev/null || true
	done
	log "interrupted; clean up with: $0 stop $DIR"
	exit 130
}

# lock: take DIR/.lock on fd 9, waiting up to $TIMEOUT seconds for another
# start, stop or reset-replicas (or the jobs of a killed one) to finish.
# Servers are started with fd 9 closed, so they never hold it.
lock() {
	exec 9>>"$DIR/$LOCK"
	flock -w "$TIMEOUT" 9 && return 0
	if [ "${1:-}" = anyway ]; then
		log "warning: $DIR/$LOCK still held after ${TIMEOUT}s; going on"
		return 0
	fi
	die "another servers.sh is still working on $DIR (lock held for ${TIMEOUT}s)"
}

# ---- PostgreSQL ---------------------------------------------------------

pg_data() { echo "$DIR/$1"; }
pg_slot() { echo "${1//-/_}"; } # pg-replica-2 -> pg_replica_2

# pg_sql NAME SQL: run SQL as the superuser over the unix socket; print
# unaligned tuples.
pg_sql() {
	"$PG_BIN/psql" -X -w -q -At -v ON_ERROR_STOP=1 -h "$RUN" -p "${PORT[$1]}" \
		-U postgres -d postgres -c "$2"
}

# pid_by_args ARGS: the pid of a live process whose command line is ARGS.
pid_by_args() {
	local pid
	pid=$(ps -eo pid=,args= | awk -v want="$1" '
		{ pid = $1; sub(/^ *[0-9]+ /, "") }
		$0 == want { print pid; exit }') || return 1
	[ -n "$pid" ] && alive "$pid" && echo "$pid"
}

# The postmaster's pid: from its pid file, or (for one whose pid file is not
# written yet) from its command line.
pg_pid() {
	local pidfile pid
	pidfile=$(pg_data "$1")/postmaster.pid
	if [ -r "$pidfile" ]; then
		pid=$(head -n 1 "$pidfile")
		if [[ "$pid" =~ ^[0-9]+$ ]] && alive "$pid" &&
			[ "$(ps -o comm= -p "$pid" 2>/dev/null)" = postgres ]; then
			echo "$pid"
			return 0
		fi
	fi
	pid_by_args "$PG_BIN/postgres -D $(pg_data "$1")"
}

pg_configure() {
	local name=$1
	cat >>"$(pg_data "$name")/postgresql.conf" <<-EOF

		# ---- reshard integration servers (integration/servers.sh) ----
		listen_addresses = '$HOST'
		port = ${PORT[$name]}
		unix_socket_directories = '$RUN'
		unix_socket_permissions = 0700
		wal_level = replica
		max_wal_senders = 10
		max_replication_slots = 10
		hot_standby = on
		hot_standby_feedback = on
		shared_buffers = 32MB
		fsync = off
		max_connections = 200
	EOF
}

# Each server NAME has two logs: DIR/NAME.log, written by the server itself,
# and DIR/NAME-setup.log, the output of the tools that made and started it.

pg_start() {
	local name=$1 data
	data=$(pg_data "$name")
	parent_alive || exit 1
	chmod 700 "$data"
	as_owner "$PG_BIN/pg_ctl" -D "$data" -l "$DIR/$name.log" -w -t "$TIMEOUT" \
		start >>"$DIR/$name-setup.log" 2>&1 9>&- ||
		fail "$name" "PostgreSQL did not start on port ${PORT[$name]}"
}

pg_primary_start() {
	local name=$1 data
	data=$(pg_data "$name")
	as_owner timeout -k 5 "$TIMEOUT" "$PG_BIN/initdb" -D "$data" -U postgres --auth=trust \
		--no-locale --encoding=UTF8 --no-sync >>"$DIR/$name-setup.log" 2>&1 ||
		fail "$name" "initdb failed"
	pg_configure "$name"
	# Superuser through the socket inside DIR only; everything over TCP
	# needs a SCRAM password.
	cat >"$data/pg_hba.conf" <<-EOF
		local all         all          trust
		host  replication $REPL_USER   $HOST/32 scram-sha-256
		host  all         all          $HOST/32 scram-sha-256
	EOF
	pg_start "$name"
	{ pg_sql "$name" "
		CREATE ROLE $REPL_USER LOGIN REPLICATION PASSWORD '$REPL_PASSWORD';
		CREATE ROLE $APP_USER LOGIN SUPERUSER PASSWORD '$APP_PASSWORD';" &&
		pg_sql "$name" "CREATE DATABASE $APP_DB OWNER $APP_USER"; } \
		>>"$DIR/$name-setup.log" 2>&1 ||
		fail "$name" "cannot create roles and database"
}

# pg_replica_start NAME: make NAME a streaming replica of its primary.
pg_replica_start() {
	local name=$1 primary=${UPSTREAM[$1]}
	parent_alive || exit 1
	# The replica's slot keeps the primary's WAL until the replica has it.
	# It is made first, reserving WAL at once: pg_basebackup -C would make
	# it only after the backup's checkpoint, and the checkpoint of another
	# backup of the same primary (a replica and a downstream are made at
	# once) could remove the WAL this backup starts from in between.
	pg_sql "$primary" "SELECT pg_create_physical_replication_slot('$(pg_slot "$name")', true)" \
		>>"$DIR/$name-setup.log" 2>&1 ||
		fail "$name" "cannot create slot $(pg_slot "$name") on $primary"
	# -R writes primary_conninfo (with the password), primary_slot_name and
	# standby.signal.
	as_owner env PGPASSWORD="$REPL_PASSWORD" timeout -k 5 "$TIMEOUT" "$PG_BIN/pg_basebackup" \
		-h "$HOST" -p "${PORT[$primary]}" -U "$REPL_USER" -w \
		-D "$(pg_data "$name")" -R -S "$(pg_slot "$name")" -X stream \
		--checkpoint=fast --no-sync >>"$DIR/$name-setup.log" 2>&1 ||
		fail "$name" "pg_basebackup from $primary (port ${PORT[$primary]}) failed"
	pg_configure "$name"
	# A downstream's walsender on the primary is named after it
	# (pg_stat_replication.application_name); a replica's is "walreceiver".
	[ "${ROLE[$name]}" != downstream ] ||
		echo "cluster_name = '$name'" >>"$(pg_data "$name")/postgresql.conf"
	pg_start "$name"
	wait_for "$name" "$name to stream from $primary" pg_replica_streaming "$name"
}

pg_replica_streaming() {
	[ "$(pg_sql "$1" "SELECT status || ' ' || sender_port FROM pg_stat_wal_receiver")" = \
		"streaming ${PORT[${UPSTREAM[$1]}]}" ]
}

# pg_slot_gone PRIMARY SLOT: drop SLOT on PRIMARY, ending the walsender that
# still holds it; true once no such slot is left.
pg_slot_gone() {
	local primary=$1 slot=$2
	pg_sql "$primary" "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots
		WHERE slot_name = '$slot' AND active_pid IS NOT NULL" >/dev/null
	pg_sql "$primary" "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots
		WHERE slot_name = '$slot' AND NOT active" >/dev/null
	[ "$(pg_sql "$primary" "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '$slot'")" = 0 ]
}

# pg_reset NAME: stop replica NAME (promoted or not), drop its data and its
# slot on the primary, and make it again by pg_basebackup -R.
pg_reset() {
	local name=$1 primary=${UPSTREAM[$1]} slot
	slot=$(pg_slot "$name")
	note_reset "$name"
	pg_stop "$name"
	rm -rf -- "$(pg_data "$name")"
	wait_for "$name" "slot $slot on $primary to be dropped" pg_slot_gone "$primary" "$slot"
	pg_replica_start "$name"
}

pg_stop() {
	local name=$1 pid
	pid=$(pg_pid "$name") || return 0
	if ! as_owner "$PG_BIN/pg_ctl" -D "$(pg_data "$name")" -m fast -w \
		-t "$TIMEOUT" stop >/dev/null 2>&1; then
		log "PostgreSQL $name did not stop in ${TIMEOUT}s; killing pid $pid"
		pkill -KILL -P "$pid" 2>/dev/null || true
		kill -KILL "$pid" 2>/dev/null || true
		wait_gone "$pid" || fail "$name" "pid $pid survived SIGKILL"
	fi
	wait_gone "$pid" || fail "$name" "pid $pid still running after pg_ctl stop"
}

# ---- MariaDB ------------------------------------------------------------

my_socket() { echo "$RUN/$1.sock"; }
# Each MariaDB server has a tmpdir of its own: a starting mariadbd deletes
# the temporary tables it finds in its tmpdir, including those of another
# server that is bootstrapping there at the same time.
my_tmpdir() { echo "$DIR/tmp/$1"; }
my_pidfile() { echo "$RUN/$1.pid"; }

# my_sql NAME SQL: run SQL as MariaDB root over the unix socket.
my_sql() {
	mariadb --no-defaults --batch --skip-column-names -u root \
		--connect-timeout="$CONNECT_TIMEOUT" --socket="$(my_socket "$1")" -e "$2"
}

# my_slave_status NAME: SHOW SLAVE STATUS of NAME, one "Field: value" a line.
my_slave_status() {
	mariadb --no-defaults -u root --connect-timeout="$CONNECT_TIMEOUT" \
		--socket="$(my_socket "$1")" -e "SHOW SLAVE STATUS\G"
}

# The server's pid: from its pid file, or (for one whose pid file is not
# written yet) from its command line.
my_pid() {
	local pid
	if [ -r "$(my_pidfile "$1")" ]; then
		pid=$(head -n 1 "$(my_pidfile "$1")")
		if [[ "$pid" =~ ^[0-9]+$ ]] && alive "$pid" &&
			[ "$(ps -o comm= -p "$pid" 2>/dev/null)" = mariadbd ]; then
			echo "$pid"
			return 0
		fi
	fi
	pid_by_args "mariadbd --defaults-file=$DIR/$1.cnf"
}

my_write_cnf() {
	local name=$1
	cat >"$DIR/$name.cnf" <<-EOF
		# Written by integration/servers.sh; read only by this server.
		[mariadbd]
		datadir                        = $DIR/$name
		port                           = ${PORT[$name]}
		bind-address                   = $HOST
		socket                         = $(my_socket "$name")
		pid-file                       = $(my_pidfile "$name")
		tmpdir                         = $(my_tmpdir "$name")
		log-basename                   = $name
		log-error                      = $DIR/$name.log
		server-id                      = ${SID[$name]}
		log-bin                        = $name-bin
		log-slave-updates              = ON
		binlog-format                  = ROW
		gtid-strict-mode               = ON
		skip-name-resolve              = ON
		character-set-server           = utf8mb4
		collation-server               = utf8mb4_general_ci
		innodb-buffer-pool-size        = 64M
		innodb-flush-log-at-trx-commit = 2
		sync-binlog                    = 0
		performance-schema             = OFF
		max-connections                = 200
	EOF
	# A replica takes no writes but its primary's (reshard's preflight
	# refuses a writable one); users with READ ONLY ADMIN, as the test
	# user and root are, still write.
	if is_standby "$name"; then
		echo "read-only                      = ON" >>"$DIR/$name.cnf"
	fi
}

# my_start NAME: a fresh data directory and a running, empty server.
# my_template: DIR/tmp/my-template, an empty data directory made once by
# mariadb-install-db and copied for every MariaDB server (start and
# reset-replicas).  A MariaDB data directory holds no identity of its own
# (the server id is in the option file), and copying saves a bootstrap of
# the server per copy.
my_template() {
	local template=$DIR/tmp/my-template
	[ ! -e "$template/.complete" ] || return 0
	rm -rf -- "$template" "$template.new" "$template.tmp"
	mkdir -p "$template.new" "$template.tmp"
	chown_owner "$DIR/tmp" "$template.new" "$template.tmp"
	as_owner timeout -k 5 "$TIMEOUT" mariadb-install-db --no-defaults --datadir="$template.new" \
		--tmpdir="$template.tmp" --auth-root-authentication-method=normal --skip-test-db \
		>>"$DIR/my-template-setup.log" 2>&1 ||
		fail my-template "mariadb-install-db failed"
	# The 96 MiB InnoDB redo log is nearly all zeros (preallocated): a
	# sparse copy holds only the 6 MiB of data, and so do copies of it.
	cp -a --sparse=always -- "$template.new" "$template" ||
		fail my-template "cannot copy $template.new"
	rm -rf -- "$template.new" "$template.tmp"
	touch "$template/.complete"
}

# my_start NAME: a fresh data directory (a copy of the template) and a
# running, empty server.
my_start() {
	local name=$1 pid deadline
	my_write_cnf "$name"
	mkdir -p "$(my_tmpdir "$name")"
	chown_owner "$(my_tmpdir "$name")"
	rm -rf -- "${DIR:?}/$name"
	cp -a --sparse=always -- "$DIR/tmp/my-template" "$DIR/$name" ||
		fail "$name" "cannot copy $DIR/tmp/my-template to $DIR/$name"
	rm -f -- "$DIR/$name/.complete"
	parent_alive || exit 1
	# Detached, with no inherited stdin/stdout: a caller reading our output
	# through a pipe must not wait for the server to exit.
	as_owner setsid mariadbd --defaults-file="$DIR/$name.cnf" \
		</dev/null >>"$DIR/$name-setup.log" 2>&1 9>&- &
	pid=$!
	deadline=$((SECONDS + TIMEOUT))
	until my_sql "$name" "SELECT 1" >/dev/null 2>&1; do
		kill -0 "$pid" 2>/dev/null ||
			fail "$name" "MariaDB exited during startup (port ${PORT[$name]})"
		[ "$SECONDS" -lt "$deadline" ] ||
			fail "$name" "timed out after ${TIMEOUT}s waiting for MariaDB to accept connections"
		sleep 0.2
	done
}

# Root keeps only its socket login; over TCP every user needs a password.
my_root_socket_only() {
	echo "DROP USER IF EXISTS 'root'@'127.0.0.1', 'root'@'::1', 'root'@'$(hostname)';"
}

my_primary_start() {
	local name=$1
	my_start "$name"
	# These statements go to the binlog, so the replica runs them too.
	my_sql "$name" "
		$(my_root_socket_only)
		CREATE USER '$APP_USER'@'%' IDENTIFIED BY '$APP_PASSWORD';
		GRANT ALL PRIVILEGES ON *.* TO '$APP_USER'@'%' WITH GRANT OPTION;
		CREATE USER '$REPL_USER'@'%' IDENTIFIED BY '$REPL_PASSWORD';
		GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '$REPL_USER'@'%';
		CREATE DATABASE $APP_DB;" >>"$DIR/$name-setup.log" 2>&1 ||
		fail "$name" "cannot create users and database"
}

# my_replicate NAME: point the running server NAME at its primary, start
# replication on GTID and wait until it has caught up.
my_replicate() {
	local name=$1 primary=${UPSTREAM[$1]} pos
	my_sql "$name" "
		CHANGE MASTER TO MASTER_HOST='$HOST', MASTER_PORT=${PORT[$primary]},
			MASTER_USER='$REPL_USER', MASTER_PASSWORD='$REPL_PASSWORD',
			MASTER_CONNECT_RETRY=1, MASTER_USE_GTID=slave_pos;
		START SLAVE;" >>"$DIR/$name-setup.log" 2>&1 ||
		fail "$name" "cannot configure replication from $primary"
	wait_for "$name" "$name threads to run (Slave_IO_Running, Slave_SQL_Running)" \
		my_replica_running "$name"
	# Catch up with the primary (so that the app user exists on the replica).
	pos=$(my_sql "$primary" "SELECT @@gtid_binlog_pos") ||
		fail "$name" "cannot read the GTID position of $primary"
	if [ "$(my_sql "$name" "SELECT MASTER_GTID_WAIT('$pos', $TIMEOUT)")" != 0 ]; then
		my_slave_status "$name" >>"$DIR/$name-setup.log" 2>&1 || true
		fail "$name" "did not reach $primary GTID $pos in ${TIMEOUT}s"
	fi
}

my_replica_running() {
	local status port=${PORT[${UPSTREAM[$1]}]}
	status=$(my_slave_status "$1") || return 1
	grep -q '^ *Slave_IO_Running: Yes$' <<<"$status" &&
		grep -q '^ *Slave_SQL_Running: Yes$' <<<"$status" &&
		grep -q "^ *Master_Port: $port\$" <<<"$status"
}

# my_clone NAME: load the users and the databases of NAME's primary into the
# fresh server NAME, with the primary's GTID position as gtid_slave_pos.
# Nothing of it goes to NAME's binlog (sql_log_bin=0), so NAME's GTID
# history is exactly the primary's.
my_clone() {
	local name=$1 primary=${UPSTREAM[$1]}
	local list
	local -a dbs=() args=()
	my_sql "$name" "SET sql_log_bin = 0; $(my_root_socket_only)" >>"$DIR/$name-setup.log" 2>&1 ||
		fail "$name" "cannot restrict root to the socket"
	list=$(my_sql "$primary" "SELECT schema_name FROM information_schema.schemata
		WHERE schema_name NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')") ||
		fail "$name" "cannot list the databases of $primary"
	[ -z "$list" ] || mapfile -t dbs <<<"$list"
	[ ${#dbs[@]} -eq 0 ] || args=(--databases "${dbs[@]}")
	# --single-transaction with --master-data: one consistent snapshot and
	# its GTID; --system=users with --insert-ignore: CREATE USER IF NOT
	# EXISTS and the grants; tables with their triggers, routines, events.
	{ bounded mariadb-dump --no-defaults -u root --socket="$(my_socket "$primary")" \
		--single-transaction --gtid --master-data=1 --system=users --insert-ignore \
		--routines --events "${args[@]}" |
		bounded mariadb --no-defaults -u root --socket="$(my_socket "$name")" \
			--init-command="SET sql_log_bin = 0"; } >>"$DIR/$name-setup.log" 2>&1 ||
		fail "$name" "cannot copy ${dbs[*]:-the users} from $primary (mariadb-dump | mariadb)"
}

# my_reset NAME: stop replica NAME (promoted or not), and make it again from
# its primary in a fresh data directory.
my_reset() {
	local name=$1
	note_reset "$name"
	my_stop "$name"
	rm -rf -- "${DIR:?}/$name" "$(my_tmpdir "$name")"
	my_start "$name"
	my_clone "$name"
	my_replicate "$name"
}

my_stop() {
	local name=$1 pid
	pid=$(my_pid "$name") || return 0
	kill -TERM "$pid" 2>/dev/null || true
	if ! wait_gone "$pid"; then
		log "MariaDB $name did not stop in ${TIMEOUT}s; killing pid $pid"
		kill -KILL "$pid" 2>/dev/null || true
		wait_gone "$pid" || fail "$name" "pid $pid survived SIGKILL"
	fi
}

# ---- common -------------------------------------------------------------

server_pid() {
	case ${ENGINE[$1]} in
	pg) pg_pid "$1" ;;
	my) my_pid "$1" ;;
	esac
}

server_stop() {
	case ${ENGINE[$1]} in
	pg) pg_stop "$1" ;;
	my) my_stop "$1" ;;
	esac
}

replica_ok() {
	case ${ENGINE[$1]} in
	pg) pg_replica_streaming "$1" ;;
	my) my_replica_running "$1" ;;
	esac
}

note_reset() {
	local line
	line="---- reset-replicas at $(date '+%F %T') ----"
	echo "$line" >>"$DIR/$1-setup.log"
	[ ! -e "$DIR/$1.log" ] || echo "$line" >>"$DIR/$1.log"
}

# Whether everything a test relies on is up: every process, every replica
# replicating from its own primary, and the env file written.
healthy() {
	local name
	[ -f "$DIR/$MARKER" ] && [ -f "$ENV_FILE" ] || return 1
	for name in "${NAMES[@]}"; do
		server_pid "$name" >/dev/null || return 1
	done
	for name in $(names_where standby=yes); do
		replica_ok "$name" 2>/dev/null || return 1
	done
}

url() { # ENGINE PORT
	case $1 in
	pg) echo "postgresql://$APP_USER:$APP_PASSWORD@$HOST:$2/$APP_DB" ;;
	my) echo "mysql://$APP_USER:$APP_PASSWORD@$HOST:$2/$APP_DB" ;;
	esac
}

write_env() {
	local name var
	{
		cat <<-EOF
			# Written by integration/servers.sh; source it.  Test-only credentials.
			# RESHARD_*_PORT and RESHARD_*_URL name pair 1; RESHARD_*_k name pair k.
			export RESHARD_SERVERS_DIR='$DIR'
			export RESHARD_HOST=$HOST
			export RESHARD_DB_USER=$APP_USER
			export RESHARD_DB_PASSWORD=$APP_PASSWORD
			export RESHARD_DB_NAME=$APP_DB
			export RESHARD_PAIRS=$PAIRS
			export RESHARD_DOWNSTREAM=$([ -n "$(names_where role=downstream)" ] && echo 1 || echo 0)
		EOF
		for name in "${NAMES[@]}"; do
			[ "${PAIR[$name]}" -eq 1 ] || continue
			var=RESHARD_$(tr a-z- A-Z_ <<<"${ENGINE[$name]}_${ROLE[$name]}")
			echo "export ${var}_PORT=${PORT[$name]}"
		done
		for name in "${NAMES[@]}"; do
			[ "${PAIR[$name]}" -eq 1 ] || continue
			var=RESHARD_$(tr a-z- A-Z_ <<<"${ENGINE[$name]}_${ROLE[$name]}")
			echo "export ${var}_URL=$(url "${ENGINE[$name]}" "${PORT[$name]}")"
		done
		for name in "${NAMES[@]}"; do
			var=RESHARD_$(tr a-z- A-Z_ <<<"${ENGINE[$name]}_${ROLE[$name]}")
			echo "export ${var}_PORT_${PAIR[$name]}=${PORT[$name]}"
			echo "export ${var}_URL_${PAIR[$name]}=$(url "${ENGINE[$name]}" "${PORT[$name]}")"
		done
	} >"$ENV_FILE.new"
	chmod 644 "$ENV_FILE.new"
	mv "$ENV_FILE.new" "$ENV_FILE"
}

# start_engine ENGINE: start the servers of one engine, the two engines at
# once.  PostgreSQL: every primary at once (initdb, start, roles), then every
# replica and downstream at once (pg_basebackup -R, start, streaming).
# MariaDB: the template, then every server at once (a replica needs nothing
# from its primary to start), then every replica's and downstream's
# replication at once.
start_engine() {
	local -a primaries=() replicas=() all=()
	mapfile -t primaries < <(names_where "engine=$1" role=primary)
	mapfile -t replicas < <(names_where "engine=$1" standby=yes)
	case $1 in
	pg)
		run_jobs "starting" pg_primary_start "${primaries[@]}" &&
			run_jobs "starting" pg_replica_start "${replicas[@]}"
		;;
	my)
		all=("${primaries[@]}" "${replicas[@]}")
		my_template
		run_jobs "starting" my_server_start "${all[@]}" &&
			run_jobs "starting replication" my_replicate "${replicas[@]}"
		;;
	esac
}

my_server_start() {
	case ${ROLE[$1]} in
	primary) my_primary_start "$1" ;;
	replica | downstream) my_start "$1" ;;
	esac
}

cmd_start() {
	"$SCRIPT_DIR/install-deps.sh"
	[ -x "$PG_BIN/initdb" ] || die "PostgreSQL 15 not found in $PG_BIN"
	check_settings # plans the wanted fleet

	if [ -f "$DIR/$MARKER" ]; then
		lock
		if [ "$(cat "$LAYOUT_FILE" 2>/dev/null)" = "$(layout_text)" ] && healthy; then
			return 0
		fi
		log "servers in $DIR are only partly up, or not the fleet asked for; restarting them"
		(load_fleet && stop_fleet) || die "cannot stop the servers in $DIR"
		remove_dir
		check_settings
	elif [ -e "$DIR" ] && [ -n "$(ls -A "$DIR" 2>/dev/null)" ]; then
		die "$DIR exists, is not empty and was not made by servers.sh"
	fi

	local name
	for name in "${NAMES[@]}"; do
		! port_in_use "${PORT[$name]}" ||
			die "port ${PORT[$name]} on $HOST (for $name) is already in use"
	done

	ensure_owner
	mkdir -p "$DIR" "$RUN"
	touch "$DIR/$MARKER"
	layout_text >"$LAYOUT_FILE"
	lock
	chmod 755 "$DIR"
	chmod 700 "$RUN"
	chown_owner "$DIR" "$RUN"
	# Tools run as the owner must be able to stat their working directory.
	cd "$DIR"
	as_owner test -w "$DIR" ||
		die "$OWNER cannot write $DIR (is a parent directory private?)"

	trap on_signal INT TERM
	if ! run_jobs "starting" start_engine pg my; then
		log "servers may be half started; clean up with: $0 stop $DIR"
		exit 1
	fi
	trap - INT TERM
	write_env
}

# stop_fleet: stop every server of the fleet and any other server found in
# DIR, replicas and downstreams first (so that primaries do not wait on their
# walsenders), each group at once.
stop_fleet() {
	local name data
	for data in "$DIR"/pg-*/ "$DIR"/my-*.cnf; do
		[ -e "$data" ] || continue
		name=$(basename "$data" .cnf)
		[ -n "${ENGINE[$name]:-}" ] && continue
		case $name in
		*replica*) add_server "$name" "${name%%-*}" replica 0 0 '?' - ;;
		*downstream*) add_server "$name" "${name%%-*}" downstream 0 0 '?' - ;;
		*) add_server "$name" "${name%%-*}" primary 0 0 - - ;;
		esac
	done
	local -a replicas=() primaries=()
	mapfile -t replicas < <(names_where standby=yes)
	mapfile -t primaries < <(names_where standby=no)
	run_jobs "stopping" server_stop "${replicas[@]}" &&
		run_jobs "stopping" server_stop "${primaries[@]}"
}

remove_dir() {
	cd /
	# A setup tool orphaned by a killed start (initdb, pg_basebackup) may
	# still be writing for a moment; retry until the tree stays removed.
	local deadline=$((SECONDS + TIMEOUT))
	until rm -rf -- "$DIR" 2>/dev/null; do
		[ "$SECONDS" -lt "$deadline" ] || die "cannot remove $DIR"
		sleep 0.2
	done
}

cmd_stop() {
	[ -e "$DIR" ] || return 0
	[ -f "$DIR/$MARKER" ] ||
		die "$DIR was not made by servers.sh; not touching it"
	# Wait for the jobs of a start that was killed, so that none of them
	# starts a server after we looked.
	lock anyway
	load_fleet
	stop_fleet || die "cannot stop every server in $DIR"
	remove_dir
}

cmd_status() {
	local name pid all_up=0 extra status
	load_fleet
	for name in "${NAMES[@]}"; do
		extra=
		if pid=$(server_pid "$name"); then
			if is_standby "$name"; then
				if replica_ok "$name" 2>/dev/null; then
					status=replicating
					[ "${ENGINE[$name]}" = my ] || status=streaming
					extra=", $status from ${UPSTREAM[$name]}"
				elif [ "${ENGINE[$name]}" = pg ] &&
					[ "$(pg_sql "$name" "SELECT pg_is_in_recovery()" 2>/dev/null)" = f ]; then
					extra=", NOT streaming: promoted"
				elif [ "${ENGINE[$name]}" = my ] && status=$(my_slave_status "$name" 2>/dev/null) &&
					[ -z "$status" ]; then
					extra=", NOT replicating: no primary configured"
				else
					extra=", NOT replicating from ${UPSTREAM[$name]}"
				fi
			fi
			[[ "$extra" != *NOT* ]] || all_up=1
			echo "$name: running (pid $pid, port ${PORT[$name]}$extra)"
		else
			echo "$name: stopped (port ${PORT[$name]})"
			all_up=1
		fi
	done
	return $all_up
}

cmd_env() {
	[ -f "$ENV_FILE" ] || die "no $ENV_FILE; run: $0 start $DIR"
	cat "$ENV_FILE"
}

reset_replica() {
	local t0=$SECONDS
	case ${ENGINE[$1]} in
	pg) pg_reset "$1" ;;
	my) my_reset "$1" ;;
	esac
	log "$1 is a fresh replica of ${UPSTREAM[$1]} ($((SECONDS - t0))s)"
}

cmd_reset_replicas() {
	local engine=$1 name bad=0
	local -a replicas=()
	[ -f "$DIR/$MARKER" ] || die "no servers in $DIR; run: $0 start $DIR"
	lock
	load_fleet
	case $engine in
	pg | my) mapfile -t replicas < <(names_where standby=yes "engine=$engine") ;;
	all) mapfile -t replicas < <(names_where standby=yes) ;;
	esac
	[ ${#replicas[@]} -gt 0 ] || die "no $engine replica in $DIR"
	for name in "${replicas[@]}"; do
		if ! server_pid "${UPSTREAM[$name]}" >/dev/null; then
			log "error: ${UPSTREAM[$name]} is not running, so $name cannot be made from it"
			bad=1
		fi
	done
	[ "$bad" -eq 0 ] || die "reset-replicas changed nothing; restart the servers: $0 start $DIR"
	cd "$DIR"
	[ -z "$(names_where engine=my standby=yes)" ] || my_template
	trap on_signal INT TERM
	run_jobs "reset-replicas" reset_replica "${replicas[@]}" || {
		log "some replicas may be stopped or half made; run reset-replicas again, or: $0 start $DIR"
		exit 1
	}
	trap - INT TERM
}

usage() {
	die "usage: $0 start|stop|status|env [DIR]  or  $0 reset-replicas [pg|my|all] [DIR]"
}

main() {
	local command=${1:-}
	if ! is_uint "$TIMEOUT" || [ "$TIMEOUT" -lt 1 ]; then
		die "RESHARD_SERVERS_TIMEOUT must be a number of seconds, not '$TIMEOUT'"
	fi
	if [ "$command" = reset-replicas ]; then
		# reset-replicas [pg|my|all] [DIR]; a DIR named like an engine is
		# written ./pg.
		local engine=all
		shift
		case ${1:-} in
		pg | my | all)
			engine=$1
			shift
			;;
		esac
		[ $# -le 1 ] || usage
		set_dir "${1:-}"
		cmd_reset_replicas "$engine"
		return
	fi
	[ $# -le 2 ] || usage
	set_dir "${2:-}"
	case $command in
	start) cmd_start ;;
	stop) cmd_stop ;;
	status) cmd_status ;;
	env) cmd_env ;;
	*) usage ;;
	esac
}

main "$@"
