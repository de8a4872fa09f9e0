#!/usr/bin/env python3
"""Statistical cross-check of `attncheck condition` against an independent
NumPy sampler.

usage: condition_numpy.py ATTNCHECK

For each configuration, attncheck prints its statistics (--json) and NumPy
draws its own samples with numpy.random.default_rng and computes kappa with
numpy.linalg.svd (values only): nothing is shared but the distribution.
  - iid blocks, N = 48, d = 16, h = 1, 2, 3, 6 (D < N, D = N, D = N, D > N):
    E log kappa (every h, also D = N where E kappa = inf) and the mean of
    kappa (D != N) must agree within 5 combined standard errors;
  - attention blocks (A_i = Softmax(Q K^T / sqrt d) V, X N x E Gaussian,
    N(0, 1/E) projections, written here from the definition), N = 16,
    d = 4, h = 2, 8, with E = D (attncheck uses the literal X W form when
    E <= N and its Cholesky form L Z when E > N) and with E = 40 > N:
    E log kappa within 5 combined s.e.
A false alarm at 5 s.e. has probability below 1e-6 per comparison.
Seeds come from ATTNCHECK_TEST_SEED.  Exit status 0 on agreement, 1 otherwise.
"""
import json
import os
import subprocess
import sys

import numpy as np
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import json_schema  # noqa: E402  (validates --json against schema/, attncheck(1) JSON)

Z = 5.0


def run(exe, args):
    p = subprocess.run([exe, "condition", "--json"] + args, capture_output=True, text=True)
    if p.returncode not in (0, 2):
        raise RuntimeError("attncheck %s: status %d: %s" % (args, p.returncode, p.stderr))
    return json_schema.load(p.stdout, "condition")


def kappa(A):
    s = np.linalg.svd(A, compute_uv=False)
    return s[0] / s[-1]


def attention_block(rng, N, E, d, h):
    X = rng.standard_normal((N, E))
    blocks = []
    for _ in range(h):
        Wq, Wk, Wv = (rng.standard_normal((E, d)) / np.sqrt(E) for _ in range(3))
        Q, K, V = X @ Wq, X @ Wk, X @ Wv
        S = Q @ K.T / np.sqrt(d)
        S = np.exp(S - S.max(axis=1, keepdims=True))
        P = S / S.sum(axis=1, keepdims=True)
        blocks.append(P @ V)
    return np.hstack(blocks)


def compare(name, c_mean, c_se, n_mean, n_se, failures):
    z = abs(c_mean - n_mean) / np.hypot(c_se, n_se)
    status = "ok  " if z < Z else "FAIL"
    print("%s %-44s attncheck %.5g +- %.2g, numpy %.5g +- %.2g (z = %.2f)"
          % (status, name, c_mean, c_se, n_mean, n_se, z))
    if z >= Z:
        failures.append(name)


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    exe = sys.argv[1]
    seed = int(os.environ.get("ATTNCHECK_TEST_SEED", "20261121"), 0)
    rng = np.random.default_rng(seed)
    failures = []

    N, d, T = 48, 16, 400
    out = run(exe, ["--heads", "1,2,3,6", "--seq", str(N), "--head-dim", str(d),
                    "--trials", str(T), "--seed", str(seed)])
    for res in out["results"]:
        h, D = res["h"], res["D"]
        k = np.array([kappa(rng.standard_normal((N, D))) for _ in range(T)])
        lk = np.log(k)
        st = res["stats"]
        compare("iid N=%d D=%d: E log kappa" % (N, D), st["elog"], st["se_elog"],
                lk.mean(), lk.std(ddof=1) / np.sqrt(T), failures)
        if D != N:
            compare("iid N=%d D=%d: mean kappa" % (N, D), st["mean"], st["se_mean"],
                    k.mean(), k.std(ddof=1) / np.sqrt(T), failures)
        else:
            if st["mean"] is not None:
                print("FAIL iid D = N: a mean was reported (E kappa = inf)")
                failures.append("mean at D = N")

    N, d, T = 16, 4, 300
    for E in (None, 40):
        args = ["--mode", "attention", "--heads", "2,8", "--seq", str(N), "--head-dim", str(d),
                "--trials", str(T), "--seed", str(seed + 1)]
        if E:
            args += ["--input-dim", str(E)]
        out = run(exe, args)
        for res in out["results"]:
            h, D = res["h"], res["D"]
            EE = E or D
            lk = np.log([kappa(attention_block(rng, N, EE, d, h)) for _ in range(T)])
            st = res["stats"]
            compare("attention N=%d E=%d D=%d: E log kappa" % (N, EE, D), st["elog"],
                    st["se_elog"], lk.mean(), lk.std(ddof=1) / np.sqrt(T), failures)

    if failures:
        print("%d disagreements (seed %d): %s" % (len(failures), seed, ", ".join(failures)))
        return 1
    print("attncheck and NumPy agree within %.0f standard errors (seed %d)" % (Z, seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
