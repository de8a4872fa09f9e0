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
  numpy_keep <s>     numpy_astype with every result kept (as a loader
                     keeps its tensors), freed after the run: fresh memory
                     touched, as attncheck's convert_fresh
The file is memory-mapped (mmap), as attncheck maps it; its pages are warm
from a first pass.  numpy_astype drops each result before the next, so
glibc's malloc hands the same block back (its mmap threshold rises to the
size freed): the conversion writes into memory already touched and, for
tensors under the last-level cache, cache-warm; attncheck's
convert_reuse is the same work.  numpy_astype and numpy_copyto are run
once untimed right before each timed run, as bench/st_load.c's
convert_reuse, convert and memcpy are; numpy_keep is timed after the
other reps.
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

    def keep():
        kept = [to_f64(mm, *t) for t in ts]
        return len(kept)

    def copyto():
        o = 0
        for dt, off, cnt in ts:
            if dt == "BF16":
                u = np.frombuffer(mm, "<u2", cnt, off).astype(np.uint32) << 16
                np.copyto(buf[o:o + cnt], u.view(np.float32))
            else:
                np.copyto(buf[o:o + cnt], np.frombuffer(mm, DT[dt], cnt, off), casting="safe")
            o += cnt
    res = {k: [] for k in ("numpy_first", "numpy_astype", "numpy_copyto", "numpy_keep")}
    for _ in range(reps):
        res["numpy_first"].append(timed(first))
        for k, f in (("numpy_astype", astype), ("numpy_copyto", copyto)):
            f()
            res[k].append(timed(f))
    for _ in range(reps):
        res["numpy_keep"].append(timed(keep))
    for k, v in res.items():
        w = sorted(x[0] for x in v)[reps // 2]
        c = sorted(x[1] for x in v)[reps // 2]
        print("%s %.6f cpu %.6f" % (k, w, c))
    print("elements %d" % total)


if __name__ == "__main__":
    main()
