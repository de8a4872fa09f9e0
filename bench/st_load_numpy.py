#!/usr/bin/env python3
"""NumPy's side of bench/st_load.sh: the same safetensors file to float64.

Usage: st_load_numpy.py FILE REPS

Prints medians over REPS runs (seconds; "cpu" the thread's CPU time):
  numpy_first <s>    mmap, the header, and every tensor with astype, on a
                     fresh mapping (its page tables filled on the way)
  numpy_astype <s>   per tensor np.frombuffer(mmap, dtype, count, offset)
                     .astype(np.float64) (BF16: the uint16 bits shifted
                     into float32 first, NumPy has no bfloat16)
  numpy_copyto <s>   the same conversion into one preallocated, touched
                     float64 buffer (np.copyto with casting)
The file is memory-mapped (mmap), as attncheck maps it; its pages are warm
from a first pass.
"""
import json
import mmap
import struct
import sys
import time

import numpy as np

DT = {"F64": "<f8", "F32": "<f4", "F16": "<f2"}


def tensors(path):
    f = open(path, "rb")
    mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    n = struct.unpack("<Q", mm[:8])[0]
    h = json.loads(mm[8:8 + n])
    h.pop("__metadata__", None)
    base = 8 + n
    out = []
    for k in sorted(h):
        v = h[k]
        s, e = v["data_offsets"]
        out.append((v["dtype"], base + s, int(np.prod(v["shape"], dtype=np.int64))))
    return mm, out


def to_f64(mm, dt, off, cnt):
    if dt == "BF16":
        u = np.frombuffer(mm, "<u2", cnt, off).astype(np.uint32) << 16
        return u.view(np.float32).astype(np.float64)
    return np.frombuffer(mm, DT[dt], cnt, off).astype(np.float64)


def timed(f):
    w, c = time.perf_counter(), time.thread_time()
    f()
    return time.perf_counter() - w, time.thread_time() - c


def main():
    path, reps = sys.argv[1], int(sys.argv[2])
    mm, ts = tensors(path)
    total = sum(t[2] for t in ts)
    for t in ts:                 # warm
        to_f64(mm, *t)
    buf = np.ones(total)

    def first():
        m2, t2 = tensors(path)
        for t in t2:
            to_f64(m2, *t)

    def astype():
        for t in ts:
            to_f64(mm, *t)

    def copyto():
        o = 0
        for dt, off, cnt in ts:
            if dt == "BF16":
                u = np.frombuffer(mm, "<u2", cnt, off).astype(np.uint32) << 16
                np.copyto(buf[o:o + cnt], u.view(np.float32))
            else:
                np.copyto(buf[o:o + cnt], np.frombuffer(mm, DT[dt], cnt, off), casting="safe")
            o += cnt
    res = {k: [] for k in ("numpy_first", "numpy_astype", "numpy_copyto")}
    for _ in range(reps):
        for k, f in (("numpy_first", first), ("numpy_astype", astype), ("numpy_copyto", copyto)):
            res[k].append(timed(f))
    for k, v in res.items():
        w = sorted(x[0] for x in v)[reps // 2]
        c = sorted(x[1] for x in v)[reps // 2]
        print("%s %.6f cpu %.6f" % (k, w, c))
    print("elements %d" % total)


if __name__ == "__main__":
    main()
