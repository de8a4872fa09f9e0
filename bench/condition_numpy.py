#!/usr/bin/env python3
"""NumPy peer of `attncheck condition` (the issue's script, timed).

usage: condition_numpy.py [N d T reps heads]   (default 128 64 100 1 1,2,4,8,16,32,64)

Run it with the OpenBLAS thread count to test (OPENBLAS_NUM_THREADS) and the
same OPENBLAS_CORETYPE as attncheck.  Prints one line per repetition and
    median <wall s> sampling <s> svd <s>
"""
import sys
import time

import numpy as np


def main():
    a = sys.argv[1:]
    N = int(a[0]) if len(a) > 0 else 128
    d = int(a[1]) if len(a) > 1 else 64
    trials = int(a[2]) if len(a) > 2 else 100
    reps = int(a[3]) if len(a) > 3 else 1
    heads = [int(x) for x in (a[4] if len(a) > 4 else "1,2,4,8,16,32,64").split(",")]
    runs = []
    for r in range(reps):
        rng = np.random.default_rng(1)
        ts = tv = 0.0
        t0 = time.perf_counter()
        for h in heads:
            for t in range(trials):
                a0 = time.perf_counter()
                A = rng.standard_normal((N, h * d))
                a1 = time.perf_counter()
                s = np.linalg.svd(A, compute_uv=False)
                k = s[0] / s[-1]
                ts += a1 - a0
                tv += time.perf_counter() - a1
        wall = time.perf_counter() - t0
        runs.append((wall, ts, tv))
        print("run %d: %.3f s (sampling %.3f, svd %.3f)" % (r + 1, wall, ts, tv))
    runs.sort()
    w, ts, tv = runs[len(runs) // 2]
    print("median %.4f sampling %.4f svd %.4f" % (w, ts, tv))


if __name__ == "__main__":
    main()
