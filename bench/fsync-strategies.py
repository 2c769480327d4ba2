#!/usr/bin/env python3
# Usage: bench/fsync-strategies.py [FILES] (writes FILES x 4 MiB under /tmp, removed after).
# Which way of making N freshly written 4 MiB block files durable is fastest on this disk?
import os, sys, time, ctypes, threading, shutil
libc = ctypes.CDLL("libc.so.6", use_errno=True)
N = int(sys.argv[1]) if len(sys.argv) > 1 else 32
BS = 4 << 20
data = os.urandom(BS)
root = "/tmp/fsync-bench-%d" % os.getpid()

def fsync_path(p, flags=os.O_RDONLY):
    fd = os.open(p, flags); os.fsync(fd); os.close(fd)

def put(d, i, durable):
    tmp = "%s/.tmp.%d" % (d, i); final = "%s/b%d" % (d, i)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, data)
    if durable: os.fsync(fd)
    os.close(fd)
    os.rename(tmp, final)
    if durable: fsync_path(d, os.O_RDONLY | os.O_DIRECTORY)
    return final

def par(fn, items, threads):
    it = iter(items); lock = threading.Lock()
    def w():
        while True:
            with lock:
                x = next(it, None)
            if x is None: return
            fn(x)
    ts = [threading.Thread(target=w) for _ in range(threads)]
    [t.start() for t in ts]; [t.join() for t in ts]

def run(name, fn):
    d = root + "/" + name; os.makedirs(d); fsync_path(root, os.O_RDONLY | os.O_DIRECTORY)
    t = time.time(); fn(d); el = time.time() - t
    print("%-28s %6.0f MiB/s (%.2f s)" % (name, N * 4 / el, el)); sys.stdout.flush()
    shutil.rmtree(d)

os.makedirs(root)
try:
    for rep in range(2):
        run("durable-serial", lambda d: [put(d, i, True) for i in range(N)])
        run("durable-8threads", lambda d: par(lambda i: put(d, i, True), range(N), 8))
        def deferred(d, threads):
            files = []
            par(lambda i: files.append(put(d, i, False)), range(N), 8)
            par(fsync_path, files, threads)
            fsync_path(d, os.O_RDONLY | os.O_DIRECTORY)
        run("deferred-fsync-serial", lambda d: deferred(d, 1))
        run("deferred-fsync-8threads", lambda d: deferred(d, 8))
        def sfs(d):
            par(lambda i: put(d, i, False), range(N), 8)
            fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
            if libc.syncfs(fd) != 0: raise OSError(ctypes.get_errno(), "syncfs")
            os.close(fd)
        run("deferred-syncfs", sfs)
finally:
    shutil.rmtree(root, ignore_errors=True)
