#!/usr/bin/env python3
"""Cross-check Theorem 2 (`attncheck separate`) and the multi-head layers
independently of the C code: NumPy (float64), exact rationals (fractions) and
mpmath at 50 digits, all recomputed from the files the program writes.

usage: separate_numpy.py ATTNCHECK MH_TOOL WORKDIR

1. Layers: NumPy writes random layers and inputs; `mh_tool forward` must agree
   with a NumPy implementation within the first-order error bound
   2 (d + hs + hh + n + 8) u M (1 + 2 Lam) (M = max (|Wo||Wv||X|), Lam the
   largest |K|'|Q|/sqrt(hs)); `mh_tool enclose` must contain the mpmath
   value; `mh_tool backward` must agree with PyTorch autograd (float64) on
   <dX, E> within (d + hs + hh + 3n + 16) u times the sum of magnitudes.
2. Separation certificates: `attncheck separate --case K --out-dir D --json`
   for K = 1, 2, 3 and a random f_W: ||f_W(X) - g_V(X)||_F recomputed in
   mpmath at the written X must lie in the certified [lo, hi] (the certified
   interval is rigorous; mpmath's own error is below 1e-40), and the NumPy
   value within NumPy's error bound of it; the relative gap >= the certified
   lower bound.
3. Cases, exactly (fractions): S_W == S_V for cases 2 and 3 and != for case 1;
   M_i skew for every head in case 3 and not skew for some head in case 2
   (compared through squares: sqrt(d/h)(U + U') = sqrt(dp)(A + A')); the
   heads of g_V share U.
4. The embedding: `--embed` with dp = 4 d/h writes V; Vo_i Vv_i = Wo_i Wv_i
   and Vk_i'Vq_i/sqrt(dp) = Wk_i'Wq_i/sqrt(d/h) exactly; `separate` on the
   written W and V exits 1 (REFUTED: no X separates) and never 0.  With
   dp = 2 d/h (s = sqrt 2 rounded in V), and with one entry of that Vq
   changed by 1e-3 and 1e-12 relative (`--embed --v-dir`), the relative
   deviation max_k ||g(X_k) - f(X_k)||_F / ||f(X_k)||_F is recomputed in
   mpmath (50 digits) from the written samples.npy and must lie in the
   certified [relative_deviation_lo, relative_deviation_hi]; the verdict must
   be PROVED / REFUTED / PROVED as that value is <= or > tol; NumPy's double
   value must agree with it within its error bound.
Exit status 0 if everything matches, 1 otherwise; the random data use
ATTNCHECK_TEST_SEED (default 20261121).
"""
import json
import os
import subprocess
import sys
from fractions import Fraction

import numpy as np

try:
    import mpmath
except ImportError:  # pragma: no cover
    mpmath = None

U = 2.0 ** -53
FAIL = []
COUNT = [0]


def check(cond, what):
    COUNT[0] += 1
    if not cond:
        FAIL.append(what)
        print("FAIL " + what)
    return cond


# ---- NumPy reference of the layer (file layout: (h, hs, d) and (h, d, hs)) ----

def load_layer(d, p):
    return [np.load(os.path.join(d, p + s + ".npy")) for s in "qkvo"]


def forward(L, X):
    Wq, Wk, Wv, Wo = L
    hs = Wq.shape[1]
    Q, K, V = Wq @ X, Wk @ X, Wv @ X                  # (h, hs, n)
    Z = np.swapaxes(K, 1, 2) @ Q / np.sqrt(hs)         # (h, n, n), softmax over axis 1
    Z = Z - Z.max(axis=1, keepdims=True)
    P = np.exp(Z)
    P /= P.sum(axis=1, keepdims=True)
    return np.einsum("hdk,hkn->dn", Wo, V @ P)


def bound(L, X):
    Wq, Wk, Wv, Wo = L
    h, hs, d = Wq.shape
    n = X.shape[1]
    M = np.max(np.einsum("hdk,hkn->dn", np.abs(Wo), np.abs(Wv) @ np.abs(X)))
    Lam = np.max(np.swapaxes(np.abs(Wk) @ np.abs(X), 1, 2) @ (np.abs(Wq) @ np.abs(X))) / np.sqrt(hs)
    return 2 * (d + hs + h * hs + n + 8) * U * M * (1 + 2 * Lam)


def mp_forward(L, X):
    """y(X) with mpmath matrices (50 digits): an oracle independent of NumPy's rounding."""
    Wq, Wk, Wv, Wo = L
    h, hs, d = Wq.shape
    n = X.shape[1]
    mX = mpmath.matrix(X.tolist())
    Y = mpmath.zeros(d, n)
    rs = 1 / mpmath.sqrt(hs)
    for i in range(h):
        Q = mpmath.matrix(Wq[i].tolist()) * mX
        K = mpmath.matrix(Wk[i].tolist()) * mX
        V = mpmath.matrix(Wv[i].tolist()) * mX
        Z = K.T * Q * rs
        P = mpmath.zeros(n, n)
        for j in range(n):
            m = max(Z[a, j] for a in range(n))
            e = [mpmath.exp(Z[a, j] - m) for a in range(n)]
            s = mpmath.fsum(e)
            for a in range(n):
                P[a, j] = e[a] / s
        Y += mpmath.matrix(Wo[i].tolist()) * (V * P)
    return Y


def mp_fro(A):
    return mpmath.sqrt(mpmath.fsum(A[i, j] ** 2 for i in range(A.rows) for j in range(A.cols)))


# ---- exact rational products --------------------------------------------------

def fr(A):
    return [[Fraction(float(x)) for x in row] for row in np.atleast_2d(A)]


def fmul(A, B):
    Bt = list(zip(*B))
    return [[sum(a * b for a, b in zip(r, c)) for c in Bt] for r in A]


def fadd(A, B):
    return [[a + b for a, b in zip(r, s)] for r, s in zip(A, B)]


def fT(A):
    return [list(c) for c in zip(*A)]


def S_of(L):
    Wq, Wk, Wv, Wo = L
    S = None
    for i in range(Wq.shape[0]):
        t = fmul(fr(Wo[i]), fr(Wv[i]))
        S = t if S is None else fadd(S, t)
    return S


def qk(L, i):
    return fmul(fT(fr(L[1][i])), fr(L[0][i]))


def scaled_equal(A, a, B, b):
    """sqrt(a) A == sqrt(b) B entrywise, exactly"""
    for r, s in zip(A, B):
        for x, y in zip(r, s):
            if (x > 0) != (y > 0) or (x < 0) != (y < 0) or a * x * x != b * y * y:
                return False
    return True


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    exe, tool, work = sys.argv[1:]
    seed = int(os.environ.get("ATTNCHECK_TEST_SEED", "20261121"), 0)
    rng = np.random.default_rng(seed)
    if mpmath is not None:
        mpmath.mp.dps = 50

    # ---- 1. layers ---------------------------------------------------------
    for t, (d, h, hs, n) in enumerate([(1, 1, 1, 1), (8, 4, 2, 5), (12, 3, 7, 4), (16, 4, 8, 9)]):
        D = os.path.join(work, "layer%d" % t)
        os.makedirs(D, exist_ok=True)
        L = [rng.standard_normal((h, hs, d)) / np.sqrt(d) for _ in range(3)]
        L.append(rng.standard_normal((h, d, hs)) / np.sqrt(h * hs))
        for s, A in zip("qkvo", L):
            np.save(os.path.join(D, "W" + s + ".npy"), A)
        X = rng.standard_normal((d, n)) * (1 + t)
        np.save(os.path.join(D, "X.npy"), X)
        rc, _, err = run([tool, "forward", D, "W", os.path.join(D, "X.npy"), os.path.join(D, "Y.npy")])
        if not check(rc == 0, "mh_tool forward %d: %s" % (t, err.strip())):
            continue
        Yc, Yn = np.load(os.path.join(D, "Y.npy")), forward(L, X)
        tol = bound(L, X)
        check(np.max(np.abs(Yc - Yn)) <= tol,
              "forward %d: C and NumPy differ by %g > %g" % (t, np.max(np.abs(Yc - Yn)), tol))
        # Fortran-order input is read the same
        np.save(os.path.join(D, "XF.npy"), np.asfortranarray(X))
        run([tool, "forward", D, "W", os.path.join(D, "XF.npy"), os.path.join(D, "YF.npy")])
        check(np.array_equal(np.load(os.path.join(D, "YF.npy")), Yc), "forward %d: Fortran order" % t)
        if mpmath is not None:
            rc, _, err = run([tool, "enclose", D, "W", os.path.join(D, "X.npy"),
                              os.path.join(D, "lo.npy"), os.path.join(D, "hi.npy")])
            lo, hi = np.load(os.path.join(D, "lo.npy")), np.load(os.path.join(D, "hi.npy"))
            Ym = mp_forward(L, X)
            inside = all(mpmath.mpf(lo[i, j]) <= Ym[i, j] <= mpmath.mpf(hi[i, j])
                         for i in range(d) for j in range(n))
            check(rc == 0 and inside, "enclose %d: the 50-digit value is outside [lo, hi]" % t)
        try:
            import torch
        except ImportError:
            torch = None
        if torch is not None:
            dY = rng.standard_normal((d, n))
            E = rng.standard_normal((d, n))
            np.save(os.path.join(D, "dY.npy"), dY)
            rc, _, err = run([tool, "backward", D, "W", os.path.join(D, "X.npy"),
                              os.path.join(D, "dY.npy"), os.path.join(D, "dX.npy")])
            if check(rc == 0, "mh_tool backward %d: %s" % (t, err.strip())):
                dXc = np.load(os.path.join(D, "dX.npy"))
                Xt = torch.tensor(X, requires_grad=True)
                Lt = [torch.tensor(A) for A in L]
                Q, K, V = Lt[0] @ Xt, Lt[1] @ Xt, Lt[2] @ Xt
                P = torch.softmax(K.transpose(1, 2) @ Q / np.sqrt(hs), dim=1)
                Y = torch.einsum("hdk,hkn->dn", Lt[3], V @ P)
                (Y * torch.tensor(dY)).sum().backward()
                dXt = Xt.grad.numpy()
                lhs, rhs = float(np.sum(dXc * E)), float(np.sum(dXt * E))
                tol = (d + hs + h * hs + 3 * n + 16) * U * float(np.sum(np.abs(dXc * E)) +
                                                                 np.sum(np.abs(dXt * E))) * 8
                check(abs(lhs - rhs) <= tol,
                      "backward %d: <dX, E> C %.17g vs torch %.17g (tol %g)" % (t, lhs, rhs, tol))

    # ---- 2. and 3. separation certificates and the cases ---------------------
    runs = [("1", ["--case", "1"]), ("2", ["--case", "2"]), ("3", ["--case", "3"]),
            ("random", [])]
    for name, extra in runs:
        D = os.path.join(work, "sep_" + name)
        rc, out, err = run([exe, "separate", "--d", "8", "--h", "4", "--dp", "4", "--n", "3",
                            "--seed", str(seed % 1000 + 1), "--optimize", "10", "--out-dir", D,
                            "--json"] + extra)
        if not check(rc == 0, "separate %s: exit %d: %s" % (name, rc, err.strip())):
            continue
        js = json.loads(out)
        check(js["verdict"] == "PROVED", "separate %s: verdict %s" % (name, js["verdict"]))
        check(js == json.load(open(os.path.join(D, "certificate.json"))),
              "separate %s: certificate.json differs from --json" % name)
        W, V = load_layer(D, "W"), load_layer(D, "V")
        X = np.load(os.path.join(D, "X.npy"))
        cert = js["certificate"]
        # the certificate is of r = ||f-g||_F / ||f||_F > tol; best.difference_lo/hi
        # enclose ||f-g||_F itself
        rlo, rhi = float(cert["lo"]), float(cert["hi"])
        lo, hi = float(js["best"]["difference_lo"]), float(js["best"]["difference_hi"])
        check(rlo > float(cert["tau"]) and lo > 0,
              "separate %s: certified lower bounds %g, %g not above tol" % (name, rlo, lo))
        f, g = forward(W, X), forward(V, X)
        gap = np.linalg.norm(f - g)
        e = (bound(W, X) + bound(V, X)) * np.sqrt(f.size) + 4 * f.size * U * gap
        check(lo - e <= gap <= hi + e, "separate %s: NumPy ||f-g|| = %.17g outside [%g, %g] +- %g"
              % (name, gap, lo, hi, e))
        rel = gap / (np.linalg.norm(f) + np.linalg.norm(g))
        check(rel + 1e3 * U >= js["best"]["relative_gap_lo"],
              "separate %s: relative gap %g below the certified %g" % (name, rel, js["best"]["relative_gap_lo"]))
        if mpmath is not None:
            fm = mp_forward(W, X)
            gm = mp_fro(fm - mp_forward(V, X))
            check(mpmath.mpf(lo) <= gm <= mpmath.mpf(hi),
                  "separate %s: the 50-digit ||f-g|| = %s is outside the certificate [%r, %r]"
                  % (name, mpmath.nstr(gm, 20), lo, hi))
            rm = gm / mp_fro(fm)
            check(mpmath.mpf(rlo) <= rm <= mpmath.mpf(rhi),
                  "separate %s: the 50-digit ||f-g||/||f|| = %s is outside the certificate [%r, %r]"
                  % (name, mpmath.nstr(rm, 20), rlo, rhi))
        # the case, exactly
        kase = js["case"]["number"]
        dh, dp = W[0].shape[1], V[0].shape[1]
        same_S = S_of(W) == S_of(V)
        U1 = qk(V, 0)
        check(all(qk(V, i) == U1 for i in range(V[0].shape[0])), "separate %s: U not shared" % name)
        if name in ("1", "random"):
            check(kase == 1 and not same_S, "separate %s: case %d, S_W == S_V is %s" % (name, kase, same_S))
        else:
            check(same_S, "case %s: S_W != S_V exactly" % name)
            symU = fadd(U1, fT(U1))
            skew = [scaled_equal(symU, dh, fadd(qk(W, i), fT(qk(W, i))), dp)
                    for i in range(W[0].shape[0])]
            if name == "2":
                check(kase == 2 and not all(skew), "case 2: classified %d, skew %s" % (kase, skew))
            else:
                check(kase == 3 and all(skew), "case 3: classified %d, skew %s" % (kase, skew))

    # ---- 4. the embedding --------------------------------------------------
    D = os.path.join(work, "embed")
    rc, out, err = run([exe, "separate", "--embed", "--d", "8", "--h", "4", "--dp", "8",
                        "--seed", str(seed % 1000 + 2), "--out-dir", D, "--json"])
    if check(rc == 0, "embed: exit %d %s" % (rc, err.strip())):
        W, V = load_layer(D, "W"), load_layer(D, "V")
        dh, dp = W[0].shape[1], V[0].shape[1]
        ok = True
        for i in range(W[0].shape[0]):
            ok &= fmul(fr(W[3][i]), fr(W[2][i])) == fmul(fr(V[3][i]), fr(V[2][i]))
            ok &= scaled_equal(qk(V, i), dh, qk(W, i), dp)
        check(ok, "embed: the written V is not the exact embedding of W")
        S = np.load(os.path.join(D, "samples.npy"))
        for k in range(S.shape[0]):
            diff = np.max(np.abs(forward(W, S[k]) - forward(V, S[k])))
            check(diff <= bound(W, S[k]) + bound(V, S[k]), "embed sample %d: NumPy difference %g" % (k, diff))
        rc, out, err = run([exe, "separate", "--w-dir", D, "--v-dir", D, "--json"])
        js = json.loads(out) if out else {}
        check(rc == 1 and js.get("verdict") == "REFUTED",
              "separate on an embedded pair: exit %d, verdict %s (must never be PROVED)"
              % (rc, js.get("verdict")))

    # ---- 4b. the relative deviation of irrational and perturbed embeddings ----
    D = os.path.join(work, "embed2")
    rc, out, err = run([exe, "separate", "--embed", "--d", "8", "--h", "4", "--dp", "4",
                        "--seed", str(seed % 1000 + 3), "--out-dir", D, "--json"])
    if check(rc == 0, "embed dp = 2 d/h: exit %d %s" % (rc, err.strip())):
        for eps in (None, 1e-3, 1e-12):
            if eps is None:
                E, js = D, json.loads(out)
            else:
                E = os.path.join(work, "embed2_%g" % eps)
                os.makedirs(E, exist_ok=True)
                for p in "WV":
                    for s in "qkvo":
                        np.save(os.path.join(E, p + s + ".npy"), np.load(os.path.join(D, p + s + ".npy")))
                Vq = np.load(os.path.join(E, "Vq.npy"))
                Vq[0, 0, 0] *= 1 + eps
                np.save(os.path.join(E, "Vq.npy"), Vq)
                rc, o2, err = run([exe, "separate", "--embed", "--w-dir", E, "--v-dir", E,
                                   "--seed", str(seed % 1000 + 3), "--json"])
                if not check(rc in (0, 1), "embed perturbed %g: exit %d %s" % (eps, rc, err.strip())):
                    continue
                js = json.loads(o2)
            W, V = load_layer(E, "W"), load_layer(E, "V")
            S = np.load(os.path.join(D, "samples.npy"))
            tol, lo, hi = js["tol"], js["relative_deviation_lo"], js["relative_deviation_hi"]
            rel_np = max(np.linalg.norm(forward(V, S[k]) - forward(W, S[k])) /
                         np.linalg.norm(forward(W, S[k])) for k in range(S.shape[0]))
            e = max((bound(W, S[k]) + bound(V, S[k])) * np.sqrt(S[k].size) /
                    np.linalg.norm(forward(W, S[k])) for k in range(S.shape[0]))
            check(lo - e <= rel_np <= hi + e, "embed %s: NumPy relative deviation %g outside "
                  "[%g, %g] +- %g" % (eps, rel_np, lo, hi, e))
            if mpmath is not None:
                rel = max(mp_fro(mp_forward(V, S[k]) - mp_forward(W, S[k])) /
                          mp_fro(mp_forward(W, S[k])) for k in range(S.shape[0]))
                check(mpmath.mpf(lo) <= rel <= mpmath.mpf(hi),
                      "embed %s: the 50-digit relative deviation %s is outside the certified "
                      "[%r, %r]" % (eps, mpmath.nstr(rel, 10), lo, hi))
                want = "PROVED" if rel <= tol else "REFUTED"
                check(js["verdict"] == want, "embed %s: verdict %s, the deviation %s says %s"
                      % (eps, js["verdict"], mpmath.nstr(rel, 5), want))
                check(rel > 0 and js["exact"] is False, "embed %s: deviation %s, exact %s"
                      % (eps, mpmath.nstr(rel, 5), js["exact"]))
            want = {None: "PROVED", 1e-3: "REFUTED", 1e-12: "PROVED"}[eps]
            check(js["verdict"] == want, "embed %s: verdict %s, expected %s" % (eps, js["verdict"], want))

    print("separate_numpy: %d checks, %d failures (mpmath %s)" % (COUNT[0], len(FAIL),
                                                                   "yes" if mpmath else "no"))
    return 1 if FAIL else 0


if __name__ == "__main__":
    sys.exit(main())
