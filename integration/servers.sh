#!/usr/bin/env bash
# Start, stop and inspect the real database servers that reshard's
# integration tests run against: a PostgreSQL 15 primary with a streaming
# replica (made by pg_basebackup -R) and a MariaDB primary with a GTID
# replica.  All four are plain processes (no systemd, no system clusters)
# living in one directory, listening on 127.0.0.1 only, run as an
# unprivileged user (`reshard-test`, created when invoked as root).
#
# Usage:
#   integration/servers.sh start  [DIR]   start all four, write DIR/env
#   integration/servers.sh stop   [DIR]   stop all four, remove DIR
#   integration/servers.sh status [DIR]   one line per server; exit 0 if all up
#   integration/servers.sh env    [DIR]   print DIR/env (source it, or eval)
#
# DIR defaults to $RESHARD_SERVERS_DIR, then /tmp/reshard-servers.  Ports
# come from RESHARD_PG_PRIMARY_PORT (54321), RESHARD_PG_REPLICA_PORT (54322),
# RESHARD_MY_PRIMARY_PORT (33061) and RESHARD_MY_REPLICA_PORT (33062); every
# wait is bounded by RESHARD_SERVERS_TIMEOUT seconds (30).  See
# docs/servers.md.  The credentials are for tests only.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PG_BIN=/usr/lib/postgresql/15/bin
HOST=127.0.0.1
OWNER=reshard-test             # system user that runs the servers when we are root
MARKER=.reshard-servers        # only a directory holding this file is ever removed

PG_PRIMARY_PORT=${RESHARD_PG_PRIMARY_PORT:-54321}
PG_REPLICA_PORT=${RESHARD_PG_REPLICA_PORT:-54322}
MY_PRIMARY_PORT=${RESHARD_MY_PRIMARY_PORT:-33061}
MY_REPLICA_PORT=${RESHARD_MY_REPLICA_PORT:-33062}
TIMEOUT=${RESHARD_SERVERS_TIMEOUT:-30}

APP_USER=reshard APP_PASSWORD=reshard APP_DB=app
REPL_USER=replicator REPL_PASSWORD=replicator
PG_SLOT=reshard_replica

# The four servers, in start order.  Stop goes the other way.
SERVERS=(pg-primary pg-replica my-primary my-replica)

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
# logs (the server's own and the one of its setup tools), then exit.
fail() {
	local name=$1
	shift
	log "error: $*"
	show_log "$DIR/$name-setup.log" 8
	show_log "$DIR/$name.log"
	log "servers may be half started; clean up with: $0 stop $DIR"
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

# Set DIR and the paths inside it from the optional command argument.
set_dir() {
	DIR=${1:-${RESHARD_SERVERS_DIR:-/tmp/reshard-servers}}
	DIR=$(realpath -m -- "$DIR")
	[ "$DIR" != / ] || die "refusing to use / as the servers directory"
	RUN=$DIR/run                      # unix sockets and MariaDB pid files
	ENV_FILE=$DIR/env
	# Unix socket paths are limited to 107 bytes.
	[ ${#RUN} -le 80 ] || die "directory path too long for unix sockets: $DIR"
}

port_in_use() {
	(exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null
}

# ---- PostgreSQL ---------------------------------------------------------

pg_data() { echo "$DIR/$1"; }
pg_port() { if [ "$1" = pg-primary ]; then echo "$PG_PRIMARY_PORT"; else echo "$PG_REPLICA_PORT"; fi; }

# pg_sql NAME SQL: run SQL as the superuser over the unix socket; print
# unaligned tuples.
pg_sql() {
	psql -X -w -q -At -v ON_ERROR_STOP=1 -h "$RUN" -p "$(pg_port "$1")" \
		-U postgres -d postgres -c "$2"
}

# The postmaster's pid, if its pid file names a live postgres process.
pg_pid() {
	local pidfile pid
	pidfile=$(pg_data "$1")/postmaster.pid
	[ -r "$pidfile" ] || return 1
	pid=$(head -n 1 "$pidfile")
	[[ "$pid" =~ ^[0-9]+$ ]] || return 1
	[ "$(ps -o comm= -p "$pid" 2>/dev/null)" = postgres ] || return 1
	echo "$pid"
}

pg_configure() {
	local name=$1
	cat >>"$(pg_data "$name")/postgresql.conf" <<-EOF

		# ---- reshard integration servers (integration/servers.sh) ----
		listen_addresses = '$HOST'
		port = $(pg_port "$name")
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
	chmod 700 "$data"
	as_owner "$PG_BIN/pg_ctl" -D "$data" -l "$DIR/$name.log" -w -t "$TIMEOUT" \
		start >>"$DIR/$name-setup.log" 2>&1 ||
		fail "$name" "PostgreSQL $name did not start on port $(pg_port "$name")"
}

pg_primary_start() {
	local data
	data=$(pg_data pg-primary)
	as_owner "$PG_BIN/initdb" -D "$data" -U postgres --auth=trust \
		--no-locale --encoding=UTF8 --no-sync >>"$DIR/pg-primary-setup.log" 2>&1 ||
		fail pg-primary "initdb failed for pg-primary"
	pg_configure pg-primary
	# Superuser through the socket inside DIR only; everything over TCP
	# needs a SCRAM password.
	cat >"$data/pg_hba.conf" <<-EOF
		local all         all          trust
		host  replication $REPL_USER   $HOST/32 scram-sha-256
		host  all         all          $HOST/32 scram-sha-256
	EOF
	pg_start pg-primary
	{ pg_sql pg-primary "
		CREATE ROLE $REPL_USER LOGIN REPLICATION PASSWORD '$REPL_PASSWORD';
		CREATE ROLE $APP_USER LOGIN SUPERUSER PASSWORD '$APP_PASSWORD';" &&
		pg_sql pg-primary "CREATE DATABASE $APP_DB OWNER $APP_USER"; } \
		>>"$DIR/pg-primary-setup.log" 2>&1 ||
		fail pg-primary "cannot create roles and database on pg-primary"
}

pg_replica_start() {
	# -R writes primary_conninfo (with the password) and standby.signal;
	# the slot keeps the primary's WAL until the replica has it.
	as_owner env PGPASSWORD="$REPL_PASSWORD" "$PG_BIN/pg_basebackup" \
		-h "$HOST" -p "$PG_PRIMARY_PORT" -U "$REPL_USER" -w \
		-D "$(pg_data pg-replica)" -R -C -S "$PG_SLOT" -X stream \
		--checkpoint=fast --no-sync >>"$DIR/pg-replica-setup.log" 2>&1 ||
		fail pg-replica "pg_basebackup from pg-primary failed"
	pg_configure pg-replica
	pg_start pg-replica
	wait_for pg-replica "pg-replica to stream from pg-primary" \
		pg_replica_streaming
}

pg_replica_streaming() {
	[ "$(pg_sql pg-replica "SELECT status FROM pg_stat_wal_receiver")" = streaming ]
}

pg_stop() {
	local name=$1 pid
	pid=$(pg_pid "$name") || return 0
	if ! as_owner "$PG_BIN/pg_ctl" -D "$(pg_data "$name")" -m fast -w \
		-t "$TIMEOUT" stop >/dev/null 2>&1; then
		log "PostgreSQL $name did not stop in ${TIMEOUT}s; killing pid $pid"
		pkill -KILL -P "$pid" 2>/dev/null || true
		kill -KILL "$pid" 2>/dev/null || true
		wait_gone "$pid" || fail "$name" "$name (pid $pid) survived SIGKILL"
	fi
	wait_gone "$pid" || fail "$name" "$name (pid $pid) still running after pg_ctl stop"
}

# ---- MariaDB ------------------------------------------------------------

my_port() { if [ "$1" = my-primary ]; then echo "$MY_PRIMARY_PORT"; else echo "$MY_REPLICA_PORT"; fi; }
my_socket() { echo "$RUN/$1.sock"; }
my_pidfile() { echo "$RUN/$1.pid"; }

# my_sql NAME SQL: run SQL as MariaDB root over the unix socket.
my_sql() {
	mariadb --no-defaults --batch --skip-column-names -u root \
		--socket="$(my_socket "$1")" -e "$2"
}

# my_slave_status: SHOW SLAVE STATUS of my-replica, one "Field: value" a line.
my_slave_status() {
	mariadb --no-defaults -u root --socket="$(my_socket my-replica)" \
		-e "SHOW SLAVE STATUS\G"
}

# The server's pid, if its pid file names a live mariadbd process.
my_pid() {
	local pid
	[ -r "$(my_pidfile "$1")" ] || return 1
	pid=$(head -n 1 "$(my_pidfile "$1")")
	[[ "$pid" =~ ^[0-9]+$ ]] || return 1
	[ "$(ps -o comm= -p "$pid" 2>/dev/null)" = mariadbd ] || return 1
	echo "$pid"
}

my_write_cnf() {
	local name=$1 server_id=$2
	cat >"$DIR/$name.cnf" <<-EOF
		# Written by integration/servers.sh; read only by this server.
		[mariadbd]
		datadir                        = $DIR/$name
		port                           = $(my_port "$name")
		bind-address                   = $HOST
		socket                         = $(my_socket "$name")
		pid-file                       = $(my_pidfile "$name")
		log-basename                   = $name
		log-error                      = $DIR/$name.log
		server-id                      = $server_id
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
}

my_start() {
	local name=$1 server_id=$2 pid deadline
	my_write_cnf "$name" "$server_id"
	mkdir -p "$DIR/$name"
	chown_owner "$DIR/$name"
	as_owner mariadb-install-db --no-defaults --datadir="$DIR/$name" \
		--auth-root-authentication-method=normal --skip-test-db \
		>>"$DIR/$name-setup.log" 2>&1 ||
		fail "$name" "mariadb-install-db failed for $name"
	# Detached, with no inherited stdin/stdout: a caller reading our output
	# through a pipe must not wait for the server to exit.
	as_owner setsid mariadbd --defaults-file="$DIR/$name.cnf" \
		</dev/null >>"$DIR/$name-setup.log" 2>&1 &
	pid=$!
	deadline=$((SECONDS + TIMEOUT))
	until my_sql "$name" "SELECT 1" >/dev/null 2>&1; do
		kill -0 "$pid" 2>/dev/null ||
			fail "$name" "MariaDB $name exited during startup (port $(my_port "$name"))"
		[ "$SECONDS" -lt "$deadline" ] ||
			fail "$name" "timed out after ${TIMEOUT}s waiting for MariaDB $name to accept connections"
		sleep 0.2
	done
}

my_primary_start() {
	my_start my-primary 1
	# These statements go to the binlog, so the replica runs them too.
	# Root keeps only its socket login; over TCP every user needs a password.
	my_sql my-primary "
		DROP USER IF EXISTS 'root'@'127.0.0.1', 'root'@'::1', 'root'@'$(hostname)';
		CREATE USER '$APP_USER'@'%' IDENTIFIED BY '$APP_PASSWORD';
		GRANT ALL PRIVILEGES ON *.* TO '$APP_USER'@'%' WITH GRANT OPTION;
		CREATE USER '$REPL_USER'@'%' IDENTIFIED BY '$REPL_PASSWORD';
		GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '$REPL_USER'@'%';
		CREATE DATABASE $APP_DB;" >>"$DIR/my-primary-setup.log" 2>&1 ||
		fail my-primary "cannot create users and database on my-primary"
}

my_replica_start() {
	local pos
	my_start my-replica 2
	my_sql my-replica "
		CHANGE MASTER TO MASTER_HOST='$HOST', MASTER_PORT=$MY_PRIMARY_PORT,
			MASTER_USER='$REPL_USER', MASTER_PASSWORD='$REPL_PASSWORD',
			MASTER_CONNECT_RETRY=1, MASTER_USE_GTID=slave_pos;
		START SLAVE;" >>"$DIR/my-replica-setup.log" 2>&1 ||
		fail my-replica "cannot configure replication on my-replica"
	wait_for my-replica "my-replica threads to run (Slave_IO_Running, Slave_SQL_Running)" \
		my_replica_running
	# Catch up with the primary, so that the app user exists on the replica.
	pos=$(my_sql my-primary "SELECT @@gtid_binlog_pos")
	if [ "$(my_sql my-replica "SELECT MASTER_GTID_WAIT('$pos', $TIMEOUT)")" != 0 ]; then
		my_slave_status >>"$DIR/my-replica-setup.log" 2>&1 || true
		fail my-replica "my-replica did not reach primary GTID $pos in ${TIMEOUT}s"
	fi
}

my_replica_running() {
	local status
	status=$(my_slave_status) || return 1
	grep -q '^ *Slave_IO_Running: Yes$' <<<"$status" &&
		grep -q '^ *Slave_SQL_Running: Yes$' <<<"$status"
}

my_stop() {
	local name=$1 pid
	pid=$(my_pid "$name") || return 0
	kill -TERM "$pid" 2>/dev/null || true
	if ! wait_gone "$pid"; then
		log "MariaDB $name did not stop in ${TIMEOUT}s; killing pid $pid"
		kill -KILL "$pid" 2>/dev/null || true
		wait_gone "$pid" || fail "$name" "$name (pid $pid) survived SIGKILL"
	fi
}

# ---- common -------------------------------------------------------------

chown_owner() {
	[ "$(id -u)" -eq 0 ] || return 0
	chown "$OWNER:$OWNER" "$@"
}

# wait_gone PID: wait until PID has exited and been reaped; return 1 after
# $TIMEOUT seconds.  We are not the servers' parent, so an exited server
# stays a zombie until init reaps it; one still unreaped after a few seconds
# is taken as gone (it runs nothing and holds no port).
wait_gone() {
	local pid=$1 start=$SECONDS state
	while state=$(ps -o stat= -p "$pid" 2>/dev/null); do
		[[ "$state" != Z* ]] || [ $((SECONDS - start)) -lt 3 ] || return 0
		[ $((SECONDS - start)) -lt "$TIMEOUT" ] || return 1
		sleep 0.1
	done
}

server_pid() {
	case $1 in
	pg-*) pg_pid "$1" ;;
	my-*) my_pid "$1" ;;
	esac
}

server_port() {
	case $1 in
	pg-*) pg_port "$1" ;;
	my-*) my_port "$1" ;;
	esac
}

# Whether everything a test relies on is up: all four processes, the
# replicas replicating, and the env file written.
healthy() {
	local name
	[ -f "$DIR/$MARKER" ] && [ -f "$ENV_FILE" ] || return 1
	for name in "${SERVERS[@]}"; do
		server_pid "$name" >/dev/null || return 1
	done
	pg_replica_streaming 2>/dev/null && my_replica_running 2>/dev/null
}

write_env() {
	local pg="postgresql://$APP_USER:$APP_PASSWORD@$HOST"
	local my="mysql://$APP_USER:$APP_PASSWORD@$HOST"
	cat >"$ENV_FILE.new" <<-EOF
		# Written by integration/servers.sh; source it.  Test-only credentials.
		export RESHARD_SERVERS_DIR='$DIR'
		export RESHARD_HOST=$HOST
		export RESHARD_DB_USER=$APP_USER
		export RESHARD_DB_PASSWORD=$APP_PASSWORD
		export RESHARD_DB_NAME=$APP_DB
		export RESHARD_PG_PRIMARY_PORT=$PG_PRIMARY_PORT
		export RESHARD_PG_REPLICA_PORT=$PG_REPLICA_PORT
		export RESHARD_MY_PRIMARY_PORT=$MY_PRIMARY_PORT
		export RESHARD_MY_REPLICA_PORT=$MY_REPLICA_PORT
		export RESHARD_PG_PRIMARY_URL=$pg:$PG_PRIMARY_PORT/$APP_DB
		export RESHARD_PG_REPLICA_URL=$pg:$PG_REPLICA_PORT/$APP_DB
		export RESHARD_MY_PRIMARY_URL=$my:$MY_PRIMARY_PORT/$APP_DB
		export RESHARD_MY_REPLICA_URL=$my:$MY_REPLICA_PORT/$APP_DB
	EOF
	chmod 644 "$ENV_FILE.new"
	mv "$ENV_FILE.new" "$ENV_FILE"
}

cmd_start() {
	"$SCRIPT_DIR/install-deps.sh"
	[ -x "$PG_BIN/initdb" ] || die "PostgreSQL 15 not found in $PG_BIN"

	if [ -f "$DIR/$MARKER" ]; then
		healthy && return 0
		log "servers in $DIR are only partly up; restarting them"
		cmd_stop
	elif [ -e "$DIR" ] && [ -n "$(ls -A "$DIR" 2>/dev/null)" ]; then
		die "$DIR exists, is not empty and was not made by servers.sh"
	fi

	local port
	for port in "$PG_PRIMARY_PORT" "$PG_REPLICA_PORT" "$MY_PRIMARY_PORT" "$MY_REPLICA_PORT"; do
		port_in_use "$port" && die "port $port on $HOST is already in use"
	done

	ensure_owner
	mkdir -p "$DIR" "$RUN"
	touch "$DIR/$MARKER"
	chmod 755 "$DIR"
	chmod 700 "$RUN"
	chown_owner "$DIR" "$RUN"
	# Tools run as the owner must be able to stat their working directory.
	cd "$DIR"
	as_owner test -w "$DIR" ||
		die "$OWNER cannot write $DIR (is a parent directory private?)"

	pg_primary_start
	pg_replica_start
	my_primary_start
	my_replica_start
	write_env
}

cmd_stop() {
	local i name
	if [ ! -e "$DIR" ]; then
		return 0
	fi
	[ -f "$DIR/$MARKER" ] ||
		die "$DIR was not made by servers.sh; not touching it"
	# Replicas first, so that primaries do not wait on their walsenders.
	for ((i = ${#SERVERS[@]} - 1; i >= 0; i--)); do
		name=${SERVERS[i]}
		case $name in
		pg-*) pg_stop "$name" ;;
		my-*) my_stop "$name" ;;
		esac
	done
	cd /
	# A setup tool orphaned by a killed start (initdb, pg_basebackup) may
	# still be writing for a moment; retry until the tree stays removed.
	local deadline=$((SECONDS + TIMEOUT))
	until rm -rf -- "$DIR" 2>/dev/null; do
		[ "$SECONDS" -lt "$deadline" ] || die "cannot remove $DIR"
		sleep 0.2
	done
}

cmd_status() {
	local name pid all_up=0 extra
	for name in "${SERVERS[@]}"; do
		extra=
		if pid=$(server_pid "$name"); then
			case $name in
			pg-replica) pg_replica_streaming 2>/dev/null && extra=", streaming" || extra=", NOT streaming" ;;
			my-replica) my_replica_running 2>/dev/null && extra=", replicating" || extra=", NOT replicating" ;;
			esac
			[[ "$extra" != *NOT* ]] || all_up=1
			echo "$name: running (pid $pid, port $(server_port "$name")$extra)"
		else
			echo "$name: stopped"
			all_up=1
		fi
	done
	return $all_up
}

cmd_env() {
	[ -f "$ENV_FILE" ] || die "no $ENV_FILE; run: $0 start $DIR"
	cat "$ENV_FILE"
}

main() {
	local command=${1:-}
	[ $# -le 2 ] || die "usage: $0 start|stop|status|env [DIR]"
	set_dir "${2:-}"
	case $command in
	start) cmd_start ;;
	stop) cmd_stop ;;
	status) cmd_status ;;
	env) cmd_env ;;
	*) die "usage: $0 start|stop|status|env [DIR]" ;;
	esac
}

main "$@"
