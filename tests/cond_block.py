#!/usr/bin/env python3
"""Hostile test of `attncheck condition --mode attention --certify`: the
verdict is about the mathematical block B = [B_1 ... B_h],
B_i = Softmax(Q_i K_i^T / sqrt d) V_i computed exactly from the sampled X
and weights, never about its double rounding (doc/mathematics.md §5.10).

Oracle: B at 50 significant digits with mpmath from the inputs printed by
tests/cond_block_tool, and its singular values (mpmath.svd_r).
  class R (h min(N, E, d) < min(N, D)): every sample REFUTED, and B's
      singular value number rank_bound + 1 is below 1e-40 sigma_1 (the
      block is singular), while the double block's kappa is finite;
  class F (h min(N, E, d) >= min(N, D), direct and Cholesky forms): a
      REFUTED sample has |kappa(B)/kappa~ - 1| > rtol (the double block's
      kappa~ is not kappa(B) to rtol); every PROVED sample's enclosures of
      sigma_1 and sigma_min contain B's, sigma_min(B) > 0 and kappa~ is
      within rtol of kappa(B); at rtol 1e-13 the ball stages decide.
Exit 0 pass, 1 failure, 77 mpmath missing."""
import json
import subprocess
import sys

try:
    import mpmath as mp
except ImportError:
    print("cond_block: mpmath not installed, skipping", file=sys.stderr)
    sys.exit(77)

mp.mp.dps = 50
tool = sys.argv[1]
fails = 0
counts = {}

# (N, h, d, E, direct): class R then class F
CLASS_R = [(16, 2, 4, 2, 0), (16, 4, 4, 2, 0), (8, 2, 4, 1, 0), (12, 3, 4, 3, 0),
           (10, 2, 6, 3, 0), (6, 4, 2, 1, 0), (9, 2, 5, 4, 0), (16, 2, 8, 7, 0),
           (4, 2, 4, 1, 0), (12, 2, 8, 5, 1)]
CLASS_F = [(8, 2, 4, 4, 0), (8, 2, 4, 8, 0), (12, 3, 4, 4, 0), (6, 4, 2, 2, 0),
           (4, 2, 4, 2, 0), (10, 2, 3, 3, 0), (6, 2, 4, 12, 0), (5, 1, 3, 9, 0),
           (8, 4, 4, 16, 0), (6, 2, 4, 12, 1)]


def num(x):
    return mp.mpf(x) if not isinstance(x, str) else mp.mpf(x.replace("inf", "+inf")
                                                           if x == "inf" else x)


def block(o, s):
    N, h, d, E = o["N"], o["h"], o["d"], o["E"]
    X = mp.matrix(N, E)
    for i in range(N):
        for j in range(E):
            X[i, j] = mp.mpf(s["X"][i * E + j])
    if o["factor"]:
        L = mp.cholesky(X * X.T / E)
    cols = []
    for i in range(h):
        P = []
        for k in range(3):
            w = s["W"][3 * i + k]["w"]
            if o["factor"]:
                Z = mp.matrix(N, d)
                for a in range(N):
                    for b in range(d):
                        Z[a, b] = mp.mpf(w[a * d + b])
                P.append(L * Z)
            else:
                W = mp.matrix(E, d)
                for a in range(E):
                    for b in range(d):
                        W[a, b] = mp.mpf(w[a * d + b])
                P.append(X * W / mp.sqrt(E))
        Q, K, V = P
        S = Q * K.T / mp.sqrt(d)
        for r in range(N):
            mx = max(S[r, c] for c in range(N))
            e = [mp.exp(S[r, c] - mx) for c in range(N)]
            z = mp.fsum(e)
            for c in range(N):
                S[r, c] = e[c] / z
        cols.append(S * V)
    B = mp.matrix(N, h * d)
    for i in range(h):
        for a in range(N):
            for b in range(d):
                B[a, i * d + b] = cols[i][a, b]
    return B


def run(shape, seed, cls, rtol=None):
    global fails
    N, h, d, E, direct = shape
    args = [tool, str(N), str(h), str(d), str(E), str(seed), "3", "direct" if direct else "auto"]
    if rtol:
        args.append(rtol)
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        print("cond_block: %s failed: %s" % (" ".join(args[1:]), out.stderr.strip()))
        fails += 1
        return
    o = json.loads(out.stdout)
    name = "N=%d h=%d d=%d E=%d%s seed %d%s" % (N, h, d, E, " direct" if direct else "", seed,
                                             " rtol " + rtol if rtol else "")
    if (o["rank_bound"] < o["m"]) != (cls == "R"):
        print("cond_block: %s: rank_bound %d, m %d, expected class %s" % (name, o["rank_bound"], o["m"], cls))
        fails += 1
    for t, s in enumerate(o["samples"]):
        B = block(o, s)
        sv = sorted(mp.svd_r(B, compute_uv=False), reverse=True)
        m = o["m"]
        key = (cls + (" rtol " + rtol + " stage >= 1" if rtol and s["stage"] >= 1 else ""), s["cert"])
        counts[key] = counts.get(key, 0) + 1
        if cls == "R":
            r = o["rank_bound"]
            if s["cert"] != "REFUTED" or not s["rank_refuted"]:
                print("cond_block: %s trial %d: %s, expected REFUTED (rank <= %d < %d)" % (name, t, s["cert"], r, m))
                fails += 1
            if not sv[r] < mp.mpf("1e-40") * sv[0]:
                print("cond_block: %s trial %d: sigma_%d(B)/sigma_1 = %s: B is not singular" % (name, t, r + 1, mp.nstr(sv[r] / sv[0], 5)))
                fails += 1
            continue
        dev = abs(sv[0] / sv[m - 1] / mp.mpf(s["kappa"]) - 1)
        if s["cert"] == "REFUTED" and not dev > o["rtol"]:
            # claim C is full rank *and* kappa~ within rtol of kappa(B): a
            # REFUTED full-rank block needs the oracle's kappa(B) off by > rtol
            print("cond_block: %s trial %d: REFUTED, but B has full rank (sigma_min %s) and "
                  "|kappa(B)/kappa~ - 1| = %s <= rtol" % (name, t, mp.nstr(sv[m - 1], 5), mp.nstr(dev, 5)))
            fails += 1
        if s["cert"] == "PROVED":
            ok = (sv[m - 1] > 0 and
                  mp.mpf(s["smin_lo"]) <= sv[m - 1] <= mp.mpf(s["smin_hi"]) and
                  mp.mpf(s["s1_lo"]) <= sv[0] <= mp.mpf(s["s1_hi"]) and
                  abs(sv[0] / sv[m - 1] / mp.mpf(s["kappa"]) - 1) <= o["rtol"])
            if not ok:
                print("cond_block: %s trial %d: PROVED but the oracle's sigma_1 %s, sigma_min %s, "
                      "kappa %s are not in [%s, %s], [%s, %s], %s (1 +- rtol)" % (
                          name, t, mp.nstr(sv[0], 17), mp.nstr(sv[m - 1], 17), mp.nstr(sv[0] / sv[m - 1], 17),
                          s["s1_lo"], s["s1_hi"], s["smin_lo"], s["smin_hi"], s["kappa"]))
                fails += 1


for seed in (1, 7):
    for shape in CLASS_R:
        run(shape, seed, "R")
    for shape in CLASS_F:
        run(shape, seed, "F")
# rtol 1e-13: stage 0 (Weyl around the double SVD) cannot decide, so the
# ball stages certify the Gram matrix of the Arb enclosure of B
for shape in CLASS_F[:6] + CLASS_F[8:]:
    run(shape, 3, "F", "1e-13")
print("cond_block: " + ", ".join("class %s %s: %d" % (c, v, n) for (c, v), n in sorted(counts.items())))
if counts.get(("F", "PROVED"), 0) == 0:
    print("cond_block: no full-rank sample PROVED (the enclosure never works?)")
    fails += 1
if counts.get(("F rtol 1e-13 stage >= 1", "PROVED"), 0) == 0:
    print("cond_block: no sample PROVED by the ball stages")
    fails += 1
sys.exit(1 if fails else 0)
