#!/usr/bin/env bash
# ctest-service.sh up|down NAME DIR -- the CTest fixture behind tests that need a server
# (cmake/folio_services.cmake): NAME is a server with scripts NAME-up.sh / NAME-down.sh beside
# this one (redis, pg, ceph); DIR holds its state and DIR/env.
#
# up:   starts NAME with NAME-up.sh DIR (the seconds it took go to DIR/up-seconds and the log).
#       When it cannot be started: in CI (CI=true, as .ci/run sets) as root, the fixture fails,
#       and so every test that needs it (CTest does not run them). Otherwise (not root, or not in
#       CI: the scripts need root and the packages of scripts/install-deps.sh) it writes the
#       reason to DIR/unavailable and exits 0: the tests then skip, naming it.
# down: stops NAME and removes DIR.
set -uo pipefail
[ $# -eq 3 ] || { echo "usage: $0 up|down NAME DIR" >&2; exit 2; }
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ACTION=$1; NAME=$2; DIR=$3
[ -x "$HERE/$NAME-up.sh" ] && [ -x "$HERE/$NAME-down.sh" ] \
  || { echo "ctest-service.sh: unknown service $NAME (no $HERE/$NAME-up.sh)" >&2; exit 2; }
required() { [ "${CI:-}" = true ] && [ "$(id -u)" -eq 0 ]; }
case $ACTION in
  up)
    mkdir -p "$(dirname "$DIR")"; chmod 755 "$(dirname "$DIR")"
    rm -f "$DIR/unavailable"
    start=$(date +%s.%N)
    if out=$("$HERE/$NAME-up.sh" "$DIR" 2>&1); then
      awk "BEGIN{printf \"%.1f\n\", $(date +%s.%N)-$start}" >"$DIR/up-seconds"
      echo "$NAME up in $(cat "$DIR/up-seconds") s:"; cat "$DIR/env"; exit 0
    fi
    echo "$out" >&2
    reason="$NAME could not be started by scripts/services/$NAME-up.sh: $(echo "$out" | grep -v '^\[' | tail -n1)"
    if required; then
      echo "$reason (CI=true as root: the tests needing $NAME fail; scripts/install-deps.sh installs the servers)" >&2
      exit 1
    fi
    mkdir -p "$DIR"; echo "$reason (not in CI as root: tests needing $NAME skip)" >"$DIR/unavailable"
    echo "tests needing $NAME will skip: $(cat "$DIR/unavailable")"; exit 0 ;;
  down)
    [ -d "$DIR" ] || exit 0
    "$HERE/$NAME-down.sh" "$DIR" --purge >/dev/null 2>&1; rc=$?   # also a half-started one
    [ -f "$DIR/unavailable" ] && rc=0
    rm -rf -- "$DIR"
    rmdir -- "$(dirname "$DIR")" 2>/dev/null   # the last server of this build tree
    exit $rc ;;
  *) echo "usage: $0 up|down NAME DIR" >&2; exit 2 ;;
esac
