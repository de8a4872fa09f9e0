#!/usr/bin/env python3
"""bench_decide.py -- NumPy peer of bench/bench_decide.sh: the same instance as
`attncheck rep-theorem --n N --d D` would generate in spirit (X Gaussian d x n,
P with Dirichlet(1) columns; NumPy's own random streams, so not the same
numbers), and the plain, uncertified double computation of what route DECIDE
certifies: the log-domain residual rho = min_c ||M(c) - Pi M(c) Pi||_F
(doc/mathematics.md §3.4) by a thin QR of X^T.  Prints "numpy SECONDS" (best
of reps) and "numpy_rho VALUE".
Usage: bench_decide.py N D [reps]"""
import sys
import time

import numpy as np


def rho_plain(X, P):
    n = X.shape[1]
    L = np.log(P)
    Q, _ = np.linalg.qr(X.T)            # n x d, orthonormal basis of the row space
    PiL = Q @ (Q.T @ L)
    T = L - (PiL @ Q) @ Q.T              # L - Pi L Pi
    g = Q @ (Q.T @ np.ones(n))
    b = g.sum()
    v = T.sum(axis=0)
    pv = Q @ (Q.T @ v)
    c = -((v - pv) / n + pv / (n - b))
    pc = Q @ (Q.T @ c)
    R = T + c[None, :] - np.outer(g, pc)
    return np.linalg.norm(R)


def main():
    n, d = int(sys.argv[1]), int(sys.argv[2])
    reps = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    rng = np.random.default_rng(1)
    X = rng.standard_normal((d, n))
    P = rng.dirichlet(np.ones(n), size=n).T
    best, rho = float("inf"), 0.0
    for _ in range(reps):
        t0 = time.perf_counter()
        rho = rho_plain(X, P)
        best = min(best, time.perf_counter() - t0)
    print("numpy %.6f" % best)
    print("numpy_rho %.6g" % rho)


if __name__ == "__main__":
    main()
