#!/usr/bin/env python3
# Usage: bench/soak-probe.py [--seconds 110] [--threads 4] [--sync each] [--folio PATH] [--dir DIR]
# Mixed soak of one mount: formats a fresh volume in a temp directory (under /tmp or DIR, removed
# after), mounts it with -o meta_sync=SYNC and runs THREADS threads of random create+write (1-64
# KiB), overwrite (pwrite of a random range), truncate, rename, unlink and read back (checked) on
# files in 3 directories, each thread on its own names. Every 10 s: ops and ops/s, meta.db-wal
# bytes, .stats wal_restarts, the mount daemon's RSS and open fds, the store's bytes (blocks dir)
# and the live bytes (files in the mount). At the end every file is checked against an in-memory
# model of its content, on the mount and again after unmount + remount (exit 1 on a mismatch or
# an op error).
import argparse, json, os, random, sys, threading, time
from probe_volume import ProbeVolume
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ap = argparse.ArgumentParser(description="mixed-op soak of one fresh Folio FS mount")
ap.add_argument("--seconds", type=float, default=110)
ap.add_argument("--threads", type=int, default=4)
ap.add_argument("--sync", default="each", choices=["each", "fsync"], help="passed as -o meta_sync=SYNC")
ap.add_argument("--folio", default=os.path.join(root, "build/release/folio"))
ap.add_argument("--dir", default="/tmp", help="where to make the temp directory")
a = ap.parse_args()
if a.seconds <= 0 or a.threads < 1: ap.error("--seconds and --threads must be positive")
if not os.access(a.folio, os.X_OK): ap.error("no folio binary at %s (build it or pass --folio)" % a.folio)
DIRS, SLOTS, KIB = 3, 96, 1024  # SLOTS names per thread, spread over the DIRS directories
vol = ProbeVolume(a.folio, a.dir, "soak-probe", a.sync)
top, mnt, wal = vol.top, vol.mnt, vol.wal
def rss_mb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            return int(next(l for l in f if l.startswith("VmRSS:")).split()[1]) / 1024
    except (OSError, TypeError, StopIteration): return -1
def nfds(pid):
    try: return len(os.listdir("/proc/%d/fd" % pid))
    except (OSError, TypeError): return -1
def tree_bytes(d):
    n = 0
    for dp, _, fns in os.walk(d):
        for fn in fns:
            try: n += os.lstat(os.path.join(dp, fn)).st_size
            except FileNotFoundError: pass  # removed under us
    return n
def restarts():
    with open(mnt + "/.stats") as f:
        return json.load(f)["meta_ops"]["wal_restarts"]
model, lock, stop = {}, threading.Lock(), threading.Event()  # model: name -> expected bytes
ops, errs = [0] * a.threads, []
def readall(p):
    fd = os.open(p, os.O_RDONLY)
    try:
        b = []
        while True:
            c = os.read(fd, 1 << 20)
            if not c: return b"".join(b)
            b.append(c)
    finally: os.close(fd)
def write(p, data, flags, off=0):
    fd = os.open(p, flags, 0o644)
    try:
        while data:
            n = os.pwrite(fd, data, off); data = data[n:]; off += n
    finally: os.close(fd)
def worker(t):
    rng = random.Random(t)
    free = ["d%d/t%d_%d" % (i % DIRS, t, i) for i in range(SLOTS)]; live = []
    while not stop.is_set():
        w = [20 if len(live) < SLOTS * 0.6 else 3, 25, 10, 10, 10, 25] if free else [0, 25, 10, 10, 15, 25]
        op = rng.choices(["create", "overwrite", "truncate", "rename", "unlink", "read"], w)[0] if live else "create"
        name = rng.choice(live) if op != "create" else free[rng.randrange(len(free))]
        p = mnt + "/" + name
        try:
            if op == "create":
                data = rng.randbytes(rng.randint(1, 64 * KIB))
                write(p, data, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
                with lock: model[name] = data
                free.remove(name); live.append(name)
            elif op == "overwrite":
                cur = model[name]; off = rng.randint(0, len(cur) + 4 * KIB); buf = rng.randbytes(rng.randint(1, 16 * KIB))
                write(p, buf, os.O_WRONLY, off)
                with lock: model[name] = cur[:off].ljust(off, b"\0") + buf + cur[off + len(buf):]
            elif op == "truncate":
                cur = model[name]; n = rng.randint(0, len(cur) + 8 * KIB)
                os.truncate(p, n)
                with lock: model[name] = cur[:n].ljust(n, b"\0")
            elif op == "rename":  # to a free name, or over another of this thread's files
                over = len(live) > 1 and (not free or rng.random() < 0.3)
                dst = rng.choice([x for x in live if x != name]) if over else rng.choice(free)
                os.rename(p, mnt + "/" + dst)
                with lock: model[dst] = model.pop(name)
                live.remove(name); free.append(name)
                if not over: free.remove(dst); live.append(dst)
            elif op == "unlink":
                os.unlink(p)
                with lock: del model[name]
                live.remove(name); free.append(name)
            else:
                got = readall(p)
                if got != model[name]: raise OSError("read back %d bytes, expected %d, differ" % (len(got), len(model[name])))
        except OSError as e:  # the file's state is unknown now: drop the name
            with lock:
                errs.append("thread %d %s %s: %s" % (t, op, name, e)); model.pop(name, None)
            print("error: %s" % errs[-1]); sys.stdout.flush()
            for l in (live, free):
                if name in l: l.remove(name)
        ops[t] += 1
def verify(tag):
    seen = sorted("d%d/%s" % (i, f) for i in range(DIRS) for f in os.listdir("%s/d%d" % (mnt, i)))
    if seen != sorted(model):
        extra, missing = sorted(set(seen) - set(model)), sorted(set(model) - set(seen))
        sys.exit("verify (%s): mismatch: unexpected %s, missing %s" % (tag, extra[:5], missing[:5]))
    for name in sorted(model):
        got = readall(mnt + "/" + name)
        if got != model[name]:
            i = next((k for k in range(min(len(got), len(model[name]))) if got[k] != model[name][k]), min(len(got), len(model[name])))
            sys.exit("verify (%s): mismatch: %s: %d bytes, expected %d, first difference at %d" % (tag, name, len(got), len(model[name]), i))
    print("verify: %d files ok (%s)" % (len(model), tag)); sys.stdout.flush()
ok = False; ts = []
try:
    vol.format()
    pid = vol.mount()
    for i in range(DIRS): os.mkdir("%s/d%d" % (mnt, i))
    print("soak-probe: %s, %d threads, %.0f s, meta_sync=%s, daemon pid %s, rss %.1f MB, fds %d" %
          (top, a.threads, a.seconds, a.sync, pid, rss_mb(pid), nfds(pid))); sys.stdout.flush()
    ts = [threading.Thread(target=worker, args=(t,), daemon=True) for t in range(a.threads)]
    t0 = time.time(); last_t, last_n, samples = t0, 0, []
    for x in ts: x.start()
    while True:
        el = time.time() - t0
        time.sleep(max(0, min(10 * (int(el // 10) + 1), a.seconds) - el))
        now = time.time(); n = sum(ops)
        s = (now - t0, n, (n - last_n) / (now - last_t), os.path.getsize(wal) if os.path.exists(wal) else 0,
             restarts(), rss_mb(pid), nfds(pid), tree_bytes(top + "/blocks"), tree_bytes(mnt))
        samples.append(s); last_t, last_n = now, n
        print("%5.0f s  ops %7d  %5.0f ops/s  wal %6.2f MB  wal_restarts %4d  rss %6.1f MB  fds %4d  store %7.2f MB  live %7.2f MB" %
              (s[0], s[1], s[2], s[3] / 1e6, s[4], s[5], s[6], s[7] / 1e6, s[8] / 1e6)); sys.stdout.flush()
        if not all(x.is_alive() for x in ts): sys.exit("soak-probe: a worker thread died")
        if now - t0 >= a.seconds - 0.05: break
    stop.set()
    for x in ts: x.join()
    f, l = samples[0], samples[-1]
    print("summary: %d ops (%.0f ops/s), %d errors, wal max %.2f MB, final wal_restarts %d, rss first %.1f MB last %.1f MB max %.1f MB, "
          "fds first %d last %d, store %.2f MB vs live %.2f MB (%d files)" %
          (l[1], l[1] / l[0], len(errs), max(x[3] for x in samples) / 1e6, restarts(), f[5], l[5], max(x[5] for x in samples),
           f[6], l[6], tree_bytes(top + "/blocks") / 1e6, tree_bytes(mnt) / 1e6, len(model))); sys.stdout.flush()
    verify("mounted")
    vol.umount()
    pid = vol.mount()
    verify("after remount")
    if errs: sys.exit("soak-probe: %d op errors, the first: %s" % (len(errs), errs[0]))
    ok = True
finally:
    stop.set()
    for x in ts: x.join(10)
    vol.close(ok)
