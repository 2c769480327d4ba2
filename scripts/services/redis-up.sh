#!/usr/bin/env bash
# redis-up.sh DIR -- start a throwaway redis-server (Debian 12: 7.0.x, apt-get install redis-server)
# on 127.0.0.1:<random free port>, all files under DIR. Idempotent: reuses a live instance
# in DIR, otherwise (re)starts one. Stop with redis-down.sh DIR.
# Knobs: REDIS_AOF=1 (appendonly yes; default: no persistence at all),
#        REDIS_APPENDFSYNC=always|everysec|no (with REDIS_AOF=1; default everysec)
#        REDIS_PORT=<port> (default: random free port), REDIS_UP_TIMEOUT=30
# Prints / writes DIR/env: REDIS_HOST REDIS_PORT REDIS_URL REDIS_SOCKET REDIS_PID
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
command -v redis-server >/dev/null && command -v redis-cli >/dev/null \
  || { echo "redis-up.sh: apt-get install redis-server" >&2; exit 1; }
DIR=$(realpath -m -- "$1")
TMO=${REDIS_UP_TIMEOUT:-30}
WANT_PORT=${REDIS_PORT:-}   # caller's choice (DIR/env, sourced below, also sets REDIS_PORT)
mkdir -p "$DIR"

ping() { [ "$(timeout 5 redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null)" = PONG ]; }
# our instance answers on port $1 (not some other redis that already owns the port)
ours_up() { ping "$1" && [ "$(timeout 5 redis-cli -h 127.0.0.1 -p "$1" config get dir 2>/dev/null | tail -n1)" = "$DIR" ]; }

if [ -f "$DIR/env" ]; then
  . "$DIR/env"
  if ours_up "$REDIS_PORT"; then
    cat "$DIR/env"; exit 0                           # our instance is up: reuse it
  fi
fi
"$(dirname "$0")/redis-down.sh" "$DIR" >/dev/null 2>&1 || true   # stale/half-dead leftovers
rm -f "$DIR/env" "$DIR/redis.pid"

# Random ports are drawn below the kernel's ephemeral range (32768-60999 here), so that
# outgoing connections can't be holding them; "free" = no TCP socket of any state uses it.
port_free() {   # (ss from iproute2, else a bash /dev/tcp probe)
  if command -v ss >/dev/null; then ! ss -Htan "sport = :$1" | grep -q . ;
  else ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; fi
}
EPH_LO=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
[ "${EPH_LO:-0}" -gt 12000 ] || EPH_LO=32768
rand_port() { echo $(( 10000 + (RANDOM * 32768 + RANDOM) % (EPH_LO - 10000) )); }
if [ "${REDIS_AOF:-0}" = 1 ]; then PERSIST="appendonly yes
appendfsync ${REDIS_APPENDFSYNC:-everysec}"; else PERSIST="appendonly no"; fi

ok=0
for attempt in 1 2 3; do              # retry with a new port if the bind races someone
  PORT=$WANT_PORT
  if [ -z "$PORT" ]; then
    for _ in $(seq 200); do p=$(rand_port); port_free "$p" && { PORT=$p; break; }; done
  fi
  [ -n "$PORT" ] || { echo "redis-up.sh: no free port" >&2; exit 1; }
  cat >"$DIR/redis.conf" <<EOF
bind 127.0.0.1
port $PORT
protected-mode yes
unixsocket $DIR/redis.sock
unixsocketperm 700
daemonize yes
supervised no
pidfile $DIR/redis.pid
logfile $DIR/redis.log
dir $DIR
save ""
$PERSIST
databases 16
maxclients 1000
EOF
  : >"$DIR/redis.log"
  redis-server "$DIR/redis.conf"
  for _ in $(seq $((TMO*10))); do
    ours_up "$PORT" && { ok=1; break; }
    grep -q 'aborting' "$DIR/redis.log" && break      # e.g. "Failed listening on port ... aborting"
    sleep 0.1
  done
  [ "$ok" = 1 ] && break
  "$(dirname "$0")/redis-down.sh" "$DIR" >/dev/null 2>&1 || true
  [ -z "$WANT_PORT" ] || break
done
[ "$ok" = 1 ] || { echo "redis-up.sh: redis did not answer on 127.0.0.1:$PORT" >&2; tail -20 "$DIR/redis.log" >&2; exit 1; }
cat >"$DIR/env" <<EOF
export REDIS_HOST=127.0.0.1
export REDIS_PORT=$PORT
export REDIS_URL=redis://127.0.0.1:$PORT/0
export REDIS_SOCKET=$DIR/redis.sock
export REDIS_PID=$(cat "$DIR/redis.pid")
EOF
cat "$DIR/env"
