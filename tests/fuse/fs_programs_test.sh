#!/usr/bin/env bash
# Real programs on a Folio FS mount, and kill -9 of the mount under an fsyncing writer:
#   git      init, add and commit a few thousand files, a second commit, git fsck --full,
#            clone from it (on the mount), the clone's checkout equals the source
#   tar      extract an archive (directories, modes, times, symlinks, hard links, a sparse
#            file) and diff -r --no-dereference against the source, modes / sizes / mtimes /
#            link targets / link counts compared too
#   sqlite3  transactions from two processes at once on one database (rollback journal and
#            WAL), every row present, PRAGMA integrity_check ok
#   gcc      a C program (pwrite / pread, shared writable mmaps, one of an O_APPEND fd, rename
#            over a file) compiled on the mount, run from the mount
#   a user   nobody (setpriv) on the allow_other mount: EACCES on a closed directory and files,
#            a supplementary group's read, sticky-directory EPERM, setgid inheritance
#   fio      verify=crc32c, psync and io_uring
#   cp -a    a system directory onto the mount and back, diff -r --no-dereference both ways
#   kill -9  of the mount during fio fsync=1 with its write log: the dead mount cleared,
#            fsck clean, remount, everything fsynced present (fio verify_only)
# and after each remount `folio fs fsck` is clean.
#
# Usage: fs_programs_test.sh FOLIO_BIN [big]
#   big: the larger variant (more files, /usr/share/doc whole, bigger fio jobs; label slow).
# Exit 77 (skipped) only when /dev/fuse does not exist. Ends with "N passed, N failed".
set -uo pipefail

. "$(dirname "$0")/fuse_test_lib.sh"
require_fuse "the FUSE tests"

FOLIO=$1
BIG=${2:-}
for tool in git tar sqlite3 gcc fio diff python3; do
  if ! command -v "$tool" >/dev/null; then
    echo "FAIL: $tool is not installed (scripts/install-deps.sh installs it)"
    exit 1
  fi
done

if [ "$BIG" = big ]; then
  GIT_FILES=20000 COPY_SRC=/usr/share/doc FIO_SIZE=256M
else
  GIT_FILES=3000 COPY_SRC=/usr/share/doc/git FIO_SIZE=48M
fi

T=$(mktemp -d /tmp/folio-fs-programs.XXXXXX)
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

fsck_clean() { "$FOLIO" fs fsck "$META" | tail -n 1 | sed 's/^/  /'; return "${PIPESTATUS[0]}"; }

# ---- git ---------------------------------------------------------------------------------
# make_tree DIR N: N small text files in N/50 directories (git objects of many sizes).
make_tree() {
  python3 - "$1" "$2" <<'EOF'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(10)
for i in range(n):
    d = os.path.join(root, "d%03d" % (i // 50))
    os.makedirs(d, exist_ok=True)
    words = " ".join("w%d" % rng.randrange(100000) for _ in range(rng.randrange(1, 400)))
    with open(os.path.join(d, "f%05d.txt" % i), "w") as f:
        f.write("file %d\n%s\n" % (i, words))
EOF
}

git_round_trip() {
  local repo=$1/repo clone=$1/clone
  local g=(git -c user.name=folio -c user.email=folio@example.invalid -c init.defaultBranch=main
           -c safe.directory='*' -c gc.auto=0)
  mkdir -p "$repo" || return 1
  "${g[@]}" -C "$repo" init -q || return 1
  make_tree "$repo" "$GIT_FILES" || return 1
  "${g[@]}" -C "$repo" add -A || return 1
  "${g[@]}" -C "$repo" commit -q -m "$GIT_FILES files" || return 1
  # A second commit: edits, a rename, a deletion, an executable.
  for f in "$repo"/d000/f0000[0-4].txt; do echo edited >>"$f"; done
  "${g[@]}" -C "$repo" mv d001/f00050.txt d001/renamed.txt || return 1
  "${g[@]}" -C "$repo" rm -q d002/f00100.txt || return 1
  printf '#!/bin/sh\necho hi\n' >"$repo/run.sh" && chmod 755 "$repo/run.sh"
  "${g[@]}" -C "$repo" add -A && "${g[@]}" -C "$repo" commit -q -m second || return 1
  "${g[@]}" -C "$repo" fsck --full --strict 2>&1 | sed 's/^/  /'
  [ "${PIPESTATUS[0]}" -eq 0 ] || { echo "  git fsck failed"; return 1; }
  [ "$("${g[@]}" -C "$repo" status --porcelain | wc -l)" -eq 0 ] || { echo "  dirty tree"; return 1; }
  "${g[@]}" clone -q --no-local "$repo" "$clone" || return 1
  "${g[@]}" -C "$clone" fsck --full --strict || return 1
  diff -r --no-dereference -x .git "$repo" "$clone" || return 1
  [ "$(git -C "$clone" rev-list --count HEAD)" = 2 ] || { echo "  commits in the clone"; return 1; }
  # gc packs the objects (a big sequential write and many unlinks), then everything again.
  "${g[@]}" -C "$repo" gc -q && "${g[@]}" -C "$repo" fsck --full --strict 2>/dev/null
}

# ---- tar ---------------------------------------------------------------------------------
# make_tar_source DIR: a tree with what tar preserves: modes, mtimes, symlinks (dangling too),
# hard links, an empty directory, a sparse file, long names.
make_tar_source() {
  local s=$1
  set -e
  mkdir -p "$s/tree/empty" "$s/tree/deep/a/b/c/d/e/f"
  cp -a /usr/share/perl5 "$s/tree/perl5" 2>/dev/null || cp -a /usr/share/doc/tar "$s/tree/perl5"
  head -c 300000 /dev/urandom >"$s/tree/random.bin"
  ln "$s/tree/random.bin" "$s/tree/deep/hardlink.bin"
  ln -s ../random.bin "$s/tree/deep/rel-symlink"
  ln -s /nonexistent/target "$s/tree/dangling"
  truncate -s 20M "$s/tree/sparse" && printf 'mid' | dd of="$s/tree/sparse" bs=1 seek=10000000 conv=notrunc status=none
  printf 'x' >"$s/tree/deep/a/b/c/d/e/f/$(printf 'n%.0s' $(seq 1 200))"
  chmod 0751 "$s/tree/deep" && chmod 0600 "$s/tree/random.bin" && chmod 4755 "$s/tree/deep/a"
  touch -d '2001-02-03 04:05:06.789' "$s/tree/deep/a/b"
  # pax keeps nanosecond mtimes (the default gnu format stores whole seconds).
  tar -C "$s" --format=posix --sparse -cf "$s/tree.tar" tree
  set +e
}

# listing DIR: one line per entry: path, type, mode, size (not for directories), mtime, link
# target, link count.
listing() {
  (cd "$1" && find . -printf '%P %y %m %T@ %l %n ' -a \( -type d -printf '-\n' -o -printf '%s\n' \) | sort)
}

tar_round_trip() {
  local dst=$1/tar
  mkdir -p "$dst" || return 1
  tar -C "$dst" --sparse -xpf "$T/src/tree.tar" || return 1
  diff -r --no-dereference "$T/src/tree" "$dst/tree" || return 1
  diff <(listing "$T/src/tree") <(listing "$dst/tree") || return 1
  # The sparse file stays sparse (blocks well under its size).
  [ "$(stat -c %b "$dst/tree/sparse")" -lt 4096 ] || { echo "  sparse file not sparse"; return 1; }
}

# ---- sqlite3 -----------------------------------------------------------------------------
# sqlite_writer DB ID N: N transactions, each inserting two rows and updating a counter.
sqlite_writer() {
  {
    echo ".timeout 60000"
    for i in $(seq 1 "$3"); do
      echo "BEGIN IMMEDIATE; INSERT INTO t(who, n, pad) VALUES ($2, $i, randomblob(300));"
      echo "INSERT INTO t(who, n, pad) VALUES ($2, -$i, randomblob(5000));"
      echo "UPDATE c SET n = n + 1; COMMIT;"
    done
  } | sqlite3 -bail "$1" >/dev/null
}

sqlite_two_writers() {  # sqlite_two_writers DB JOURNAL_MODE
  local db=$1 n=150
  sqlite3 "$db" "PRAGMA journal_mode=$2; CREATE TABLE t(id INTEGER PRIMARY KEY, who, n, pad);
                 CREATE TABLE c(n); INSERT INTO c VALUES (0);" >/dev/null || return 1
  sqlite_writer "$db" 1 $n &
  local a=$!
  sqlite_writer "$db" 2 $n &
  local b=$!
  wait $a || { echo "  writer 1 failed"; wait $b; return 1; }
  wait $b || { echo "  writer 2 failed"; return 1; }
  local got
  got=$(sqlite3 "$db" "PRAGMA integrity_check; SELECT count(*), count(DISTINCT who || ':' || n) FROM t;
                       SELECT n FROM c; PRAGMA journal_mode;" | tr '\n' ' ')
  echo "  $2: $got"
  [ "$got" = "ok $((4 * n))|$((4 * n)) $((2 * n)) $(echo "$2" | tr A-Z a-z) " ]
}

# ---- gcc ---------------------------------------------------------------------------------
gcc_build_and_run() {
  local d=$1/cprog
  mkdir -p "$d" || return 1
  cat >"$d/prog.c" <<'EOF'
/* Writes and reads through pwrite / pread and shared writable mmaps, renames over a file. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(const char *what) { perror(what); return 1; }

int main(void) {
  enum { kBytes = 3 << 20 };
  char *buf = malloc(kBytes), *back = malloc(kBytes);
  struct stat st;
  for (int i = 0; i < kBytes; ++i) buf[i] = (char)(i * 31 + (i >> 12));
  int fd = open("data.bin", O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return fail("open");
  if (pwrite(fd, buf, kBytes, 4096) != kBytes) return fail("pwrite");
  if (fsync(fd) != 0) return fail("fsync");
  char *m = mmap(NULL, kBytes + 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) return fail("mmap");
  if (memcmp(m + 4096, buf, kBytes) != 0) { fprintf(stderr, "mmap sees other bytes\n"); return 1; }
  memset(m, 'M', 4096);                 /* the hole at the front, through the mapping */
  memcpy(m + 8192, "through mmap", 12);
  if (msync(m, kBytes + 4096, MS_SYNC) != 0) return fail("msync");
  munmap(m, kBytes + 4096);
  if (pread(fd, back, 4096, 0) != 4096) return fail("pread");
  for (int i = 0; i < 4096; ++i) if (back[i] != 'M') { fprintf(stderr, "byte %d\n", i); return 1; }
  if (pread(fd, back, 12, 8192) != 12 || memcmp(back, "through mmap", 12) != 0) {
    fprintf(stderr, "mmap write not seen by read\n");
    return 1;
  }
  close(fd);
  /* A store through a mapping of an O_APPEND descriptor lands where it was made: the kernel
     writes the page back through that handle, and the write must not append. */
  fd = open("append.bin", O_RDWR | O_CREAT | O_TRUNC | O_APPEND, 0644);
  if (fd < 0) return fail("open append.bin");
  if (write(fd, buf, 8192) != 8192) return fail("write append.bin");
  m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) return fail("mmap append.bin");
  memcpy(m + 100, "stored at 100", 13);
  if (msync(m, 8192, MS_SYNC) != 0) return fail("msync append.bin");
  munmap(m, 8192);
  if (fstat(fd, &st) != 0 || st.st_size != 8192) {
    fprintf(stderr, "append.bin: %lld bytes after a store through its mapping, want 8192\n",
            (long long)st.st_size);
    return 1;
  }
  if (pread(fd, back, 13, 100) != 13 || memcmp(back, "stored at 100", 13) != 0) {
    fprintf(stderr, "append.bin: the store through the mapping is not at 100\n");
    return 1;
  }
  close(fd);
  FILE *f = fopen("new.txt", "w");
  if (!f || fputs("replaced\n", f) < 0 || fclose(f) != 0) return fail("new.txt");
  if (rename("new.txt", "data.bin") != 0) return fail("rename");
  if (stat("data.bin", &st) != 0 || st.st_size != 9) { fprintf(stderr, "rename over\n"); return 1; }
  printf("prog ok\n");
  return 0;
}
EOF
  (cd "$d" && gcc -O1 -Wall -Werror -o prog prog.c && ./prog) | sed 's/^/  /'
  [ "${PIPESTATUS[0]}" -eq 0 ] && grep -q replaced "$d/data.bin"
}

# ---- an unprivileged user ------------------------------------------------------------
# as_user UID GROUPS COMMAND...: runs COMMAND as UID with primary group UID and supplementary
# GROUPS (comma-separated, or "" for none), through the kernel's checks and then Folio's.
as_user() {
  local uid=$1 groups=$2
  shift 2
  if [ -n "$groups" ]; then
    setpriv --reuid="$uid" --regid="$uid" --groups="$groups" -- "$@"
  else
    setpriv --reuid="$uid" --regid="$uid" --clear-groups -- "$@"
  fi
}
# denied ERROR COMMAND...: COMMAND fails and its stderr names ERROR.
denied() {
  local want=$1 err
  shift
  err=$("$@" 2>&1 >/dev/null) && { echo "  allowed: $*"; return 1; }
  case "$err" in *"$want"*) return 0 ;; esac
  echo "  $*: '$err', want '$want'"
  return 1
}
unprivileged_user() {
  local d=$1/perm u=65534
  chmod 0755 "$T" || return 1  # mktemp made it 0700: the user must reach the mount
  mkdir -p "$d/closed" "$d/sticky" || return 1
  chmod 0755 "$d/closed" && chmod 1777 "$d/sticky" || return 1
  echo secret >"$d/closed/secret" && chmod 0600 "$d/closed/secret" || return 1
  echo shared >"$d/closed/group" && chown 0:4321 "$d/closed/group" && chmod 0640 "$d/closed/group" || return 1
  echo mine >"$d/sticky/root-file" || return 1
  denied "Permission denied" as_user $u "" touch "$d/closed/new" || return 1
  denied "Permission denied" as_user $u "" cat "$d/closed/secret" || return 1
  denied "Permission denied" as_user $u "" cat "$d/closed/group" || return 1
  [ "$(as_user $u 4321 cat "$d/closed/group")" = shared ] || { echo "  supplementary group not honoured"; return 1; }
  as_user $u "" sh -c "echo hi >'$d/sticky/user-file'" || return 1
  [ "$(stat -c %u:%g "$d/sticky/user-file")" = "$u:$u" ] || { echo "  owner of a user's file"; return 1; }
  denied "Operation not permitted" as_user $u "" rm -f "$d/sticky/root-file" || return 1
  denied "Operation not permitted" as_user $u "" chmod 0777 "$d/sticky/root-file" || return 1
  as_user $u "" rm "$d/sticky/user-file" || return 1
  # setgid directory: new files take its group, new directories its group and the bit.
  mkdir "$d/sgid" && chown 0:4321 "$d/sgid" && chmod 2777 "$d/sgid" || return 1
  as_user $u 4321 sh -c "touch '$d/sgid/f' && mkdir '$d/sgid/sub'" || return 1
  [ "$(stat -c %g "$d/sgid/f")" = 4321 ] && [ "$(stat -c %g:%A "$d/sgid/sub")" = "4321:drwxr-sr-x" ] ||
    { echo "  setgid inheritance: $(stat -c '%n %g %A' "$d/sgid/f" "$d/sgid/sub" | tr '\n' ' ')"; return 1; }
}

# ---- fio ---------------------------------------------------------------------------------
fio_verify() {  # fio_verify FILE ENGINE SIZE
  local out=$T/fio-$2.json
  fio --name=verify --filename="$1" --ioengine="$2" --iodepth=16 --rw=randwrite \
    --bsrange=4k-256k --size="$3" --verify=crc32c --do_verify=1 --verify_fatal=1 \
    --verify_backlog=1024 --verify_state_save=0 --output-format=json >"$out" 2>&1
  local rc=$?
  python3 - "$out" "$rc" <<'EOF'
import json, sys
text = open(sys.argv[1]).read()
rc = int(sys.argv[2])
try:
    job = json.loads(text[text.index("{"):])["jobs"][0]
except Exception:
    print(text[-2000:]); sys.exit(1)
w, r = job["write"], job["read"]
print("  %s: wrote %d KiB, verified %d KiB, error %d, rc %d" %
      (job["jobname"], w["io_kbytes"], r["io_kbytes"], job["error"], rc))
sys.exit(0 if rc == 0 and job["error"] == 0 and r["io_kbytes"] > 0 else 1)
EOF
}

# ---- kill -9 -----------------------------------------------------------------------------
# ---- the run -----------------------------------------------------------------------------
META=sqlite:$T/meta.db
M=$T/mnt
mkdir -p "$T/src" "$M"
make_tar_source "$T/src" || { echo "FAIL: could not build the tar source"; exit 1; }
"$FOLIO" fs format "$META" programs --storage "dir:$T/store" --deletion-grace 0 >/dev/null ||
  { echo "FAIL: format"; exit 1; }

echo "== programs on the mount"
if start_mount "$META" "$M" "$T/mount.log" --cache 256M; then
  check "git: $GIT_FILES files, two commits, fsck, clone, gc" git_round_trip "$M"
  check "tar: extract and diff -r --no-dereference" tar_round_trip "$M"
  check "sqlite3: two writers, rollback journal, integrity_check" sqlite_two_writers "$M/j.db" DELETE
  check "sqlite3: two writers, WAL, integrity_check" sqlite_two_writers "$M/w.db" WAL
  check "gcc: compile and run a C program on the mount" gcc_build_and_run "$M"
  check "an unprivileged user: EACCES, supplementary groups, sticky and setgid directories" \
    unprivileged_user "$M"
  check "fio verify=crc32c psync" fio_verify "$M/fio-psync" psync "$FIO_SIZE"
  check "fio verify=crc32c io_uring" fio_verify "$M/fio-uring" io_uring "$FIO_SIZE"
  check "cp -a $COPY_SRC onto the mount" cp -a "$COPY_SRC" "$M/copy"
  check "diff -r --no-dereference against the source" diff -r --no-dereference "$COPY_SRC" "$M/copy"
  check "umount" stop_mount "$M"
else
  fail "mount"
fi
check "fsck clean after the programs" fsck_clean

if start_mount "$META" "$M" "$T/mount2.log" --cache 64M; then
  check "remount: git fsck of the repository and the clone" bash -c \
    "git -c safe.directory='*' -C '$M/repo' fsck --full --strict 2>/dev/null &&
     git -c safe.directory='*' -C '$M/clone' fsck --full --strict 2>/dev/null"
  check "remount: sqlite integrity_check" bash -c \
    "[ \"\$(sqlite3 '$M/w.db' 'PRAGMA integrity_check')\" = ok ] &&
     [ \"\$(sqlite3 '$M/j.db' 'PRAGMA integrity_check')\" = ok ]"
  check "remount: the tar tree" diff -r --no-dereference "$T/src/tree" "$M/tar/tree"
  check "cp -a back off the mount" cp -a "$M/copy" "$T/copy-back"
  check "the copy back equals the source" diff -r --no-dereference "$COPY_SRC" "$T/copy-back"
  rm -rf "$M/repo" "$M/clone" "$M/copy" "$M/fio-psync" "$M/fio-uring"
  check "umount after removing trees" stop_mount "$M"
else
  fail "remount"
fi
check "fsck clean after the removals" fsck_clean

echo "== kill -9 of the mount during fio fsync=1"
mkdir -p "$T/fio-kill"
if start_mount "$META" "$M" "$T/kill.log" --cache 64M; then
  head -c 4M /dev/urandom >"$T/synced"
  dd if="$T/synced" of="$M/synced" bs=1M conv=fsync status=none
  fio_fsync_writer "$M/fsw" "$T/fio-kill" 0 16m
  wait_fio_wrote $((2 << 20)) || echo "  fio wrote nothing within 60 s (see $T/fio-kill/fio.out)"
  sleep 1
  kill -9 "$MOUNTER"
  wait "$MOUNTER" 2>/dev/null
  MOUNTER=""
  wait "$FIO_PID" 2>/dev/null
  synced_bytes=$(fsynced_bytes "$T/fio-kill")
  echo "  fio's fsyncs covered $synced_bytes bytes before the kill"
  check "folio fs umount clears the dead mount" "$FOLIO" fs umount "$M"
  check "fsck clean after kill -9" fsck_clean
  if start_mount "$META" "$M" "$T/kill2.log" --cache 64M; then
    ok "remount after kill -9 (the dead session is cleaned)"
    check "fsynced file survived kill -9" cmp "$T/synced" "$M/synced"
    check "everything fio fsynced survived kill -9 (fio verify_only)" \
      fio_verify_fsynced "$M/fsw" "$synced_bytes" 0
    check "umount after kill -9" stop_mount "$M"
  else
    fail "remount after kill -9"
  fi
  check "fsck clean at the end" fsck_clean
else
  fail "mount for kill -9"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
