"""bench_t1.py — the plain Theorem 1 construction + check in NumPy, the peer
of bench_t1.c's "plain" path: X^+ by Householder QR (np.linalg.qr + solve),
Wkq = sqrt(dk) log P (paper 1, eq. (6)), Wk = X^+, Wq = Wkq X^+ (step 5), then
max|Softmax((Wk X)'(Wq X)/sqrt(dk)) - P| with the column softmax.
Same instance as the C side is not needed for timing; sizes and distributions
are the same (Gaussian X, Dirichlet(1) columns of P).
X is d x n (d = n unless given); dk = n (the construction's nonzero rows).
Usage: bench_t1.py [n] [reps] [seed] [d]; prints "numpy <median seconds>" and
"numpy_cpu <median CPU seconds of the process>".
"""
import sys
import time

import numpy as np

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
seed = int(sys.argv[3]) if len(sys.argv) > 3 else 1
d = int(sys.argv[4]) if len(sys.argv) > 4 else n
rng = np.random.default_rng(seed)
X = rng.standard_normal((d, n))
P = rng.dirichlet(np.ones(n), size=n).T  # columns sum to 1

times = []
cpu = []
for _ in range(reps):
    t0 = time.perf_counter()
    c0 = time.process_time()
    Q, R = np.linalg.qr(X)                  # thin: Q d x n, R n x n
    Xp = np.linalg.solve(R, Q.T)            # X^+ = R^-1 Q'
    dk = n
    Wt = np.sqrt(dk) * np.log(P)
    Wk = Xp
    Wq = Wt @ Xp
    Z = (Wk @ X).T @ (Wq @ X) / np.sqrt(dk)
    S = np.exp(Z - Z.max(axis=0))
    S /= S.sum(axis=0)
    err = np.abs(S - P).max()
    times.append(time.perf_counter() - t0)
    cpu.append(time.process_time() - c0)
times.sort()
cpu.sort()
print("numpy %.4f" % times[len(times) // 2])
print("numpy_cpu %.4f" % cpu[len(cpu) // 2])
print("numpy_max_error %.3g" % err)
