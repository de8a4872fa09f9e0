#!/usr/bin/env python3
"""certified_written.py — every certificate a command prints about weights is
about the files it writes (doc/mathematics.md §3.6, §3.8, §6.9).

For each command that writes weights, the files are read back and the error
they certify, max |Softmax_Omega((Wk X)'(Wq X)/sqrt(dk)) - P|, is evaluated
at 50 digits with mpmath from the exact doubles of the files (an oracle
independent of the library's interval products); it must lie in the printed
enclosure [lo, hi]:

  - rep-theorem --out-dir (X.npy, P.npy, Wk.npy, Wq.npy): generated instances
    over sizes, d < n, d = 1, exactly representable P, tol = 0, a causal
    mask, a window mask and biases (weights dk x (d + 1) on [X; 1']);
  - rep-theorem --wq/--wk --out-dir: the head written is the one certified;
  - train --task fit-p --save (Wq.npy, Wk.npy of the checkpoint): the
    certificate is about the saved iterate;
  - inspect --weights --out-dir (wq_dkK.npy, wk_dkK.npy, normed.npy,
    patterns.npy): each head's compressed weights at each --dk-prime, on
    the head's input (with the ones row for a biased head) under its mask
    (the RoPE fixture "layer" is left out: its heads are not in the class
    whose compressed weights inspect writes).

Usage: certified_written.py ATTNCHECK TOP_SRCDIR [SEED]
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import mpmath

mpmath.mp.dps = 50
exe, top = sys.argv[1], sys.argv[2]
seed = int(sys.argv[3]) if len(sys.argv) > 3 else 20261202
failures = []
checked = {}


def run(argv):
    p = subprocess.run([exe] + argv, capture_output=True, text=True)
    if p.returncode not in (0, 1, 2):
        raise SystemExit("certified_written: %s: exit %d: %s" % (" ".join(argv), p.returncode,
                                                                  p.stderr.strip()))
    return json.loads(p.stdout)


def max_error(X, P, Wk, Wq, visible):
    """max |Softmax_Omega(Z) - P| at 50 digits, Z = (Wk X)'(Wq X)/sqrt(dk);
    P column-stochastic (key rows, query columns); visible[i][j]: key i is
    visible to query j.  Every input is an exact double."""
    dk, n = Wk.shape[0], X.shape[1]
    Xm = mpmath.matrix([[mpmath.mpf(float(v)) for v in row] for row in X])
    K = mpmath.matrix([[mpmath.mpf(float(v)) for v in row] for row in Wk]) * Xm
    Q = mpmath.matrix([[mpmath.mpf(float(v)) for v in row] for row in Wq]) * Xm
    s = 1 / mpmath.sqrt(dk)
    worst = mpmath.mpf(0)
    for j in range(n):
        z = [sum(K[k, i] * Q[k, j] for k in range(dk)) * s if visible[i][j] else None
             for i in range(n)]
        m = max(v for v in z if v is not None)
        e = [mpmath.exp(v - m) if v is not None else mpmath.mpf(0) for v in z]
        tot = sum(e)
        for i in range(n):
            worst = max(worst, abs(e[i] / tot - mpmath.mpf(float(P[i, j]))))
    return worst


def check(what, cls, lo, hi, err):
    checked[cls] = checked.get(cls, 0) + 1
    slack = mpmath.mpf(2) ** -150
    if lo is None or hi is None or not (mpmath.mpf(lo) - slack <= err <= mpmath.mpf(hi) + slack):
        failures.append("%s: the written weights' error %s is outside the printed [%r, %r]"
                        % (what, mpmath.nstr(err, 17), lo, hi))


def causal(n):
    return [[i <= j for j in range(n)] for i in range(n)]


def window(n, w):
    return [[abs(i - j) < w for j in range(n)] for i in range(n)]


def full(n):
    return [[True] * n for _ in range(n)]


with tempfile.TemporaryDirectory() as work:
    # ---- rep-theorem --out-dir ----------------------------------------------
    rng = np.random.default_rng(seed)
    k = 0
    cases = []
    for n, d, dk in ((4, 4, 1), (6, 8, 2), (8, 4, 2), (8, 16, 7), (10, 10, 3), (5, 1, 1),
                     (12, 6, 4), (16, 32, 5)):
        s = str(int(rng.integers(1, 10 ** 6)))
        cases.append(("generated", ["--n", str(n), "--d", str(d), "--dk", str(dk), "--seed", s],
                      None, False))
        cases.append(("representable", ["--n", str(n), "--d", str(max(d, n)), "--dk", str(dk),
                                         "--representable", "--seed", s], None, False))
        cases.append(("tol 0", ["--n", str(n), "--d", str(d), "--dk", str(dk), "--tol", "0",
                                "--seed", s], None, False))
        if n >= 3:
            cases.append(("causal", ["--n", str(n), "--d", str(d), "--dk", str(dk), "--mask",
                                     "causal", "--seed", s], causal(n), False))
            cases.append(("causal, bias", ["--n", str(n), "--d", str(d), "--dk", str(dk),
                                           "--mask", "causal", "--bias", "--seed", s],
                          causal(n), True))
            cases.append(("window", ["--n", str(n), "--d", str(d), "--dk", str(dk), "--mask",
                                     "window:2", "--seed", s], window(n, 2), False))
        cases.append(("bias", ["--n", str(n), "--d", str(d), "--dk", str(dk), "--bias",
                               "--seed", s], None, True))
    for cls, argv, vis, bias in cases:
        k += 1
        od = os.path.join(work, "r%d" % k)
        doc = run(["rep-theorem", "--json", "--out-dir", od] + argv)
        w = doc.get("weights")
        if not os.path.exists(os.path.join(od, "Wk.npy")):
            failures.append("rep-theorem %s: no weights written" % " ".join(argv))
            continue
        X, P = np.load(os.path.join(od, "X.npy")), np.load(os.path.join(od, "P.npy"))
        Wk, Wq = np.load(os.path.join(od, "Wk.npy")), np.load(os.path.join(od, "Wq.npy"))
        if bias:
            X = np.vstack([X, np.ones((1, X.shape[1]))])
        n = X.shape[1]
        check("rep-theorem " + " ".join(argv), "rep-theorem " + cls, w["lo"], w["hi"],
              max_error(X, P, Wk, Wq, vis or full(n)))
        # a given head: the head written is the head certified (the better of
        # the given one and the constructed one)
        if cls in ("generated", "causal"):
            Wk2 = Wk + 2.0 ** -20 * rng.standard_normal(Wk.shape)
            Wq2 = Wq + 2.0 ** -20 * rng.standard_normal(Wq.shape)
            np.save(os.path.join(work, "wk.npy"), Wk2)
            np.save(os.path.join(work, "wq.npy"), Wq2)
            od2 = od + "g"
            xa = ["--x", os.path.join(od, "X.npy"), "--p", os.path.join(od, "P.npy"),
                  "--dk", str(Wk.shape[0])] + (["--mask", "causal"] if vis else [])
            doc2 = run(["rep-theorem", "--json", "--out-dir", od2, "--wk", os.path.join(work, "wk.npy"),
                        "--wq", os.path.join(work, "wq.npy")] + xa)
            w2 = doc2["weights"]
            # (the inputs were given: --out-dir writes only the weights)
            check("rep-theorem --wk/--wq " + " ".join(argv), "rep-theorem given head",
                  w2["lo"], w2["hi"],
                  max_error(X, P, np.load(os.path.join(od2, "Wk.npy")),
                            np.load(os.path.join(od2, "Wq.npy")), vis or full(n)))

    # ---- train --task fit-p --save --------------------------------------------
    for n, d, steps in ((4, 4, 200), (6, 6, 400), (5, 8, 300)):
        s = str(int(rng.integers(1, 10 ** 6)))
        gen = os.path.join(work, "fg%d" % n)
        run(["rep-theorem", "--json", "--n", str(n), "--d", str(d), "--seed", s, "--tol", "1",
             "--out-dir", gen])
        for opt in ("adamw", "bfgs"):
            ck = os.path.join(work, "ck%d%s" % (n, opt))
            doc = run(["train", "--task", "fit-p", "--x", os.path.join(gen, "X.npy"), "--p",
                       os.path.join(gen, "P.npy"), "--optimizer", opt, "--steps", str(steps),
                       "--tol", "1e-3", "--seed", s, "--save", ck, "--json", "--quiet"])
            cert = doc.get("fitp", doc).get("certificate") if isinstance(doc.get("fitp"), dict) \
                else doc.get("certificate")
            if not os.path.exists(os.path.join(ck, "Wq.npy")):
                failures.append("train fit-p %s: no Wq.npy saved" % opt)
                continue
            X, P = np.load(os.path.join(gen, "X.npy")), np.load(os.path.join(gen, "P.npy"))
            check("train --task fit-p --optimizer %s (n = %d)" % (opt, n), "train fit-p --save",
                  cert["lo"], cert["hi"],
                  max_error(X, P, np.load(os.path.join(ck, "Wk.npy")),
                            np.load(os.path.join(ck, "Wq.npy")), full(n)))

    # ---- inspect --weights --out-dir -------------------------------------------
    ids = os.path.join(work, "ids.npy")
    np.save(ids, np.array([3, 5, 7, 2, 9, 11, 4], float))
    for fam, extra in (("gpt2", ["--tokens", ids]), ("nanogpt", ["--tokens", ids]),
                       ("bert", ["--tokens", ids]), ("layer_ln", None)):
        od = os.path.join(work, "i_" + fam)
        if extra is None:
            cfg = json.load(open(os.path.join(top, "tests", "models", fam, "config.json")))
            dmod = cfg.get("d_model", cfg.get("hidden_size", cfg.get("d")))
            x = os.path.join(work, "x_%s.npy" % fam)
            np.save(x, rng.standard_normal((6, int(dmod))))
            extra = ["--normed", x]
        doc = run(["inspect", "--json", "--model", os.path.join(top, "tests", "models", fam),
                   "--weights", "--out-dir", od] + extra)
        normed = np.load(os.path.join(od, "normed.npy"))
        pats = np.load(os.path.join(od, "patterns.npy"))
        for li, ly in enumerate(doc["layers"]):
            for hd in ly["heads"]:
                h = hd["head"]
                X = normed[li].T
                if hd["bias"]:
                    X = np.vstack([X, np.ones((1, X.shape[1]))])
                n = X.shape[1]
                vis = causal(n) if hd["masked"] else full(n)
                P = pats[li, h].T
                for dist in hd["distances"]:
                    if not dist["weights"]:
                        continue
                    K = dist["dk"]
                    wq = np.load(os.path.join(od, "wq_dk%d.npy" % K))[li, h]
                    wk = np.load(os.path.join(od, "wk_dk%d.npy" % K))[li, h]
                    check("inspect %s layer %d head %d dk' = %d" % (fam, ly["layer"], h, K),
                          "inspect " + fam, dist["lo"] if dist["lo"] is not None else 0.0,
                          dist["hi"], max_error(X, P, wk, wq, vis))

for f in failures:
    print("certified_written: " + f, file=sys.stderr)
for cls in sorted(checked):
    print("ok   %-28s %3d certificates about the files written" % (cls, checked[cls]))
print("%d certificates checked, %d failures (seed %d)" % (sum(checked.values()), len(failures), seed))
sys.exit(1 if failures else 0)
