#!/usr/bin/env python3
"""t1_numpy.py — independent NumPy cross-check of `attncheck rep-theorem`.

For several instances the command writes X, P, Wk, Wq and certificate.json;
NumPy recomputes Softmax((Wk X)'(Wq X)/sqrt(dk)) from the files alone and
checks that its error max|S - P| lies inside the certified enclosure of the
written weights, widened by NumPy's own rounding error
    delta = max_ij S_ij (exp(2 max_i dZ_ij) - 1) + 8 n u,
    dZ = 2 (d + dk + 2) u (|Wk||X|)'(|Wq||X|) / sqrt(dk)
(gamma bounds for the three products; softmax is Lipschitz in the logits
through exp).  It also checks that neither the written weights nor 200
random heads come closer to P than the certified lower bound dist.lo.
Usage: t1_numpy.py ATTNCHECK
"""
import json
import os
import subprocess
import sys
import tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import json_schema  # noqa: E402  (validates --json against schema/, attncheck(1) JSON)

try:
    import numpy as np
except ImportError:
    print("numpy not available: skipped")
    sys.exit(77)

U = 2.0 ** -53
exe = sys.argv[1]
failures = 0


def softmax_err(X, Wk, Wq, P):
    dk, d = Wk.shape
    n = X.shape[1]
    K, Q = Wk @ X, Wq @ X
    Z = K.T @ Q / np.sqrt(dk)
    S = np.exp(Z - Z.max(axis=0))
    S /= S.sum(axis=0)
    dZ = 2 * (d + dk + 2) * U * ((np.abs(Wk) @ np.abs(X)).T @ (np.abs(Wq) @ np.abs(X))) / np.sqrt(dk)
    delta = (S * (np.exp(2 * dZ.max(axis=0)) - 1)).max() + 8 * n * U
    return np.abs(S - P).max(), delta


def check(args, expect_verdict):
    global failures
    with tempfile.TemporaryDirectory() as out:
        p = subprocess.run([exe, "rep-theorem", "--json", "--out-dir", out] + args,
                           capture_output=True, text=True)
        doc = json_schema.load(p.stdout, "rep-theorem")
        if doc["verdict"] != expect_verdict:
            print("FAIL %s: verdict %s, expected %s" % (args, doc["verdict"], expect_verdict))
            failures += 1
        cert = json.load(open(os.path.join(out, "certificate.json")))
        if cert != doc:
            print("FAIL %s: certificate.json differs from --json output" % args)
            failures += 1
        for key in ("verdict", "certificate", "instance", "route", "rank", "distance", "weights", "trace"):
            if key not in doc:
                print("FAIL %s: JSON lacks %r" % (args, key))
                failures += 1
        X = np.load(os.path.join(out, "X.npy"))
        P = np.load(os.path.join(out, "P.npy"))
        Wk = np.load(os.path.join(out, "Wk.npy"))
        Wq = np.load(os.path.join(out, "Wq.npy"))
        err, delta = softmax_err(X, Wk, Wq, P)
        lo, hi = json_schema.lo(doc["weights"]["lo"]), json_schema.hi(doc["weights"]["hi"])
        if not (lo - delta <= err <= hi + delta):
            print("FAIL %s: NumPy error %.3g outside the certified [%.3g, %.3g] (+-%.2g)"
                  % (args, err, lo, hi, delta))
            failures += 1
        dlo = json_schema.lo(doc["distance"]["lo"])
        if err < dlo - delta:
            print("FAIL %s: the written weights beat the certified lower bound" % args)
            failures += 1
        rng = np.random.default_rng(7)
        dk, d = Wk.shape
        worst = np.inf
        for t in range(200):
            s = 2.0 ** rng.integers(-3, 4)
            e, dl = softmax_err(X, rng.standard_normal((dk, d)), s * rng.standard_normal((dk, d)), P)
            worst = min(worst, e + dl)
        if worst < dlo:
            print("FAIL %s: a random head reached %.3g below the certified dist.lo %.3g" % (args, worst, dlo))
            failures += 1
        print("ok   %-45s %-8s numpy err %.3g in [%.3g, %.3g], dist >= %.3g"
              % (" ".join(args), doc["verdict"], err, lo, hi, dlo))


check(["--n", "12"], "PROVED")
check(["--d", "16", "--n", "8", "--dk", "10", "--seed", "4"], "PROVED")
check(["--n", "40", "--seed", "5"], "PROVED")
check(["--example", "paper"], "REFUTED")
check(["--d", "3", "--n", "6", "--dk", "2", "--seed", "6"], "REFUTED")
check(["--d", "8", "--n", "8", "--dk", "3", "--seed", "8"], "REFUTED")
check(["--d", "4", "--n", "8", "--dk", "2", "--representable", "--seed", "9"], "PROVED")
sys.exit(1 if failures else 0)
