#!/usr/bin/env python3
"""Tests of attncheck.separate and attncheck.Layer (the Python package over
the library's command `separate`, attncheck/commands.h).

Usage: python_separate.py ATTNCHECK   (run by python_pkg.sh with PYTHONPATH
and ATTNCHECK_LIBRARY set; ATTNCHECK the program of the same build).

Oracles:
  - the program of the same build: for every class of option (generated
    layers, each case, --trace, --audit, --embed, --tol, --max-prec,
    --threads, --v-dir/--w-dir, --student with all its options) the Python
    result is the program's --json (timings aside) and its arrays are the
    files of --out-dir, bit for bit;
  - mpmath at 50 digits for Layer.__call__ (the library's forward pass) on
    layers of sizes 1 to 9, non-square heads, inputs at three scales, with
    the normwise bound below; the NumPy evaluation of the same formula must
    meet the same bound (an independent double implementation);
  - the layout: Wo is (h, d, hs) as in Wo.npy, and every other layout is
    refused naming the parameter.

Bound of the forward pass (double, u = 2^-53).  Per output entry (r, c):
|Y - Y*| <= 2 B_r (g_K + (n + 4) u (L + 1) + 2 D), where B_r = sum_i sum_j
(|Wo_i| |Wv_i| |X|)_{rj} bounds |Y_rc| (softmax entries are in [0, 1]),
g_K = K u / (1 - K u) with K = d + hs + n + 2 the longest chain of products
and sums on the value path, (n + 4) u (L + 1) the softmax's relative error
for logits spread over L (Higham, ASNA 3.5), and D the largest error of a
logit, g_(d + hs + 1) ((|Wk||X|)^T (|Wq||X|))_max / sqrt(hs), which changes
a softmax entry by a factor exp(2D) ~ 1 + 2D."""
import json
import math
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

import attncheck as ac

EXE = sys.argv[1]
SEED = int(os.environ.get("ATTNCHECK_TEST_SEED", "20261201"))
U = 2.0 ** -53
failures = 0
print("python_separate: ATTNCHECK_TEST_SEED=%d" % SEED)


def check(cond, what):
    global failures
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures += 1


def expect_error(fn, exc, status, words, what):
    try:
        fn()
    except exc as e:
        ok = all(w in str(e) for w in words) and (status is None or e.status == status)
        check(ok, "%s -> %s %s" % (what, type(e).__name__, e))
        return
    except Exception as e:  # noqa: BLE001 (the wrong kind of error is a failure)
        check(False, "%s raised %s %s, expected %s" % (what, type(e).__name__, e, exc.__name__))
        return
    check(False, what + " raised nothing")


def program(*args):
    r = subprocess.run([EXE, "separate"] + [str(a) for a in args], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    return r.returncode, r.stdout, r.stderr


TIME = re.compile(r"seconds", re.I)


def strip(v, drop=()):
    """the JSON without timings (and without the keys in drop)"""
    if isinstance(v, dict):
        return {k: strip(x, drop) for k, x in v.items() if not TIME.search(k) and k not in drop}
    if isinstance(v, list):
        return [strip(x, drop) for x in v]
    return v


# ---- Layer: the layout of the files, shapes checked ------------------------------------
rng = np.random.default_rng(SEED)
h, hs, d = 3, 2, 5
Wq, Wk, Wv = (rng.standard_normal((h, hs, d)) for _ in range(3))
Wo = rng.standard_normal((h, d, hs))
L = ac.Layer(Wq, Wk, Wv, Wo)
check((L.h, L.hs, L.d) == (3, 2, 5) and L.Wo.shape == (3, 5, 2), "Layer keeps Wo as (h, d, hs)")
M = ac.Layer.from_params(L.params(), d, h, hs)
check(all(np.array_equal(getattr(M, k), getattr(L, k)) for k in ("Wq", "Wk", "Wv", "Wo")),
      "Layer.from_params(params()) is the same layer")
# params() is the library block: Wo_cat[:, i hs + c] = Wo[i][:, c]
p = L.params()
wo_cat = p[3 * h * hs * d:].reshape(d, h * hs)
check(all(np.array_equal(wo_cat[:, i * hs:(i + 1) * hs], Wo[i]) for i in range(h)),
      "params(): Wo_cat = [Wo_1, ..., Wo_h]")
expect_error(lambda: ac.Layer(Wq, Wk, Wv, np.concatenate(list(Wo), axis=1)), ValueError, 65,
             ["Wo", "(h, d, hs)", "(3, 5, 2)", "(5, 6)"], "Wo in the old layout (d, h hs)")
expect_error(lambda: ac.Layer(Wq, Wk, Wv, np.transpose(Wo, (0, 2, 1))), ValueError, 65,
             ["Wo", "(3, 2, 5)"], "Wo transposed (h, hs, d)")
expect_error(lambda: ac.Layer(Wq, Wk[:, :1], Wv, Wo), ValueError, 65, ["Wk", "like Wq"],
             "Wk of another head size")
expect_error(lambda: ac.Layer(Wq[0], Wk, Wv, Wo), ValueError, 65, ["Wq", "3-D"], "a 2-D Wq")
expect_error(lambda: ac.Layer(Wq * 1j, Wk, Wv, Wo), TypeError, None, ["Wq"], "a complex Wq")
L32 = ac.Layer(*(a.astype(np.float32) for a in (Wq, Wk, Wv, Wo)))
check(L32.Wq.dtype == np.float64 and np.array_equal(L32.Wq, Wq.astype(np.float32)),
      "float32 parameters widened exactly")

# ---- Layer.__call__: the library's forward pass against mpmath -------------------------
try:
    import mpmath
except ImportError:
    mpmath = None
    print("skip the mpmath oracle: no mpmath")


def forward_numpy(L, X):
    out = np.zeros_like(X)
    for i in range(L.h):
        Z = (L.Wk[i] @ X).T @ (L.Wq[i] @ X) / math.sqrt(L.hs)
        S = np.exp(Z - Z.max(axis=0))
        S /= S.sum(axis=0)
        out += L.Wo[i] @ (L.Wv[i] @ X) @ S
    return out


def forward_mp(L, X):
    mp = mpmath.mp
    mp.dps = 50
    d, n = X.shape
    Xm = mpmath.matrix(X.tolist())
    Y = mpmath.matrix(d, n)
    for i in range(L.h):
        Q = mpmath.matrix(L.Wq[i].tolist()) * Xm
        K = mpmath.matrix(L.Wk[i].tolist()) * Xm
        Z = K.T * Q / mpmath.sqrt(L.hs)
        S = mpmath.matrix(n, n)
        for c in range(n):
            m = max(Z[j, c] for j in range(n))
            e = [mpmath.exp(Z[j, c] - m) for j in range(n)]
            t = mpmath.fsum(e)
            for j in range(n):
                S[j, c] = e[j] / t
        Y += mpmath.matrix(L.Wo[i].tolist()) * (mpmath.matrix(L.Wv[i].tolist()) * Xm) * S
    return np.array([[float(Y[r, c]) for c in range(n)] for r in range(d)])


def forward_bound(L, X):
    d, n = X.shape
    B = np.zeros(d)
    D = 0.0
    spread = 0.0
    for i in range(L.h):
        B += (np.abs(L.Wo[i]) @ np.abs(L.Wv[i]) @ np.abs(X)).sum(axis=1)
        Z = (L.Wk[i] @ X).T @ (L.Wq[i] @ X) / math.sqrt(L.hs)
        spread = max(spread, float((Z.max(axis=0) - Z.min(axis=0)).max()))
        A = (np.abs(L.Wk[i]) @ np.abs(X)).T @ (np.abs(L.Wq[i]) @ np.abs(X)) / math.sqrt(L.hs)
        k = d + L.hs + 1
        D = max(D, k * U / (1 - k * U) * float(A.max()))
    K = d + L.hs + n + 2
    g = K * U / (1 - K * U)
    return 2 * B[:, None] * (g + (n + 4) * U * (spread + 1) + 2 * D) * np.ones((1, n))


if mpmath is not None:
    worst = 0.0
    for (d, h, hs, n) in [(1, 1, 1, 1), (4, 2, 2, 3), (6, 3, 4, 5), (5, 1, 7, 2), (8, 4, 2, 9)]:
        for scale in (1e-3, 1.0, 4.0):
            Lr = ac.Layer(*(rng.standard_normal(s) for s in
                            ((h, hs, d), (h, hs, d), (h, hs, d), (h, d, hs))))
            X = scale * rng.standard_normal((d, n))
            exact = forward_mp(Lr, X)
            bound = forward_bound(Lr, X)
            Ylib, Ynp = Lr(X), forward_numpy(Lr, X)
            elib, enp = np.abs(Ylib - exact), np.abs(Ynp - exact)
            worst = max(worst, float((elib / bound).max()))
            check(Ylib.shape == (d, n) and np.all(elib <= bound) and np.all(enp <= bound),
                  "Layer(X) d=%d h=%d hs=%d n=%d scale %g: library %.2g, NumPy %.2g of the bound"
                  % (d, h, hs, n, scale, float((elib / bound).max()), float((enp / bound).max())))
    print("     (largest error of the library's forward: %.3g of the bound)" % worst)
expect_error(lambda: L(np.ones((4, 3))), ValueError, 65, ["X", "d = 5"], "X of another width")

# ---- the same result as the program ------------------------------------------------------
tmp = tempfile.mkdtemp()


def same_as_program(kw, args, what, drop=(), outdir=True):
    r = ac.separate(**kw)
    od = os.path.join(tmp, "od%d" % abs(hash(what)))
    rc, out, err = program(*(args + ["--json"] + (["--out-dir", od] if outdir else [])))
    if rc not in (0, 1, 2):
        check(False, "%s: the program failed (%d): %s" % (what, rc, err.strip()))
        return r
    j = json.loads(out)
    check(strip(r.json, drop) == strip(j, drop) and r.status == rc,
          "%s: the program's JSON and exit status (%s, %s)" % (what, r.verdict, rc))
    if outdir:
        files = sorted(f[:-4] for f in os.listdir(od) if f.endswith(".npy"))
        same = files == sorted(r.arrays) and all(
            np.array_equal(np.load(os.path.join(od, f + ".npy")), r.arrays[f]) for f in files)
        check(same, "  its arrays are the files of --out-dir (%d: %s)"
              % (len(files), ", ".join(files[:6]) + (" ..." if len(files) > 6 else "")))
    return r


same_as_program({}, [], "separate()")
r = same_as_program({"case": 2, "trace": True, "optimize": 0}, ["--case", 2, "--trace",
                    "--optimize", 0], "case=2, trace=True, optimize=0")
check(r.case == 2 and r.case.number == 2 and len(r.trace) > 0
      and any("--audit" in s.note for s in r.trace),
      "  case reads as 2 and as the object; the trace's notes name --audit")
r = same_as_program({"case": 3, "audit": True, "optimize": 5, "seed": 4},
                    ["--case", 3, "--audit", "--optimize", 5, "--seed", 4],
                    "case=3, audit=True, optimize=5, seed=4")
check(r.audit is not None and r.hypotheses == "PROVED" and r.hypotheses.u_shared == "PROVED",
      "  audit and hypotheses (a verdict that reads as the object)")
same_as_program({"embed": True, "dp": 8}, ["--embed", "--dp", 8], "embed=True, dp=8")
same_as_program({"embed": True, "dp": 16, "max_prec": 0, "samples": 2, "tol": 0},
                ["--embed", "--dp", 16, "--max-prec", 0, "--samples", 2, "--tol", 0],
                "embed=True, dp=16, max_prec=0, samples=2, tol=0")
same_as_program({"tol": 0.5, "tries": 2}, ["--tol", 0.5, "--tries", 2], "tol=0.5, tries=2")
same_as_program({"d": 8, "h": 2, "dp": 8, "n": 2, "seed": 7, "tries": 1, "max_prec": 0,
                 "threads": 2},
                ["--d", 8, "--h", 2, "--dp", 8, "--n", 2, "--seed", 7, "--tries", 1,
                 "--max-prec", 0, "--threads", 2], "d=8, h=2, dp=8, n=2, seed=7, threads=2")
stu = {"student": True, "d": 8, "h": 4, "dp": 4, "n": 4, "student_heads": [1, 2],
       "student_steps": 30, "student_seeds": 2, "student_lr": 0.02, "student_batch": 8,
       "samples": 5, "max_prec": 0}
r = same_as_program(stu, ["--student", "--d", 8, "--h", 4, "--dp", 4, "--n", 4,
                          "--student-heads", "1,2", "--student-steps", 30, "--student-seeds", 2,
                          "--student-lr", 0.02, "--student-batch", 8, "--samples", 5,
                          "--max-prec", 0], "student=True with every student option")
check(r.verdict is None and [s.kind for s in r.students] == ["standard", "standard", "fixed"]
      and "standard_h2_seed2_Wo" in r.arrays and r.arrays["samples"].shape == (5, 8, 4),
      "  the students, their weights and the held-out inputs")

# given layers: from files (the program) and in memory (Python) give the same numbers
W, V = ac.generate_layers(16, 4, 8, case=1, seed=3)
ld = os.path.join(tmp, "layers")
os.mkdir(ld)
W.save(ld, "W")
V.save(ld, "V")
check(all(np.array_equal(getattr(ac.Layer.load(ld, "V"), k), getattr(V, k))
          for k in ("Wq", "Wk", "Wv", "Wo")), "Layer.save then Layer.load: the same arrays")
desc = ("f_W", "g_V")  # "loaded from DIR" against "loaded from the arrays ..."
r = same_as_program({"W": W, "V": V, "n": 5}, ["--w-dir", ld, "--v-dir", ld, "--n", 5],
                    "separate(W, V) = --w-dir, --v-dir of Layer.save", drop=desc)
check(r.instance.f_W == "loaded from the arrays Wq, Wk, Wv, Wo", "  " + r.instance.f_W)
same_as_program({"w_dir": ld, "v_dir": ld, "n": 5, "optimize": 3},
                ["--w-dir", ld, "--v-dir", ld, "--n", 5, "--optimize", 3], "w_dir=, v_dir=")
same_as_program({"V": V, "student": True, "student_steps": 5, "student_seeds": 1,
                 "samples": 2, "n": 3},
                ["--v-dir", ld, "--student", "--student-steps", 5, "--student-seeds", 1,
                 "--samples", 2, "--n", 3], "student with V in memory = --v-dir",
                drop=("source",))
a = {k: getattr(W, k) for k in ("Wq", "Wk", "Wv", "Wo")}
r1 = ac.separate(**a, V=V, n=5)
r2 = ac.separate(W, V, 5)
check(strip(r1.json) == strip(r2.json), "the arrays Wq ... Wo are W")

# more than 64 arrays: 3 standard shapes and the fixed one, 6 seeds each
r = same_as_program({"student": True, "d": 8, "h": 4, "dp": 4, "n": 3,
                     "student_heads": "1,2,4", "student_steps": 1, "student_seeds": 6,
                     "samples": 2, "max_prec": 0},
                    ["--student", "--d", 8, "--h", 4, "--dp", 4, "--n", 3, "--student-heads",
                     "1,2,4", "--student-steps", 1, "--student-seeds", 6, "--samples", 2,
                     "--max-prec", 0], "101 arrays (24 students)")
check(len(r.arrays) == 4 * 24 + 4 + 1, "  %d arrays reach Python" % len(r.arrays))

# every option of `separate --help` is a keyword, and the arrays of the layers
rc, out, _ = program("--help")
helpopts = {o[2:].replace("-", "_") for o in re.findall(r"--[a-z][a-z0-9-]*", out)}
import inspect  # noqa: E402
params = set(inspect.signature(ac.separate).parameters)
program_only = {"json", "out_dir", "csv", "plot", "help"}
check(helpopts - program_only <= params and
      params - helpopts == {"W", "V", "Wq", "Wk", "Wv", "Wo", "Vq", "Vk", "Vv", "Vo"},
      "every option of --help but %s is a keyword of separate" % sorted(program_only))

# ---- bad arguments: the library's messages, as exceptions ---------------------------------
W, V = ac.generate_layers(8, 2, 4, seed=1)
expect_error(lambda: ac.separate(Wq=W.Wq, Wk=W.Wk, V=V), ValueError, 64, ["give all four"],
             "Wq and Wk without Wv, Wo")
expect_error(lambda: ac.separate(W, V, w_dir=ld), ValueError, 64, ["given twice"],
             "W and w_dir")
expect_error(lambda: ac.separate(W, V, Wq=W.Wq), TypeError, None, ["Wq", "twice"], "W and Wq")
expect_error(lambda: ac.separate(W.params()), TypeError, None, ["Layer"], "W not a Layer")
bad = {"Wq": W.Wq, "Wk": W.Wk, "Wv": W.Wv, "Wo": np.transpose(W.Wo, (0, 2, 1))}
expect_error(lambda: ac.separate(**bad, V=V), ValueError, 65, ["Wo", "(h, d, hs)"],
             "an array Wo in another layout (the library names it)")
nan = {"Wq": W.Wq.copy(), "Wk": W.Wk, "Wv": W.Wv, "Wo": W.Wo}
nan["Wq"][1, 0, 2] = np.nan
expect_error(lambda: ac.separate(**nan, V=V), ValueError, 65, ["Wq", "NaN"], "a NaN in Wq")
expect_error(lambda: ac.separate(student=True, d=8, h=4, dp=4, student_heads=[3],
                                 student_steps=1),
             ValueError, 64, ["do not divide"], "student_heads that do not divide d")
expect_error(lambda: ac.separate(student=True, student_heads=[1, 0]), ValueError, 64,
             ["comma-separated"], "a head count 0")
expect_error(lambda: ac.separate(student=True, case=2), ValueError, 64,
             ["does not apply to --student"], "student with case")
expect_error(lambda: ac.separate(student_heads=[1]), ValueError, 64, ["needs --student"],
             "student_heads without student")
expect_error(lambda: ac.separate(embed=True, case=1), ValueError, 64, ["cannot be combined"],
             "embed with case")
expect_error(lambda: ac.separate(tol=2), ValueError, 64, ["tol", "out of range"], "tol = 2")
expect_error(lambda: ac.separate(frobnicate=1), TypeError, None, ["frobnicate"],
             "an unknown keyword")
expect_error(lambda: ac.separate(v_dir=os.path.join(tmp, "none")), ac.AttncheckError, 66,
             ["none/Vq.npy"], "a missing v_dir")
expect_error(lambda: ac.separate(*ac.generate_layers(8, 2, 4, seed=1)[:1],
                                 ac.generate_layers(16, 4, 8, seed=1)[1], 4),
             ValueError, None, ["same d"], "layers of different widths")

subprocess.run(["rm", "-rf", tmp])
print("%d failure(s)" % failures)
sys.exit(1 if failures else 0)
