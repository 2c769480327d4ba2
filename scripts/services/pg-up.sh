#!/usr/bin/env bash
# pg-up.sh DIR -- start a throwaway PostgreSQL cluster (Debian 12: postgresql-15) as an
# unprivileged user, TCP on 127.0.0.1:<random free port>, unix socket in DIR/sock, all
# state in DIR. Must be run as root (it drops to PG_USER with runuser). Idempotent:
# reuses a running cluster in DIR, otherwise wipes DIR/data and initdb's a new one.
# Stop with pg-down.sh DIR.
# Knobs: PG_USER=postgres (OS user to run as; created with useradd if missing)
#        PG_DB=ci (database created for tests), PG_PORT=<port> (default random free),
#        PG_BINDIR=/usr/lib/postgresql/<newest>/bin, PG_UP_TIMEOUT=60
#        PG_KEEP=1: a stopped cluster in DIR (pg-down.sh) is started again with its data, on
#        its old port (restart tests), instead of being wiped
#        PG_DURABLE=1: keep fsync / synchronous_commit / full_page_writes on (crash tests)
# Durability is switched off (fsync/synchronous_commit/full_page_writes) unless PG_DURABLE=1 -
# CI only.
# Prints / writes DIR/env: PGHOST PGPORT PGUSER PGDATABASE DATABASE_URL PG_SOCKET_DIR
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "pg-up.sh: run as root" >&2; exit 1; }
DIR=$(realpath -m -- "$1")
PG_USER=${PG_USER:-postgres}
PG_DB=${PG_DB:-ci}
TMO=${PG_UP_TIMEOUT:-60}
BIN=${PG_BINDIR:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)}
[ -x "$BIN/initdb" ] || { echo "pg-up.sh: no initdb; apt-get install postgresql-15" >&2; exit 1; }
export LC_ALL=C.UTF-8
if [ "${PG_DURABLE:-0}" = 1 ]; then DURABLE=on; else DURABLE=off; fi

if ! id -u "$PG_USER" >/dev/null 2>&1; then
  useradd --system --user-group --no-create-home --shell /usr/sbin/nologin "$PG_USER"
fi
as_pg() { runuser -u "$PG_USER" -- "$@"; }

mkdir -p "$DIR"
chown "$PG_USER:" "$DIR"
as_pg test -w "$DIR" || { echo "pg-up.sh: $PG_USER cannot write $DIR (is a parent directory private, e.g. /root?)" >&2; exit 1; }

ready() { as_pg "$BIN/pg_isready" -q -h 127.0.0.1 -p "$1" -t 2; }

# ---- reuse a running cluster ----
if [ -f "$DIR/env" ] && [ -f "$DIR/data/postmaster.pid" ] && as_pg "$BIN/pg_ctl" -D "$DIR/data" status >/dev/null 2>&1; then
  . "$DIR/env"
  if ready "$PGPORT"; then cat "$DIR/env"; exit 0; fi
fi
# ---- PG_KEEP=1: start the stopped cluster again, data and port kept ----
if [ "${PG_KEEP:-0}" = 1 ] && [ -f "$DIR/data/PG_VERSION" ] && [ -f "$DIR/env.kept" ]; then
  . "$DIR/env.kept"
  as_pg "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/postgres.log" -w -t "$TMO" start >/dev/null \
    || { echo "pg-up.sh: restarting the kept cluster failed" >&2; tail -20 "$DIR/postgres.log" >&2; exit 1; }
  ready "$PGPORT" || { echo "pg-up.sh: not ready on 127.0.0.1:$PGPORT" >&2; exit 1; }
  cp "$DIR/env.kept" "$DIR/env"; cat "$DIR/env"; exit 0
fi
# ---- stop leftovers, start fresh ----
if [ -f "$DIR/data/postmaster.pid" ]; then
  as_pg "$BIN/pg_ctl" -D "$DIR/data" stop -m immediate -w >/dev/null 2>&1 || true
fi
rm -rf -- "$DIR/data" "$DIR/sock" "$DIR/env" "$DIR/env.kept" "$DIR/postgres.log"

# Random ports are drawn below the kernel's ephemeral range (32768-60999 here), so that
# outgoing connections can't be holding them; "free" = no TCP socket of any state uses it.
port_free() {   # (ss from iproute2, else a bash /dev/tcp probe)
  if command -v ss >/dev/null; then ! ss -Htan "sport = :$1" | grep -q . ;
  else ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; fi
}
EPH_LO=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
[ "${EPH_LO:-0}" -gt 12000 ] || EPH_LO=32768
rand_port() { echo $(( 10000 + (RANDOM * 32768 + RANDOM) % (EPH_LO - 10000) )); }
as_pg mkdir -p "$DIR/sock"
as_pg "$BIN/initdb" -D "$DIR/data" -U postgres --auth=trust --encoding=UTF8 --no-locale \
  --no-sync >"$DIR/initdb.log" 2>&1 || { cat "$DIR/initdb.log" >&2; exit 1; }
cat >>"$DIR/data/postgresql.conf" <<EOF
# --- pg-up.sh (throwaway CI instance) ---
listen_addresses = '127.0.0.1'
unix_socket_directories = '$DIR/sock'
fsync = $DURABLE
synchronous_commit = $DURABLE
full_page_writes = $DURABLE
max_connections = 200
shared_buffers = 128MB
logging_collector = off
port = 5432
EOF
ok=0
for attempt in 1 2 3; do              # retry with a new port if the bind races someone
  PORT=${PG_PORT:-}
  if [ -z "$PORT" ]; then
    for _ in $(seq 200); do p=$(rand_port); port_free "$p" && { PORT=$p; break; }; done
  fi
  [ -n "$PORT" ] || { echo "pg-up.sh: no free port" >&2; exit 1; }
  as_pg sed -i "\$s/^port = .*/port = $PORT/" "$DIR/data/postgresql.conf"
  if as_pg "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/postgres.log" -w -t "$TMO" start >/dev/null; then
    ok=1; break
  fi
  [ -z "${PG_PORT:-}" ] || break
done
[ "$ok" = 1 ] || { echo "pg-up.sh: postgres did not start" >&2; tail -20 "$DIR/postgres.log" >&2; exit 1; }
ready "$PORT" || { echo "pg-up.sh: not ready on 127.0.0.1:$PORT" >&2; exit 1; }
as_pg "$BIN/psql" -X -q -h "$DIR/sock" -p "$PORT" -U postgres -d postgres \
  -c "CREATE DATABASE \"$PG_DB\"" >/dev/null
cat >"$DIR/env" <<EOF
export PGHOST=127.0.0.1
export PGPORT=$PORT
export PGUSER=postgres
export PGDATABASE=$PG_DB
export PG_SOCKET_DIR=$DIR/sock
export DATABASE_URL=postgresql://postgres@127.0.0.1:$PORT/$PG_DB
EOF
cp "$DIR/env" "$DIR/env.kept"
cat "$DIR/env"
