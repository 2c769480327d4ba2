#!/usr/bin/env python3
# Usage: bench/fs-md-probe.py MOUNTPOINT [ENTRIES] (a mounted Folio FS; reads its .stats).
# Per-op FUSE requests, metadata transactions and time on a mounted Folio FS (mdtest order:
# create, stat, open+close, rename, unlink in one directory, 1 thread, the bench's 1.1 s waits).
import json, os, sys, time
mnt, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 3000
def stats():
    with open(os.path.join(mnt, ".stats")) as f:
        return json.load(f)
def delta(a, b):
    fr = {k: v["requests"] - a["fuse_requests"].get(k, {"requests": 0})["requests"]
          for k, v in b["fuse_requests"].items()}
    mo = {k: v["count"] - a["meta_ops"]["ops"].get(k, {"count": 0})["count"]
          for k, v in b["meta_ops"]["ops"].items()}
    return ({k: round(v / n, 2) for k, v in fr.items() if v}, {k: round(v / n, 2) for k, v in mo.items() if v})
d = os.path.join(mnt, "probe%d" % os.getpid()); os.mkdir(d)
def phase(name, fn, wait=True):
    if wait: time.sleep(1.1)
    a = stats(); t = time.time()
    for i in range(n): fn(i)
    el = time.time() - t; b = stats()
    fr, mo = delta(a, b)
    print("%-11s %7.0f ops/s  fuse/op %s  meta/op %s" % (name, n / el, fr, mo)); sys.stdout.flush()
phase("create", lambda i: os.close(os.open("%s/f%d" % (d, i), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)), wait=False)
phase("stat", lambda i: os.stat("%s/f%d" % (d, i)))
phase("open+close", lambda i: os.close(os.open("%s/f%d" % (d, i), os.O_RDONLY)))
phase("rename", lambda i: os.rename("%s/f%d" % (d, i), "%s/r%d" % (d, i)))
phase("unlink", lambda i: os.unlink("%s/r%d" % (d, i)))
os.rmdir(d)
