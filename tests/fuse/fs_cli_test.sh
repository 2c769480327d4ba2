#!/usr/bin/env bash
# `folio fs` driven as a user would: bad input (one line each, exit 2 or 1, nothing mounted or
# written), format on a dir: and a dev: store, mount, real operations through the mount
# (directories, files of many sizes written and read back, rename, hard and symbolic links,
# chmod, truncate, xattrs, sparse files, a second mount refused), .stats, umount, remount and
# byte compare, status, fsck, gc.
#
# Usage: fs_cli_test.sh FOLIO_BIN
# Exit 77 (skipped) only when /dev/fuse does not exist. Ends with "N passed, N failed".
set -uo pipefail

. "$(dirname "$0")/fuse_test_lib.sh"
require_fuse "the FUSE tests"

FOLIO=$1
T=$(mktemp -d /tmp/folio-fs-test.XXXXXX)
MOUNTER=""

cleanup() {
  for m in $(awk -v t="$T" '$2 ~ "^"t {print $2}' /proc/mounts | sort -r); do
    umount -l "$m" 2>/dev/null
  done
  [ -n "$MOUNTER" ] && kill -9 "$MOUNTER" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT


# expect_error CODE PATTERN ARGS...: `folio fs ARGS` exits CODE with one stderr line matching
# PATTERN.
expect_error() {
  local code=$1 pattern=$2
  shift 2
  local err rc
  err=$("$FOLIO" fs "$@" 2>&1 >/dev/null)
  rc=$?
  if [ "$rc" -ne "$code" ]; then echo "  exit $rc, want $code: $err"; return 1; fi
  if [ "$(printf '%s\n' "$err" | wc -l)" -ne 1 ]; then echo "  not one line: $err"; return 1; fi
  if ! printf '%s' "$err" | grep -q -- "$pattern"; then echo "  '$err' !~ $pattern"; return 1; fi
  echo "  $err"
}

# workload DIR: real operations through the mount; writes DIR's expected checksums to
# $T/expected.sha (relative paths).
workload() {
  local d=$1
  set -e
  mkdir -p "$d/a/b/c" "$d/other"
  for i in $(seq 1 40); do head -c $((i * 997)) /dev/urandom >"$d/a/small$i"; done
  head -c $((3 << 20)) /dev/urandom >"$d/a/b/medium"
  dd if=/dev/urandom of="$d/a/b/c/large" bs=1M count=24 status=none
  cp "$d/a/b/medium" "$d/other/copy"
  mv "$d/a/small1" "$d/other/moved"
  ln "$d/a/small2" "$d/other/hardlink"
  ln -s ../a/small3 "$d/other/symlink"
  chmod 0600 "$d/a/small4"
  truncate -s 5000 "$d/a/small5"
  truncate -s 100000 "$d/a/small6"
  printf 'appended' >>"$d/a/small7"
  dd if=/dev/urandom of="$d/a/b/c/large" bs=4k count=3 seek=1000 conv=notrunc status=none
  truncate -s 1G "$d/sparse"
  printf 'end' | dd of="$d/sparse" bs=1 seek=$(((1 << 30) - 3)) conv=notrunc status=none
  rm "$d/a/small8"
  mkdir "$d/gone" && rmdir "$d/gone"
  if command -v setfattr >/dev/null; then setfattr -n user.color -v blue "$d/a/small9"; fi
  (cd "$d" && find . -path ./.stats -prune -o -type f -print | sort | xargs sha256sum) >"$T/expected.sha"
  set +e
}

# verify DIR: the checksums, links, modes and xattrs the workload left.
verify() {
  local d=$1
  (cd "$d" && sha256sum --quiet -c "$T/expected.sha") || return 1
  [ "$(stat -c %h "$d/a/small2")" = 2 ] || { echo "  link count"; return 1; }
  [ "$(readlink "$d/other/symlink")" = ../a/small3 ] || { echo "  symlink"; return 1; }
  cmp -s "$d/other/symlink" "$d/a/small3" || { echo "  symlink target"; return 1; }
  [ "$(stat -c %a "$d/a/small4")" = 600 ] || { echo "  mode"; return 1; }
  [ "$(stat -c %s "$d/sparse")" = $((1 << 30)) ] || { echo "  sparse size"; return 1; }
  [ ! -e "$d/a/small8" ] && [ ! -e "$d/gone" ] || { echo "  removed names exist"; return 1; }
  if command -v getfattr >/dev/null; then
    [ "$(getfattr --only-values -n user.color "$d/a/small9")" = blue ] || { echo "  xattr"; return 1; }
  fi
  # 40 small files, one moved away, one removed, and directory b.
  [ "$(ls "$d/a" | wc -l)" = 39 ] || { echo "  entries in a: $(ls "$d/a" | wc -l)"; return 1; }
}

mkdir -p "$T/mnt" "$T/stores"
META=sqlite:$T/meta.db

# ---- Bad input: one line, exit 2 (or 1), nothing mounted, nothing written ----------------
echo "== bad input"
mkdir -p "$T/mnt/full" "$T/mnt/bad" && touch "$T/mnt/full/x"
check "unknown metadata scheme" expect_error 2 "bogus://x" status "bogus://x"
check "status of a database that does not exist" expect_error 2 "no Folio FS volume" \
  status "sqlite:$T/absent.db"
check "nothing was created by it" test ! -e "$T/absent.db"
check "bad block size" expect_error 2 "block-size .*power of two" format "$META" vol \
  --storage "dir:$T/stores/d" --block-size 3000
check "bad volume name" expect_error 2 "volume name" format "$META" "a/b" --storage "dir:$T/stores/d"
check "bad store URL" expect_error 2 "bogus:x" format "$META" vol --storage "bogus:x"
check "format wrote nothing on bad input" test ! -e "$T/meta.db"
check "missing --storage" expect_error 2 "storage" format "$META" vol
check "unknown mount option" expect_error 2 "unknown mount option" mount "$META" "$T/mnt/bad" -o bogus
check "bad meta_sync" expect_error 2 "meta_sync=each" mount "$META" "$T/mnt/bad" -o meta_sync=never
check "bad meta_commit" expect_error 2 "seconds from 0.1 to 3600" mount "$META" "$T/mnt/bad" -o meta_sync=fsync,meta_commit=0
check "bad meta_cache" expect_error 2 "meta_cache=on (the default) or meta_cache=off" mount "$META" "$T/mnt/bad" -o meta_cache=maybe
check "bad readahead" expect_error 2 "readahead 1K: give whole 4K pages from 64K to 1G" mount "$META" "$T/mnt/bad" -o readahead=1K
check "readahead not a size" expect_error 2 "readahead lots: not a size" mount "$META" "$T/mnt/bad" -o readahead=lots
check "bad poll_us" expect_error 2 "poll_us=-5: give microseconds from 0 (never poll) to 100000" mount "$META" "$T/mnt/bad" -o poll_us=-5
check "poll_us too long" expect_error 2 "poll_us=100001: give microseconds" mount "$META" "$T/mnt/bad" -o poll_us=100001
check "umount of a non-mount" expect_error 2 "not a FUSE mount" umount "$T/mnt/bad"

echo "== format"
check "format on a dir: store" "$FOLIO" fs format "$META" vol --storage "dir:$T/stores/d"
check "format refuses an existing volume" expect_error 2 "already holds volume 'vol'.*--force" \
  format "$META" vol --storage "dir:$T/stores/d"
check "mount of an unformatted database" expect_error 2 "no Folio FS volume" \
  mount "sqlite:$T/empty.db" "$T/mnt/bad"
check "missing mount point" expect_error 2 "no such directory" mount "$META" "$T/mnt/absent"
check "mount point not empty" expect_error 2 "not empty" mount "$META" "$T/mnt/full"
check "nothing left mounted" bash -c "! grep -q '$T' /proc/mounts"
check "no session left behind by the failed mounts" bash -c \
  "'$FOLIO' fs status --json '$META' | python3 -c 'import json,sys; assert json.load(sys.stdin)[\"sessions\"] == []'"

# ---- mount, workload, .stats, a second mount refused, umount, remount, compare ----------
run_volume() {  # run_volume LABEL META [MOUNT ARGS...]
  local label=$1 meta=$2
  shift 2
  local M=$T/mnt/$label
  echo "== $label: mount and use"
  if ! start_mount "$meta" "$M" "$T/$label.log" --cache 128M "$@"; then
    fail "$label: mounted"
    return
  fi
  ok "$label: mounted"
  check "$label: workload through the mount" workload "$M"
  check "$label: reads back through the mount" verify "$M"
  mkdir -p "$T/mnt/$label-second"
  # Refused by the session table (dir:) or, first, by the dev: store's device lock.
  check "$label: a second read-write mount is refused" expect_error 1 "already mounted\|in use by process" \
    mount "$meta" "$T/mnt/$label-second"
  # A repair would rewrite what the mount is changing (and caching): refused, in one line.
  check "$label: fsck --repair of the mounted volume is refused" expect_error 1 \
    "unmount it before fsck --repair\|in use by process" fsck --repair "$meta"
  check "$label: .stats is JSON with the core's counters" python3 - "$M/.stats" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["fuse_requests"]["write"]["requests"] > 0, j.get("fuse_requests")
# Orders with any folio or counter (fs_stats.cc lists the non-empty ones).
assert j["page_cache"]["orders"] and all("order" in o for o in j["page_cache"]["orders"])
assert j["meta_ops"]["ops"], j["meta_ops"]
# An unshared read-write mount answers lookups from its record cache.
assert j["meta_ops"]["cache"]["enabled"] and j["meta_ops"]["cache"]["reads"] > 0, j["meta_ops"]["cache"]
print("  .stats:", j["volume"], "files", j["files"], "store", j.get("store"))
EOF
  check "$label: .stats is not listed" bash -c "! ls -a '$M' | grep -qx .stats"
  check "$label: umount commits and waits" stop_mount "$M"
  check "$label: mount gone" bash -c "! grep -q ' $M ' /proc/mounts"
  check "$label: fsck clean after umount" "$FOLIO" fs fsck "$meta"
  if start_mount "$meta" "$M" "$T/$label-2.log" --cache 64M "$@"; then
    check "$label: everything is there after a remount" verify "$M"
    rm -rf "$M/a/b"
    check "$label: umount after removing a tree" stop_mount "$M"
  else
    fail "$label: remounted"
  fi
  check "$label: fsck clean after the removal" "$FOLIO" fs fsck "$meta"
  check "$label: status shows no session" bash -c \
    "'$FOLIO' fs status --json '$meta' | python3 -c 'import json,sys; j=json.load(sys.stdin); assert j[\"sessions\"] == [], j; print(\"  pending deletions\", j[\"pending_deletions\"])'"
  check "$label: gc dry run finds nothing leaked" bash -c \
    "'$FOLIO' fs gc --json '$meta' | python3 -c 'import json,sys; j=json.load(sys.stdin); assert j[\"leaked\"] == 0, j; print(\"  objects\", j[\"objects\"])'"
}

run_volume dir "$META"

META2=sqlite:$T/meta2.db
truncate -s 512M "$T/stores/dev.img"
check "format on a dev: store" "$FOLIO" fs format "$META2" devvol --storage "dev:file:$T/stores/dev.img" \
  --block-size 1M --deletion-grace 0
# The dev: volume runs with the metadata synced at fsync and every 5 s (as ext4), not per op,
# a readahead window of its own, and a mount that never polls for requests (poll_us=0).
run_volume dev "$META2" -o meta_sync=fsync,readahead=4M,poll_us=0

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
