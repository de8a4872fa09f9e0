#!/usr/bin/env python3
"""Tests of the Python package attncheck (ctypes over libattncheck).

Usage: python_pkg.py ATTNCHECK   (the program of the same build; run by
python_pkg.sh with PYTHONPATH and ATTNCHECK_LIBRARY set).

Oracles: the command line of the same build (same seeds, same numbers: the
package must compute exactly what the program computes), NumPy (the
returned weights and separating inputs re-evaluated independently), and
PyTorch (a checkpoint loaded into stock layers must reproduce the loss the
trainer computed on the same batch).

NumPy tolerance.  NumPy evaluates max|Softmax - P| in double: each softmax
entry exp(l - m)/sum is computed with relative error at most (n + 4) u
(|l - m| + 1) for logits of size |l| (exp, one subtraction, a sum of n
terms, a division; Higham, ASNA 3.5); with entries <= 1 and the logits here
below 100 in size that is below 2e-11 for n <= 16, which is the slack used
when a NumPy value is compared with a certified interval."""
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

import attncheck as ac
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import json_schema  # noqa: E402  (validates --json against schema/, attncheck(1) JSON)

EXE = sys.argv[1]
SLACK = 2e-11
failures = 0


def check(cond, what):
    global failures
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures += 1


def run(*args):
    r = subprocess.run([EXE] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    return r.returncode, r.stdout, r.stderr


def maxdev(X, P, Wq, Wk):
    L = (Wk @ X).T @ (Wq @ X) / math.sqrt(Wq.shape[0])
    S = np.exp(L - L.max(axis=0))
    S /= S.sum(axis=0)
    return np.abs(S - P).max()


def expect_error(fn, exc, status, words, what):
    try:
        fn()
    except exc as e:
        ok = all(w in str(e) for w in words) and (status is None or e.status == status)
        check(ok, "%s -> %s %s" % (what, type(e).__name__, e))
        return
    check(False, what + " raised nothing")


# ---- Theorem 1: the same answer as the program, weights that check -------------
for (d, n, dk, seed) in [(16, 8, 8, 1), (16, 8, 4, 2), (6, 6, 6, 3), (32, 16, 16, 4)]:
    X, P = ac.generate_instance(d, n, seed=seed)
    r = ac.rep_theorem(X, P, dk=dk)
    rc, out, _ = run("rep-theorem", "--d", str(d), "--n", str(n), "--dk", str(dk), "--seed",
                     str(seed), "--json")
    j = json_schema.load(out, "rep-theorem")
    check(r.verdict == j["verdict"] and r.exact == j["exact"]
          and r.distance == (json_schema.lo(j["distance"]["lo"]), json_schema.hi(j["distance"]["hi"])),
          "rep_theorem d=%d n=%d dk=%d seed=%d equals the program: %s [%g, %g]"
          % (d, n, dk, seed, r.verdict, *r.distance))
    check(r.certificate.hi == json_schema.hi(j["certificate"]["hi"])
          and r.certificate.precision == j["certificate"]["precision_bits"],
          "  certificate equal (%s)" % r.certificate)
    if r.Wq is not None:
        dev = maxdev(X, P, r.Wq, r.Wk)
        check(r.Wq.shape == (dk, d) and dev <= r.weights_certificate.hi + SLACK,
              "  weights %s: NumPy max|Softmax - P| = %.3g within the certified [%.3g, %.3g]"
              % (r.Wq.shape, dev, r.weights_certificate.lo, r.weights_certificate.hi))
        c = ac.certify_head(X, P, r.Wq, r.Wk, tol=r.certificate.tau)
        check(c.lo <= dev + SLACK and dev <= c.hi + SLACK,
              "  certify_head on the returned weights: %s" % c)
    check("rep_theorem" in repr(r) and r.verdict in repr(r), "  repr: %r" % r)

# float32 is widened exactly: same answer as the float64 of the same values
X, P = ac.generate_instance(8, 4, seed=5)
X32 = X.astype(np.float32)
r32 = ac.rep_theorem(X32, P, dk=4)
r64 = ac.rep_theorem(X32.astype(np.float64), P, dk=4)
check(r32.distance == r64.distance and np.array_equal(r32.Wq, r64.Wq),
      "float32 X widened exactly (same certificate and weights as its float64 copy)")

# given weights, perturbed: the certificate encloses NumPy's value
X, P = ac.generate_instance(16, 8, seed=6)
r = ac.rep_theorem(X, P, dk=8)
Wq = r.Wq * (1 + 1e-3)
c = ac.certify_head(X, P, Wq, r.Wk, tol=1e-6)
dev = maxdev(X, P, Wq, r.Wk)
check(c.verdict == ("PROVED" if c.hi <= 1e-6 else c.verdict) and c.lo - SLACK <= dev <= c.hi + SLACK,
      "certify_head on perturbed weights: NumPy %.6g in [%.6g, %.6g], %s" % (dev, c.lo, c.hi,
                                                                              c.verdict))

# bad input: library messages as exceptions, shapes checked first
X, P = ac.generate_instance(8, 4, seed=1)
expect_error(lambda: ac.rep_theorem(X, P[:3]), ValueError, None, ["P", "(4, 4)"],
             "P of the wrong shape")
Pbad = P.copy()
Pbad[0, 0] += 0.5
expect_error(lambda: ac.rep_theorem(X, Pbad), ac.AttncheckError, 65, ["P"],
             "P not column-stochastic")
Xnan = X.copy()
Xnan[1, 2] = np.nan
expect_error(lambda: ac.rep_theorem(Xnan, P), ac.AttncheckError, 65, ["X"], "NaN in X")
expect_error(lambda: ac.rep_theorem(X.astype(complex), P), TypeError, None, ["X"],
             "complex X")
r = ac.rep_theorem(X, Pbad, normalize=True)
check(r.verdict in ac.core.VERDICTS, "normalize=True accepts the same P: %s" % r.verdict)

# no silent rounding: an array entry that is not exactly a double, and an
# option the program refuses, are refused with a ValueError naming them
# (never rounded, never replaced by a default).  The class: integers just
# beyond 2^53 of either sign and far beyond it, signed and unsigned; long
# double beyond double's precision and range (below its smallest subnormal,
# above its largest finite); and their exact neighbours, which are accepted
# with the verdict of their float64 copy.
X2 = np.array([[2 ** 53, 2 ** 53], [1, 1]])
P2 = np.array([[0.5, 0.5], [0.5, 0.5]])
rounding = 0
for dt in (np.int64, np.uint64):
    for v in (2 ** 53 + 1, 2 ** 60 + 1, 2 ** 63 - 1):
        for where in ((0, 0), (1, 1)):
            Xi = X2.astype(dt)
            Xi[where] = v
            expect_error(lambda: ac.rep_theorem(Xi, P2, dk=1), ValueError, None,
                         ["X", str(where), str(v), "not exactly a double"],
                         "%s entry %d at %s" % (np.dtype(dt).name, v, where))
            rounding += 1
Xn = X2.astype(np.int64)
Xn[0, 1] = -(2 ** 53 + 1)
expect_error(lambda: ac.rep_theorem(Xn, P2, dk=1), ValueError, None, ["X", "(0, 1)"],
             "int64 entry -(2^53 + 1)")
rounding += 1
for dt in (np.int64, np.uint64):  # exact beyond 2^53: accepted, same as float64
    Xe = X2.astype(dt)
    Xe[0, 0] = 2 ** 60
    check(ac.rep_theorem(Xe, P2, dk=1).verdict == ac.rep_theorem(Xe.astype(np.float64), P2,
                                                                  dk=1).verdict,
          "%s entry 2^60 (exact) accepted as its float64" % np.dtype(dt).name)
ld = np.longdouble
if np.finfo(ld).nmant > 52:
    for what, v in (("1 + eps(long double)", ld(1) + np.finfo(ld).eps),
                    ("2^-1080 (below double's subnormals)", ld(2) ** -1080),
                    ("2^1100 (beyond double's range)", ld(2) ** 1100),
                    ("-(2^53 + 1)", -(ld(2) ** 53 + 1))):
        Xl = X2.astype(ld)
        Xl[1, 0] = v
        expect_error(lambda: ac.rep_theorem(Xl, P2, dk=1), ValueError, None,
                     ["X", "(1, 0)", "not exactly a double"], "long double " + what)
        Pl = P2.astype(ld)
        Pl[1, 0] = v
        expect_error(lambda: ac.rep_theorem(np.eye(2), Pl, dk=1), ValueError, None,
                     ["P", "(1, 0)", "not exactly a double"], "long double in P: " + what)
        rounding += 2
    Xl = X2.astype(ld)
    Xl[1, 0] = ld(2) ** -1074  # the smallest subnormal double: exact
    check(ac.rep_theorem(Xl, P2, dk=1).verdict
          == ac.rep_theorem(Xl.astype(np.float64), P2, dk=1).verdict,
          "long double 2^-1074 (exact) accepted as its float64")
for tol in (-0.5, float("nan"), float("inf"), -0.0 - 1e-300):
    expect_error(lambda: ac.rep_theorem(X, P, tol=tol), ValueError, None, ["tol"],
                 "rep_theorem tol = %r" % tol)
    expect_error(lambda: ac.separate(tol=tol), ValueError, None, ["tol"],
                 "separate tol = %r" % tol)
    rounding += 2
print("python_pkg: %d inputs that would round or be replaced: all refused" % rounding)

A = np.exp(np.random.default_rng(4).standard_normal((4, 4)))
A /= A.sum(axis=1, keepdims=True)
check(ac.rep_theorem(X, A, rows=True).distance == ac.rep_theorem(X, A.T).distance,
      "rows=True checks the transpose of a row-stochastic P")
expect_error(lambda: ac.rep_theorem(X, A), ac.AttncheckError, 65, ["row-stochastic"],
             "a row-stochastic P without rows=True")

# masked heads (doc/mathematics.md §3.8): a boolean mask in memory is the word
Zc = np.random.default_rng(5).standard_normal((4, 4))
Zc = np.where(np.triu(np.ones((4, 4), bool)), Zc, -np.inf)
Pc = np.exp(Zc - Zc.max(axis=0))
Pc /= Pc.sum(axis=0)
rw = ac.rep_theorem(X, Pc, dk=2, mask="causal")
ra = ac.rep_theorem(X, Pc, dk=2, mask=np.triu(np.ones((4, 4), bool)))
rr = ac.rep_theorem(X, Pc.T, dk=2, rows=True, mask=np.tril(np.ones((4, 4), bool)))
check(rw.masked and ra.masked and rw.route == "masked" and
      rw.distance == ra.distance == rr.distance and rw.threshold == ra.threshold == rr.threshold,
      "mask='causal', a boolean array in memory, and its transpose with rows=True agree")
rb = ac.rep_theorem(X, Pc, dk=2, mask="causal", bias=True)
check(rb.bias and (rb.Wq is None or rb.Wq.shape == (2, X.shape[0] + 1)),
      "bias=True: the weights are dk x (d + 1)")
expect_error(lambda: ac.rep_theorem(X, Pc, mask=np.ones((3, 3))), ac.AttncheckError, 65,
             ["mask", "(4, 4)"], "a mask of the wrong shape")
expect_error(lambda: ac.rep_theorem(X, Pc, mask=np.eye(4)), ac.AttncheckError, 65,
             ["P"], "P positive off the mask")

# ---- Theorem 2 ------------------------------------------------------------------
for (d, h, dp, n, case, seed) in [(8, 2, 4, 4, 1, 1), (16, 4, 8, 4, 0, 2), (8, 2, 4, 3, 2, 3)]:
    W, V = ac.generate_layers(d, h, dp, case=case, seed=seed)
    s = ac.separate(W, V, n, seed=seed)
    args = ["separate", "--d", str(d), "--h", str(h), "--dp", str(dp), "--n", str(n),
            "--seed", str(seed), "--json"] + (["--case", str(case)] if case else [])
    rc, out, err = run(*args)
    j = json_schema.load(out, "separate") if out else {}
    check(s.verdict == j.get("verdict"),
          "separate d=%d h=%d dp=%d n=%d case=%d: %s, the program says %s"
          % (d, h, dp, n, case, s.verdict, j.get("verdict")))
    if s.X is not None:
        f, g = W(s.X), V(s.X)
        rel = np.linalg.norm(f - g) / (np.linalg.norm(f) + np.linalg.norm(g))
        check(rel >= s.relative_gap_lo * (1 - 1e-9),
              "  NumPy relative gap %.6g >= certified %.6g at the returned X" % (
                  rel, s.relative_gap_lo))
expect_error(lambda: ac.separate(*ac.generate_layers(8, 2, 4, seed=1)[:1],
                                 ac.generate_layers(16, 4, 8, seed=1)[1], 4),
             ValueError, None, ["same d"], "layers of different widths")

check(ac.core._lo3(0.99996) == "0.999" and ac.core._lo3(1.0) == "1.0" and ac.core._lo3(0.5) == "0.5",
      "lower bounds print rounded down (0.99996 -> 0.999)")

# ---- Theorem 3.2: the program's numbers ------------------------------------------
c = ac.condition([1, 2], seq=16, head_dim=4, trials=20, seed=1)
rc, out, _ = run("condition", "--heads", "1,2", "--seq", "16", "--head-dim", "4", "--trials",
                 "20", "--seed", "1", "--json")
j = json_schema.load(out, "condition")
same = all(row.median == res["stats"]["median"] and row.mean == res["stats"]["mean"]
           for row, res in zip(c.rows, j["results"]))
check(same and len(c.rows) == 2, "condition medians equal the program's: %s"
      % [round(r.median, 6) for r in c.rows])
check(all(len(r.kappa) == 20 and np.all(r.kappa >= 1) for r in c.rows),
      "condition returns every sampled kappa (>= 1)")
expect_error(lambda: ac.condition([1], seq=16, head_dim=4, mode="gauss"), ValueError, None,
             ["mode"], "unknown mode")
expect_error(lambda: ac.condition([0], seq=16, head_dim=4, trials=2), ac.AttncheckError, 64,
             [], "zero heads")

# ---- checkpoints in PyTorch ---------------------------------------------------------
try:
    import torch
except ImportError:
    torch = None
    print("skip checkpoints: no torch")

if torch is not None:
    torch.set_default_dtype(torch.float64)
    tmp = tempfile.mkdtemp()
    text = os.path.join(tmp, "text.txt")
    with open(text, "w") as f:
        f.write("the quick brown fox jumps over the lazy dog. " * 40)
    for extra in ([], ["--attention", "fixed", "--head-dim", "4"]):
        ck = os.path.join(tmp, "ck%d" % len(extra))
        rc, out, err = run("train", "--task", "text", "--text", text, "--steps", "3", "--width",
                           "16", "--layers", "2", "--heads", "2", "--seq", "16", "--batch", "2",
                           "--dump-grads", ck, *extra)
        check(rc == 0, "train --dump-grads %s (%s)" % (" ".join(extra) or "standard", err.strip()[-80:]))
        m = ac.load_checkpoint(ck)
        kind = type(m.blocks[0]).__name__
        tok = torch.from_numpy(np.load(os.path.join(ck, "batch.tokens.npy")).astype(np.int64))
        tgt = torch.from_numpy(np.load(os.path.join(ck, "batch.targets.npy")).astype(np.int64))
        loss = float(np.load(os.path.join(ck, "loss.npy")).ravel()[0])
        with torch.no_grad():
            lg = m(tok)
            ours = float(torch.nn.functional.cross_entropy(lg.reshape(-1, lg.shape[-1]),
                                                           tgt.reshape(-1)))
        # tolerance of tests/train_torch.py: 2*16*12(L+2) n u, n the longest reduction
        tol = 2 * 16 * 12 * 4 * 95 * 2.0 ** -53
        check(abs(ours - loss) <= tol * abs(loss),
              "load_checkpoint (%s blocks): loss %.15g vs the trainer's %.15g" % (kind, ours,
                                                                                  loss))
        if extra:
            continue
        check(kind == "TransformerEncoderLayer", "standard heads load as stock layers")
        with torch.no_grad():
            m.blocks[1].linear1.weight.mul_(0.5)
        out2 = os.path.join(tmp, "changed")
        ac.save_checkpoint(m, out2)
        m2 = ac.load_checkpoint(out2)
        check(torch.equal(m2.blocks[1].linear1.weight, m.blocks[1].linear1.weight),
              "save_checkpoint then load_checkpoint: the change survives")
        rc, out, err = run("train", "--resume", out2, "--steps", "4")
        check(rc == 0, "train --resume accepts the saved checkpoint (exit %d %s)" % (
            rc, err.strip()[-120:]))
        with open(os.path.join(out2, "Wrong.npy"), "w"):
            pass
        np.save(os.path.join(out2, "lnf.weight.npy"), np.zeros(16))
        expect_error(lambda: ac.load_checkpoint(out2), ac.AttncheckError, 65, ["checksum"],
                     "a changed tensor file")
    # fit-p: learned Wq, Wk from a checkpoint, changed, saved, certified
    X, P = ac.generate_instance(8, 6, seed=3)
    np.save(os.path.join(tmp, "X.npy"), X)
    np.save(os.path.join(tmp, "P.npy"), P)
    ck = os.path.join(tmp, "fitp")
    rc, out, err = run("train", "--task", "fit-p", "--x", os.path.join(tmp, "X.npy"), "--p",
                       os.path.join(tmp, "P.npy"), "--steps", "300", "--save", ck)
    check(rc in (0, 1, 2), "train --task fit-p --save (exit %d)" % rc)
    m = ac.load_checkpoint(ck)
    Wq, Wk = m.Wq.detach().numpy().copy(), m.Wk.detach().numpy().copy()
    c1 = ac.certify_head(X, P, Wq, Wk, tol=1e-3)
    d1 = maxdev(X, P, Wq, Wk)
    with torch.no_grad():
        m.Wq.mul_(1.01)
    ck2 = os.path.join(tmp, "fitp2")
    ac.save_checkpoint(m, ck2)
    m2 = ac.load_checkpoint(ck2)
    Wq2 = m2.Wq.detach().numpy()
    c2 = ac.certify_head(X, P, Wq2, Wk, tol=1e-3)
    d2 = maxdev(X, P, Wq2, Wk)
    check(c1.lo - SLACK <= d1 <= c1.hi + SLACK and c2.lo - SLACK <= d2 <= c2.hi + SLACK
          and np.array_equal(Wq2, Wq * 1.01),
          "fit-p weights certified before (%.3g) and after a change in torch (%.3g)" % (d1, d2))

# ---- train, report: the program's runs, through the library -----------------------
TIMING = ("seconds", "tokens_per_s", "threads")


def untimed(d):
    if isinstance(d, dict):
        return {k: untimed(v) for k, v in d.items() if k not in TIMING}
    if isinstance(d, list):
        return [untimed(v) for v in d]
    return d


check(set(p for p in __import__("inspect").signature(ac.train).parameters) ==
      set(o["python"] for o in ac.COMMANDS["train"]["options"] if not o["program_only"]),
      "train: a keyword for every option of the table but the program's")
for args, kw in [(("--task", "fit-p", "--n", "6", "--steps", "40", "--optimizer", "adamw"),
                  dict(task="fit-p", n=6, steps=40, optimizer="adamw")),
                 (("--task", "fit-p", "--n", "5", "--d", "3", "--steps", "30", "--tol", "0.5"),
                  dict(task="fit-p", n=5, d=3, steps=30, tol=0.5)),
                 (("--task", "listops", "--layers", "1", "--heads", "2", "--width", "16", "--seq",
                   "24", "--steps", "4", "--batch", "2"),
                  dict(task="listops", layers=1, heads=2, width=16, seq=24, steps=4, batch=2))]:
    rc, out, _ = run("train", *args, "--quiet", "--json")
    j = json_schema.load(out, "train")
    t = ac.train(**kw)
    check(untimed(t.json) == untimed(j) and t.status == rc,
          "train(%s) is the program's run (%s, exit %d)" % (kw, t.verdict, rc))
X, P = ac.generate_instance(8, 6, seed=3)
np.save(os.path.join(tempfile.gettempdir(), "tX.npy"), X)
np.save(os.path.join(tempfile.gettempdir(), "tP.npy"), P)
with tempfile.TemporaryDirectory() as tmp:
    ck = os.path.join(tmp, "ck")
    t = ac.train(task="fit-p", X=X, P=P, optimizer="adamw", steps=3000, tol=1e-3, save=ck)
    cfg = json.load(open(os.path.join(ck, "config.json")))
    Wq, Wk = np.load(os.path.join(ck, "Wq.npy")), np.load(os.path.join(ck, "Wk.npy"))
    c = ac.certify_head(X, P, Wq, Wk, tol=1e-3)
    check(np.array_equal(t.Wq, Wq) and np.array_equal(t.Wk, Wk) and t.Wq.shape == (8, 8)
          and cfg["step"] == t.checkpoint_step == t.best.step
          and (c.lo, c.hi) == (t.certificate.lo, t.certificate.hi) and c.verdict == t.verdict,
          "train(save=...): the checkpoint holds the weights certified (step %d, %s)"
          % (t.checkpoint_step, t.verdict))
    d = maxdev(X, P, t.Wq, t.Wk)
    check(t.certificate.lo - SLACK <= d <= t.certificate.hi + SLACK,
          "  NumPy max|Softmax - P| %.6g within the certified [%.6g, %.6g]"
          % (d, t.certificate.lo, t.certificate.hi))
    f = ac.train(task="fit-p", X=os.path.join(tempfile.gettempdir(), "tX.npy"),
                 P=os.path.join(tempfile.gettempdir(), "tP.npy"), optimizer="adamw",
                 steps=3000, tol=1e-3)
    check(untimed(f.best.json) == untimed(t.best.json) and f.certificate.hi == t.certificate.hi,
          "train: X, P as arrays or as .npy files, the same run")
expect_error(lambda: ac.train(task="fit-p", steps=0), ac.InputError, 64, ["steps"],
             "train steps=0")
expect_error(lambda: ac.train(task="text", n=3), ac.InputError, 64, ["does not apply"],
             "train: an option of another task")
expect_error(lambda: ac.train(n=3), ac.InputError, 64, ["--task is required"], "train: no task")
Xn = X.copy()
Xn[0, 0] = np.nan
expect_error(lambda: ac.train(task="fit-p", X=Xn, P=P, steps=2), ac.InputError, 65, ["NaN"],
             "train: NaN in X")
expect_error(lambda: ac.train(task="fit-p", X=X, P=P[:3]), ValueError, None, ["P"],
             "train: P of the wrong shape")
rc, out, _ = run("report", "--quick", "--json")
j = json_schema.load(out, "report")
r = ac.report(quick=True)
mine = untimed(r.json)["rows"]  # in order: two rows may share a claim (Thm 2 F in G)
theirs = untimed(j)["rows"]
check(len(mine) >= 20 and mine == theirs
      and r.as_expected + r.contradicting + r.undecided == len(mine),
      "report(quick=True): %d rows, each the program's (%d as expected)"
      % (len(mine), r.as_expected))

print("%d failure(s)" % failures)
sys.exit(1 if failures else 0)
