#!/usr/bin/env python3
# Usage: bench/direct-sync-cost.py [DIR] [FILES ...]   (default DIR /tmp, FILES 1 4 16)
#
# What making a batch of freshly written 4 MiB block files durable costs on this disk, the way
# the dir: store writes them: each file written with O_DIRECT under a temporary name and renamed
# (a put with PutSync::kDeferred), then the batch synced. For each batch size it times, over 20
# batches, (a) an fsync of every file and then of the directory (the store's kSync) and (b) one
# syncfs of the file system, and prints the median and range in ms. Everything it writes goes
# under DIR/direct-sync-cost-PID and is removed at the end.
#
# docs/fs.md ("seqwrite-1m") quotes its output: the sync of a batch costs about the same either
# way and grows with the bytes written since the last one (the VM's disk writes them out at the
# flush), so fewer, larger syncs save nothing.
import ctypes
import mmap
import os
import shutil
import statistics
import sys
import time

BLOCK = 4 << 20
ROUNDS = 20
libc = ctypes.CDLL("libc.so.6", use_errno=True)


def fsync_path(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def batch(d, tag, files, buf, mode):
    names = []
    for j in range(files):
        tmp, final = f"{d}/.tmp{tag}_{j}", f"{d}/obj{tag}_{j}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_DIRECT, 0o644)
        try:
            os.write(fd, buf)
        finally:
            os.close(fd)
        os.rename(tmp, final)
        names.append(final)
    t0 = time.perf_counter()
    if mode == "fsync":
        for name in names:
            fsync_path(name)
        fsync_path(d)
    else:
        fd = os.open(d, os.O_RDONLY)
        try:
            if libc.syncfs(fd) != 0:
                raise OSError(ctypes.get_errno(), "syncfs " + d)
        finally:
            os.close(fd)
    return (time.perf_counter() - t0) * 1000


def main():
    args = sys.argv[1:]
    base = args.pop(0) if args and not args[0].isdigit() else "/tmp"
    sizes = [int(a) for a in args] or [1, 4, 16]
    if not os.path.isdir(base):
        print(f"direct-sync-cost: {base} is not a directory (give an existing DIR on the disk "
              "to measure)", file=sys.stderr)
        return 2
    d = os.path.join(base, f"direct-sync-cost-{os.getpid()}")
    os.mkdir(d)
    buf = mmap.mmap(-1, BLOCK)  # page aligned, as O_DIRECT needs
    buf.write(os.urandom(BLOCK))
    try:
        print(f"{'files':>5} {'sync':>7} {'median ms':>10} {'min':>7} {'max':>7}")
        for files in sizes:
            for mode in ("fsync", "syncfs", "fsync", "syncfs"):
                ts = [batch(d, f"{mode}{r}", files, buf, mode) for r in range(ROUNDS)]
                print(f"{files:>5} {mode:>7} {statistics.median(ts):>10.1f} {min(ts):>7.1f} "
                      f"{max(ts):>7.1f}", flush=True)
                for name in os.listdir(d):
                    os.remove(os.path.join(d, name))
    except OSError as e:
        print(f"direct-sync-cost: {e} (O_DIRECT needs a file system that supports it; give "
              "another DIR)", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
