#!/usr/bin/env python3
"""t1_mask_hostile.py — a seeded hostile suite for Theorem 1 on masked heads
and heads with biases (doc/mathematics.md §3.8), re-checked by independent
oracles through the test program tests/t1_mask_tool (ac_t1_check,
ac_t1_threshold_at_tol, ac_head_certify_masked on .npy files).

Classes (every instance seeded; X, P and the mask written as .npy files):
  dyadic       causal / padding / causal+padding, P with power-of-two entries
               (each visible column a dyadic partition of 1), integer X of
               rank n: the least rank is exact in rationals (fractions)
  dirichlet    causal / padding / causal+padding, Dirichlet columns on the
               visible keys, Gaussian X (d >= n): generic ranks (mpmath)
  lowrank      causal patterns of logits of known rank r (P = Softmax_Omega
               of r-dimensional keys and queries): the head size at tol is
               <= r, and exactly r when n >= 2r + 2 and the logits are large
  band         causal sliding windows: a range (Lemma W on a sub-staircase,
               Lemma G), checked against the oracle's own witnesses
  general      random boolean masks (every query sees a key)
  wide         d < n (Gaussian X of full row rank), causal masks: the masked
               log-domain residual in mpmath (least squares on all of Omega,
               not the tool's one-column dual certificate)
  degenerate   X with repeated columns (rank < n)
  bias         biased heads (X with a row of ones): d < n and d >= n
  scaled       X of dyadic/dirichlet instances times 2^-600 and 2^600
  tiny         n = 1 and n = 2
  certify      the masked head certification of random heads against mpmath
               at 50 digits (large and tiny weights, every mask kind)
  bad          malformed input: P nonzero off the mask, zero on it, a query
               that sees no key, columns off 1, a mask of the wrong size

Oracles (none uses attncheck's code): exact rational ranks (fractions) of
[E 1] for dyadic blocks; mpmath at 50 digits for the centred blocks of
log P (a rank is the count of singular values above 1e-30 times the
largest: every instance here is either exactly structured or far from the
cut), for the masked error of the weights the tool wrote, for the masked
residual of d < n, and for the least rank: Woerdeman's construction (a
staircase) or keys in general position (Lemma G), each carried out at 50
digits and its rank counted, as witnesses that a rank is reachable.

A verdict is WRONG if it contradicts an oracle: exact PROVED at dk while the
oracle's least rank (or its certified lower bound) exceeds dk; exact REFUTED
while the oracle has a witness of rank <= dk; C(tol) PROVED while the
written weights (50 digits) are off by more than tol and P is not exactly
representable within the normalisation gap; C(tol) REFUTED with dist.lo above
the written weights' error or with a witness within tol; a threshold range
that excludes the oracle's least rank; a certified enclosure that misses
the 50-digit value.  UNDECIDED is never wrong; each one is listed with the
reason the tool gives.
Usage: t1_mask_hostile.py TOOL [smoke|full]
"""
import json
import os
import subprocess
import sys
import tempfile
import time
from fractions import Fraction

try:
    import numpy as np
    import mpmath as mp
except ImportError:
    print("numpy or mpmath not available: skipped")
    sys.exit(77)

mp.mp.dps = 50
CUT = mp.mpf("1e-30")
TOL = 2.0 ** -26
tool = sys.argv[1]
mode = sys.argv[2] if len(sys.argv) > 2 else "smoke"


# ---- masks ----------------------------------------------------------------------

def support(n, causal=False, window=0, valid=None, keep=None):
    """Omega (n x n bool, row = key): the conjunction of the parts set."""
    I, J = np.indices((n, n))
    om = np.ones((n, n), bool)
    if causal:
        om &= I <= J
    if window:
        om &= np.abs(I - J) < window
    if valid is not None:
        om &= np.asarray(valid, bool)[:, None]
    if keep is not None:
        om &= np.asarray(keep, bool)
    return om


def mask_args(d, spec):
    """Command-line options of t1_mask_tool for the mask spec (files in d)."""
    args = []
    if spec.get("causal"):
        args.append("--causal")
    if spec.get("window"):
        args += ["--window", str(spec["window"])]
    if spec.get("valid") is not None:
        np.save(os.path.join(d, "valid.npy"), np.asarray(spec["valid"], float))
        args += ["--valid", os.path.join(d, "valid.npy")]
    if spec.get("keep") is not None:
        np.save(os.path.join(d, "keep.npy"), np.asarray(spec["keep"], float))
        args += ["--keep", os.path.join(d, "keep.npy")]
    return args


# ---- exact and 50-digit linear algebra ------------------------------------------

def frac_rank(rows):
    """Rank of a list of rows of Fractions (exact elimination)."""
    echelon = []
    r = 0
    for row in rows:
        v = list(row)
        for piv, e in echelon:
            if v[piv] != 0:
                f = v[piv] / e[piv]
                v = [a - f * b for a, b in zip(v, e)]
        nz = [j for j, a in enumerate(v) if a != 0]
        if nz:
            echelon.append((nz[0], v))
            r += 1
    return r


def mp_rank(M):
    """Numerical rank at 50 digits (cut 1e-30 relative, absolute 1e-30 for 0)."""
    if M.rows == 0 or M.cols == 0:
        return 0
    s = mp.svd_r(M, compute_uv=False)
    top = max([abs(x) for x in s] + [mp.mpf(1)])
    return sum(1 for x in s if abs(x) > CUT * top)


def mp_log(P):
    n = P.shape[0]
    L = mp.matrix(n, n)
    for i in range(n):
        for j in range(n):
            if P[i, j] > 0:
                L[i, j] = mp.log(mp.mpf(float(P[i, j])))
    return L


def block_rank(P, L, I, J, dyadic):
    """rank([log P_IJ 1]) - 1, exactly (dyadic) or at 50 digits."""
    if len(I) <= 1 or len(J) == 0:
        return 0
    if dyadic:
        rows = []
        for i in I:
            rows.append([Fraction(int(np.log2(P[i, j]))) for j in J] + [Fraction(1)])
        return frac_rank(rows) - 1
    M = mp.matrix(len(I), len(J))
    for b, j in enumerate(J):
        m = sum(L[i, j] for i in I) / len(I)
        for a, i in enumerate(I):
            M[a, b] = L[i, j] - m
    return mp_rank(M)


def staircase(om):
    """Keys by |R_i| desc; (is_chain, blocks [(I, J)])."""
    n = om.shape[0]
    keys = sorted([i for i in range(n) if om[i].any()], key=lambda i: (-om[i].sum(), i))
    sets = [frozenset(np.where(om[i])[0]) for i in keys]
    chain = all(sets[t + 1] <= sets[t] for t in range(len(sets) - 1))
    blocks = []
    for t, S in enumerate(sets):
        if t == 0 or S != sets[t - 1]:
            blocks.append([t, S])
        blocks[-1][0] = t
    out = [(keys[:b[0] + 1], sorted(b[1])) for b in blocks]
    return chain, out


def least_rank_staircase(P, om, dyadic):
    """Lemma W's sum with exact (dyadic) or 50-digit ranks."""
    chain, blocks = staircase(om)
    assert chain
    L = None if dyadic else mp_log(P)
    tau = 0
    for k, (I, J) in enumerate(blocks):
        tau += block_rank(P, L, I, J, dyadic)
        if k + 1 < len(blocks):
            tau -= block_rank(P, L, I, blocks[k + 1][1], dyadic)
    return tau


def woerdeman_witness(P, om):
    """Woerdeman's construction at 50 digits (an independent implementation):
    the rank of the completed [N 1] minus 1, a reachable rank."""
    n = P.shape[0]
    chain, blocks = staircase(om)
    L = mp_log(P)
    M = mp.matrix(n, n + 1)
    for i in range(n):
        M[i, n] = 1
        for j in range(n):
            if om[i, j]:
                M[i, j] = L[i, j]
    prev = []
    for k, (I, J) in enumerate(blocks):
        new = [i for i in I if i not in prev]
        if prev:
            cols = list(J) + [n]
            U = mp.matrix(len(prev), len(cols))
            for a, i in enumerate(prev):
                for b, j in enumerate(cols):
                    U[a, b] = M[i, j]
            # least-squares coefficients by the SVD at 50 digits (cut 1e-30)
            Uu, s, Vt = mp.svd_r(U)
            top = max([abs(x) for x in s] + [mp.mpf(1)])
            for i in new:
                v = mp.matrix(1, len(cols))
                for b, j in enumerate(cols):
                    v[0, b] = M[i, j]
                # w = v V S^-1 U'
                w = mp.matrix(1, len(prev))
                for t in range(len(s)):
                    if abs(s[t]) > CUT * top:
                        c = sum(v[0, b] * Vt[t, b] for b in range(len(cols))) / s[t]
                        for a in range(len(prev)):
                            w[0, a] += c * Uu[a, t]
                for j in range(n):
                    if j not in J:
                        M[i, j] = sum(w[0, a] * M[prev[a], j] for a in range(len(prev)))
        prev = prev + new
    for i in range(n):  # keys no query sees: a copy of a completed row
        if not om[i].any():
            for j in range(n):
                M[i, j] = M[prev[0], j]
    return mp_rank(M) - 1


def general_position_witness(P, om, rho, seed=5):
    """Lemma G at 50 digits: keys (k_i, 1) random, each query solved on its
    visible keys; returns True if every equation holds (a witness tau <= rho)."""
    n = P.shape[0]
    rng = np.random.default_rng(seed)
    K = mp.matrix(rng.standard_normal((n, rho + 1)).tolist())
    for i in range(n):
        K[i, rho] = 1
    L = mp_log(P)
    for j in range(n):
        I = list(np.where(om[:, j])[0])
        if len(I) > rho + 1:
            return False
        A = mp.matrix([[K[i, k] for k in range(rho + 1)] for i in I])
        b = mp.matrix([L[i, j] for i in I])
        q = mp.lu_solve(A.T * A + mp.mpf("1e-45") * mp.eye(rho + 1), A.T * b) \
            if len(I) < rho + 1 else mp.lu_solve(A, b)
        r = A * q - b
        if max(abs(x) for x in r) > mp.mpf("1e-25"):
            return False
    return True


def masked_residual(X, P, om):
    """min over c, A of ||(X'AX + 1c' - log P) on Omega|| at 50 digits (least
    squares on the design matrix of all of Omega)."""
    d, n = X.shape
    idx = [(i, j) for i in range(n) for j in range(n) if om[i, j]]
    Xm = mp.matrix(X.tolist())
    cols = d * d + n
    D = mp.matrix(len(idx), cols)
    y = mp.matrix(len(idx), 1)
    for r_, (i, j) in enumerate(idx):
        for a in range(d):
            for b in range(d):
                D[r_, a * d + b] = Xm[a, i] * Xm[b, j]
        D[r_, d * d + j] = 1
        y[r_] = mp.log(mp.mpf(float(P[i, j])))
    U, s, Vt = mp.svd_r(D)
    top = max([abs(x) for x in s] + [mp.mpf(1)])
    proj = mp.matrix(len(idx), 1)
    for t in range(len(s)):
        if abs(s[t]) > CUT * top:
            c = sum(U[k, t] * y[k] for k in range(len(idx)))
            for k in range(len(idx)):
                proj[k] += c * U[k, t]
    return mp.sqrt(sum((y[k] - proj[k]) ** 2 for k in range(len(idx))))


def mp_masked_error(X, Wk, Wq, P, om):
    """max |Softmax_Omega((Wk X)'(Wq X)/sqrt(dk)) - P| at 50 digits."""
    dk = Wk.shape[0]
    n = X.shape[1]
    Xm = mp.matrix(X.tolist())
    K = mp.matrix(Wk.tolist()) * Xm
    Q = mp.matrix(Wq.tolist()) * Xm
    e = mp.mpf(0)
    for j in range(n):
        I = [i for i in range(n) if om[i, j]]
        z = [sum(K[k, i] * Q[k, j] for k in range(dk)) / mp.sqrt(dk) for i in I]
        m = max(z)
        ex = [mp.exp(v - m) for v in z]
        s = sum(ex)
        for a, i in enumerate(I):
            e = max(e, abs(ex[a] / s - mp.mpf(float(P[i, j]))))
        for i in range(n):
            if not om[i, j]:
                e = max(e, abs(mp.mpf(float(P[i, j]))))
    return e


# ---- instances -------------------------------------------------------------------

def dirichlet_on(rng, om):
    n = om.shape[0]
    P = np.zeros((n, n))
    for j in range(n):
        I = np.where(om[:, j])[0]
        g = rng.gamma(1.0, size=len(I))
        P[I, j] = g / g.sum()
    return P


def dyadic_on(rng, om):
    n = om.shape[0]
    P = np.zeros((n, n))
    for j in range(n):
        I = list(np.where(om[:, j])[0])
        col = [1.0]
        while len(col) < len(I):
            k = int(rng.integers(len(col)))
            h = col.pop(k) / 2
            col += [h, h]
        rng.shuffle(col)
        P[I, j] = col
    return P


def softmax_on(Z, om):
    n = Z.shape[0]
    P = np.zeros((n, n))
    for j in range(n):
        I = np.where(om[:, j])[0]
        z = Z[I, j] - Z[I, j].max()
        e = np.exp(z)
        P[I, j] = e / e.sum()
    return P


def int_x(rng, d, n):
    while True:
        X = rng.integers(-3, 4, (d, n)).astype(float)
        if np.linalg.matrix_rank(X) == min(d, n):
            return X


def instances(full):
    rng = np.random.default_rng(20270203)
    out = []

    def add(cls, X, P, spec, dk, tol=None, bias=False, kind="check"):
        out.append(dict(cls=cls, X=X, P=P, spec=spec, dk=dk, tol=tol, bias=bias, kind=kind))

    def valid_keys(n, causal):
        v = np.ones(n, bool)
        k = max(1, n // 3)
        v[rng.choice(np.arange(1, n), size=min(k, n - 1), replace=False)] = False
        return v
    # dyadic, exact in rationals
    for n in ((2, 3, 4, 5, 6, 7) if full else (3, 5)):
        X = int_x(rng, n + int(rng.integers(0, 2)), n)
        for spec in ({"causal": True}, {"valid": valid_keys(n, False)},
                     {"causal": True, "valid": valid_keys(n, True)}):
            om = support(n, **spec)
            P = dyadic_on(rng, om)
            for dk in sorted(set([max(1, n // 2 - 1), max(1, n // 2), n // 2 + 1])):
                add("dyadic", X, P, spec, dk, tol=0.0 if dk == n // 2 else None)
    # Dirichlet, generic
    for n in ((4, 6, 8, 10, 12) if full else (6, 9)):
        X = rng.standard_normal((n + 1, n))
        for spec in ({"causal": True}, {"valid": valid_keys(n, False)},
                     {"causal": True, "valid": valid_keys(n, True)}):
            om = support(n, **spec)
            P = dirichlet_on(rng, om)
            for dk in (max(1, n // 2 - 1), n // 2):
                add("dirichlet", X, P, spec, dk)
    # logits of known rank r
    for (n, r, scale) in ((((8, 2, 3.0), (10, 3, 3.0), (12, 2, 0.3), (12, 4, 2.0), (16, 3, 2.0),
                           (9, 4, 2.0)) if full else ((8, 2, 3.0), (10, 3, 2.0)))):
        X = rng.standard_normal((n, n))
        A = rng.standard_normal((n, r)) @ rng.standard_normal((r, n)) * scale / np.sqrt(r)
        Z = X.T @ A @ X / n
        om = support(n, causal=True)
        P = softmax_on(Z, om)
        for dk in (r - 1, r):
            if dk >= 1:
                add("lowrank", X, P, {"causal": True}, dk)
        add("lowrank", X, P, {"causal": True}, r, kind="threshold")
        out[-1]["r"] = r
    # sliding windows and general masks
    for (n, w) in (((8, 3), (10, 4), (12, 5), (9, 2)) if full else ((8, 3),)):
        X = rng.standard_normal((n, n))
        spec = {"causal": True, "window": w}
        P = dirichlet_on(rng, support(n, **spec))
        for dk in (max(1, w // 2 - 1), w // 2, w - 1):
            add("band", X, P, spec, dk)
    for k in range(5 if full else 2):
        n = int(rng.integers(4, 9))
        keep = rng.random((n, n)) < 0.5
        for j in range(n):
            keep[int(rng.integers(n)), j] = True
        spec = {"keep": keep}
        X = rng.standard_normal((n + 1, n))
        P = dirichlet_on(rng, support(n, **spec))
        for dk in (1, max(1, int(support(n, **spec).sum(axis=0).max()) - 1)):
            add("general", X, P, spec, dk)
    # d < n
    for (d, n) in (((2, 5), (3, 6), (2, 7), (4, 6)) if full else ((2, 6),)):
        X = rng.standard_normal((d, n))
        spec = {"causal": True}
        om = support(n, **spec)
        add("wide", X, dirichlet_on(rng, om), spec, d)
        A = rng.standard_normal((d, d))
        add("wide", X, softmax_on(X.T @ A @ X, om), spec, d)  # representable, rounded
    # repeated columns
    for n in ((5, 7) if full else (5,)):
        B = rng.standard_normal((n, n - 2))
        X = np.hstack([B, B[:, :2]])
        spec = {"causal": True}
        om = support(n, **spec)
        add("degenerate", X, dirichlet_on(rng, om), spec, 2)
        add("degenerate", X, softmax_on(X.T @ rng.standard_normal((n, n)) @ X / n, om), spec,
            n - 2)
    # biases
    for (d, n) in (((2, 5), (3, 5), (6, 6)) if full else ((2, 5),)):
        X = rng.standard_normal((d, n))
        spec = {"causal": True}
        om = support(n, **spec)
        add("bias", X, dirichlet_on(rng, om), spec, min(d, n - 1), bias=True)
        Wk, Wq = rng.standard_normal((2, d)), rng.standard_normal((2, d))
        bk, bq = rng.standard_normal(2), rng.standard_normal(2)
        Z = (Wk @ X + bk[:, None]).T @ (Wq @ X + bq[:, None]) / np.sqrt(2)
        add("bias", X, softmax_on(Z, om), spec, 2, bias=True)
    # scales
    for s in ((2.0 ** -600, 2.0 ** 600) if full else (2.0 ** -600,)):
        n = 5
        X = int_x(rng, n, n) * s
        om = support(n, causal=True)
        add("scaled", X, dyadic_on(rng, om), {"causal": True}, 2)
        add("scaled", rng.standard_normal((n, n)) * s, dirichlet_on(rng, om), {"causal": True}, 2)
    # n = 1, 2
    add("tiny", np.array([[1.5]]), np.array([[1.0]]), {"causal": True}, 1, tol=0.0)
    add("tiny", np.array([[1.0, 2.0], [0.0, 1.0]]), np.array([[1.0, 0.25], [0.0, 0.75]]),
        {"causal": True}, 1, tol=0.0)
    add("tiny", np.array([[1.0, 2.0]]), np.array([[1.0, 0.5], [0.0, 0.5]]), {"causal": True}, 1)
    add("tiny", np.array([[1.0, 2.0]]), np.array([[0.5, 0.5], [0.5, 0.5]]), {}, 1, tol=0.0)
    # the masked head certification
    for k in range(12 if full else 4):
        n = int(rng.integers(2, 8))
        d = int(rng.integers(1, 6))
        dk = int(rng.integers(1, 4))
        kinds = ({"causal": True}, {"causal": True, "window": 2},
                 {"valid": np.r_[True, rng.random(n - 1) < 0.6]},
                 {"keep": np.logical_or(rng.random((n, n)) < 0.5, np.eye(n, dtype=bool))})
        spec = kinds[k % 4]
        om = support(n, **spec)
        X = rng.standard_normal((d, n)) * (10.0 ** int(rng.integers(-3, 4)))
        P = dirichlet_on(rng, om)
        wscale = 10.0 ** int(rng.integers(-2, 3))
        add("certify", X, P, spec, dk, kind="certify")
        out[-1]["W"] = (rng.standard_normal((dk, d)) * wscale, rng.standard_normal((dk, d)) * wscale)
    # malformed input
    n = 4
    om = support(n, causal=True)
    P = dirichlet_on(rng, om)
    bad = P.copy()
    bad[2, 1] = 1e-3
    add("bad", np.eye(n), bad, {"causal": True}, 2, kind="bad")
    bad = P.copy()
    bad[0, 3] = 0.0
    add("bad", np.eye(n), bad, {"causal": True}, 2, kind="bad")
    add("bad", np.eye(n), P * 1.01, {"causal": True}, 2, kind="bad")
    add("bad", np.eye(n), dirichlet_on(rng, support(n, valid=[1, 1, 1, 1])),
        {"valid": [1, 1, 0]}, 2, kind="bad")
    add("bad", np.eye(n), P, {"keep": np.triu(np.ones((n, n)))[:, :3] > 0}, 2, kind="bad")
    add("bad", np.eye(n), P, {"causal": True, "valid": [0, 1, 1, 1]}, 2, kind="bad")
    return out


# ---- one instance --------------------------------------------------------------

def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def oracle_bounds(inst):
    """(lo, hi, witness_hi) for the least rank tau on Omega with rank X = n,
    from the oracle's own computations, or None where it has none."""
    X, P, spec = inst["X"], inst["P"], inst["spec"]
    n = P.shape[0]
    om = support(n, **spec)
    dyadic = bool(np.all(np.frexp(P[om])[0] == 0.5))
    chain, blocks = staircase(om)
    if chain:
        tau = least_rank_staircase(P, om, dyadic)
        wit = woerdeman_witness(P, om)
        return tau, tau, wit
    # not a staircase: the best triangle of consecutive keys as a lower bound,
    # Lemma G's witness as an upper bound
    lo = 0
    L = mp_log(P)
    for s in range(n):
        for e in range(s + 1, n + 1):
            keys = list(range(s, e))
            T = set(range(n))
            sub = np.zeros_like(om)
            for i in keys:
                T &= set(np.where(om[i])[0])
                for j in T:
                    sub[i, j] = True
            if not sub.any():
                continue
            c, bl = staircase(sub)
            v = 0
            for k, (I, J) in enumerate(bl):
                v += block_rank(P, L, I, J, False)
                if k + 1 < len(bl):
                    v -= min(len(I) - 1, len(bl[k + 1][1]))
            lo = max(lo, v)
    rho = int(om.sum(axis=0).max()) - 1
    hi = rho if general_position_witness(P, om, max(rho, 0)) else None
    return lo, None, hi


def check_instance(inst, tmp, idx):
    d_ = os.path.join(tmp, "i%d" % idx)
    os.makedirs(d_, exist_ok=True)
    X, P, spec, dk = inst["X"], inst["P"], inst["spec"], inst["dk"]
    n = P.shape[0]
    om = support(n, **spec) if inst["kind"] != "bad" else None
    np.save(os.path.join(d_, "X.npy"), X)
    np.save(os.path.join(d_, "P.npy"), P)
    margs = mask_args(d_, spec)
    extra = ["--bias"] if inst["bias"] else []
    if inst["tol"] is not None:
        extra += ["--tol", repr(inst["tol"])]
    bad, note = [], ""
    if inst["kind"] == "bad":
        rc, out, err = run([tool, "check", os.path.join(d_, "X.npy"), os.path.join(d_, "P.npy"),
                            "--dk", str(dk)] + margs)
        if rc != 65 or "\n" in err.strip() or not err.strip():
            bad.append("bad input: exit %d, message %r" % (rc, err.strip()))
        return bad, "EDATA", err.strip()
    if inst["kind"] == "certify":
        Wk, Wq = inst["W"]
        np.save(os.path.join(d_, "Wk.npy"), Wk)
        np.save(os.path.join(d_, "Wq.npy"), Wq)
        rc, out, err = run([tool, "certify", os.path.join(d_, "X.npy"), os.path.join(d_, "P.npy"),
                            os.path.join(d_, "Wk.npy"), os.path.join(d_, "Wq.npy")] + margs)
        if rc != 0:
            return ["exit %d: %s" % (rc, err.strip())], "ERROR", ""
        j = json.loads(out)
        e = mp_masked_error(X, Wk, Wq, P, om)
        for lo, hi, name in ((j["lo"], j["hi"], "certificate"),
                             (j["stage0_lo"], j["stage0_hi"], "stage 0")):
            hi = float("inf") if hi is None else hi
            if not (mp.mpf(lo) <= e <= mp.mpf(hi)):
                bad.append("%s [%r, %r] misses the 50-digit error %s" % (name, lo, hi,
                                                                          mp.nstr(e, 17)))
        return bad, j["verdict"], ""
    if inst["kind"] == "threshold":
        rc, out, err = run([tool, "threshold", os.path.join(d_, "X.npy"),
                            os.path.join(d_, "P.npy"), "--at", str(max(1, inst["r"] - 1))] + margs + extra)
        if rc != 0:
            return ["exit %d: %s" % (rc, err.strip())], "ERROR", ""
        j = json.loads(out)
        r = inst["r"]
        # the generating head of size r is within rounding of P: C(tol) holds at r
        if j["lo"] > r:
            bad.append("head size at tol: lo %d > r = %d, but a head of size r reaches P" %
                       (j["lo"], r))
        for ev in j["evals"]:
            if ev["verdict"] == "REFUTED" and ev["dk"] >= r:
                bad.append("REFUTED at dk = %d >= r = %d" % (ev["dk"], r))
        v = "PROVED" if j["exact"] else "UNDECIDED"
        note = "head size at tol in [%s, %s] (r = %d)%s" % (j["lo"], j["hi"], r,
                                                              "" if j["exact"] else
                                                              ": " + j["method"])
        inst["tt"] = (j["lo"], j["hi"])
        return bad, v, note
    rc, out, err = run([tool, "check", os.path.join(d_, "X.npy"), os.path.join(d_, "P.npy"),
                        "--dk", str(dk), "--weights", d_] + margs + extra)
    if rc != 0:
        return ["exit %d: %s" % (rc, err.strip())], "ERROR", ""
    j = json.loads(out)
    tol = j["tol"]
    Xc = np.vstack([X, np.ones((1, n))]) if inst["bias"] else X
    rank = np.linalg.matrix_rank(Xc)
    if rank == min(Xc.shape) or inst["cls"] in ("dyadic", "scaled"):
        rank_exact = frac_rank([[Fraction(float(v)) for v in row] for row in Xc])
    else:
        rank_exact = rank
    if j["rank"] != rank_exact:
        bad.append("rank %d, oracle %d" % (j["rank"], rank_exact))
    # the least rank with rank X = n
    lo_t, hi_t, wit = (None, None, None)
    if rank_exact == n or inst["cls"] in ("wide", "degenerate"):
        lo_t, hi_t, wit = oracle_bounds(inst)
    th = j["threshold"]
    if rank_exact == n:
        if lo_t is not None and hi_t is not None:
            tau = max(lo_t, 1)
            if not th["none"] and (th["lo"] > tau or (th["hi"] >= 0 and th["hi"] < tau)):
                bad.append("threshold [%d, %d] excludes the oracle's %d" % (th["lo"], th["hi"], tau))
            if wit is not None and wit > lo_t:
                bad.append("oracle: Woerdeman's construction reaches %s > Lemma W's %d" %
                           (wit, lo_t))
        if j["exact"] == "PROVED" and lo_t is not None and lo_t > dk:
            bad.append("exact PROVED at dk = %d, oracle lower bound %d" % (dk, lo_t))
        if j["exact"] == "REFUTED":
            reach = [x for x in (hi_t, wit) if x is not None]
            if reach and min(reach) <= dk and j["dist_lo"] <= j["norm_gap"]:
                bad.append("exact REFUTED at dk = %d, oracle reaches rank %d" % (dk, min(reach)))
        exact_oracle = hi_t is not None and max(hi_t, 1) <= dk
    else:
        exact_oracle = False
        if lo_t is not None and j["exact"] == "PROVED" and lo_t > dk:
            bad.append("exact PROVED at dk = %d, oracle lower bound %d" % (dk, lo_t))
    if inst["cls"] in ("wide", "degenerate") and not inst["bias"]:
        res = masked_residual(X, P, om)
        if j["exact"] == "PROVED" and res > CUT:
            bad.append("exact PROVED, oracle masked residual %s > 0" % mp.nstr(res, 5))
        if th["none"] and res <= CUT and (lo_t is None or lo_t <= rank_exact):
            bad.append("threshold none, oracle masked residual 0")
        note = "masked residual %s" % mp.nstr(res, 4)
    # the written weights
    wk, wq = os.path.join(d_, "Wk.npy"), os.path.join(d_, "Wq.npy")
    err_w = None
    if os.path.exists(wk):
        Wk, Wq = np.load(wk), np.load(wq)
        err_w = mp_masked_error(Xc, Wk, Wq, P, om)
        if j["weights_stage"] != -2:
            hi = float("inf") if j["weights_hi"] is None else j["weights_hi"]
            if not (mp.mpf(j["weights_lo"]) * (1 - 1e-12) <= err_w <= mp.mpf(hi) * (1 + 1e-12)
                    + 1e-300):
                bad.append("weights' error %s outside their certificate [%r, %r]" %
                           (mp.nstr(err_w, 6), j["weights_lo"], j["weights_hi"]))
    colsum_exact = all(sum(Fraction(float(v)) for v in P[:, c]) == 1 for c in range(n))
    if j["verdict"] == "PROVED":
        ok = err_w is not None and err_w <= tol
        ok = ok or (j["exact"] == "PROVED" and exact_oracle and
                    (colsum_exact or tol >= j["norm_gap"]))
        ok = ok or (j["exact"] == "PROVED" and inst["cls"] == "tiny")
        if not ok:
            bad.append("C(tol) PROVED, weights %s, no exactness to support it" %
                       (mp.nstr(err_w, 5) if err_w is not None else "none"))
    if j["verdict"] == "REFUTED":
        if err_w is not None and err_w < mp.mpf(j["dist_lo"]) * (1 - 1e-12):
            bad.append("REFUTED with dist.lo %r above the weights' %s" %
                       (j["dist_lo"], mp.nstr(err_w, 6)))
        if exact_oracle and (colsum_exact or j["norm_gap"] <= tol):
            bad.append("REFUTED, but the oracle finds P exactly representable at dk")
        if j["dist_lo"] <= tol:
            bad.append("REFUTED with dist.lo <= tol")
    if j["exact"] == "UNDECIDED":
        note = (note + "; " if note else "") + "exact: " + j["exact_method"]
    if j["verdict"] == "UNDECIDED":
        note = (note + "; " if note else "") + "C(tol): dist in [%.3g, %.3g], lower bound: %s" % (
            j["dist_lo"], j["dist_hi"] if j["dist_hi"] is not None else float("inf"),
            j["lower_method"])
    return bad, j["verdict"] + "/" + j["exact"], note


def main():
    full = mode == "full"
    cases = instances(full)
    counts, wrong, und = {}, 0, []
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        for idx, inst in enumerate(cases):
            bad, v, note = check_instance(inst, tmp, idx)
            key = (inst["cls"], inst["kind"], v)
            counts[key] = counts.get(key, 0) + 1
            if "UNDECIDED" in v:
                und.append("%s#%d (n=%d, dk=%d%s): %s" % (inst["cls"], idx, inst["P"].shape[0],
                                                        inst["dk"], ", bias" if inst["bias"] else "",
                                                        note))
            for b in bad:
                print("WRONG %s#%d (n=%d, dk=%d): %s" % (inst["cls"], idx, inst["P"].shape[0],
                                                        inst["dk"], b))
            wrong += bool(bad)
    tot = {}
    for (cls, kind, v), c in sorted(counts.items()):
        print("%-10s %-9s %-22s %3d" % (cls, kind, v, c))
        for part in v.split("/"):
            tot[part] = tot.get(part, 0) + c
    print("instances %d (%.0f s); verdicts (C(tol) and exact counted separately): %s; wrong %d"
          % (len(cases), time.time() - t0,
             ", ".join("%s %d" % kv for kv in sorted(tot.items())), wrong))
    for u in und:
        print("UNDECIDED " + u)
    sys.exit(1 if wrong else 0)


main()
