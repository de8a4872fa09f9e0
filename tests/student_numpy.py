"""student_numpy.py — NumPy checks of `attncheck separate --student` and of
the relative MSE of `attncheck train --task teacher` (tests/cli_student.sh).

  table J CSV DIR J2   the JSON J has the documented shape; the relative
                       errors, worst inputs and estimates are recomputed
                       from DIR (the teacher Vq.npy ..., samples.npy, every
                       student's stacks) and bracketed by the certified
                       bounds; CSV has one row per curve point; J2 (another
                       --threads) has the same numbers
  pairs DIR            write X.npy (16, 6, 5), Y.npy (16, 6, 5) into DIR
  relmse J PAIRS CK    eval_rel_mse of train's JSON J against the
                       checkpoint CK on the held-out pairs of PAIRS
"""
import csv
import json
import os
import sys

import numpy as np


def layer(d, prefix, letter):
    return [np.load(os.path.join(d, "%s%s%s.npy" % (prefix, letter, c))) for c in "qkvo"]


def forward(L, X):
    """sum_i Wo_i Wv_i X Softmax((Wk_i X)^T (Wq_i X) / sqrt(hs)), softmax over columns"""
    Wq, Wk, Wv, Wo = L
    hs = Wq.shape[1]
    out = np.zeros_like(X)
    for i in range(Wq.shape[0]):
        Z = (Wk[i] @ X).T @ (Wq[i] @ X) / np.sqrt(hs)
        Z = Z - Z.max(axis=0, keepdims=True)
        P = np.exp(Z)
        P /= P.sum(axis=0, keepdims=True)
        out += Wo[i] @ (Wv[i] @ X) @ P
    return out


def fail(msg):
    print("student_numpy: " + msg, file=sys.stderr)
    return 1


def table(jpath, cpath, odir, j2path):
    j = json.load(open(jpath))
    j2 = json.load(open(j2path))
    bad = 0
    st = j["students"]
    kinds = [(s["kind"], s["heads"], s["head_size"]) for s in st]
    if kinds != [("standard", 1, 8), ("standard", 2, 4), ("standard", 4, 2), ("fixed", 4, 4)]:
        bad |= fail("students %r" % kinds)
    ans = [(p["heads"], p["represents"]) for p in j["headcount"]["per_head_count"]]
    if ans != [(1, "yes"), (2, "yes"), (4, "no"), (8, "no")]:
        bad |= fail("head counts %r" % ans)
    V = layer(odir, "", "V")
    S = np.load(os.path.join(odir, "samples.npy"))
    G = [forward(V, X) for X in S]
    fixed_mean = st[-1]["rel_error_mean"]
    for s, s2 in zip(st, j2["students"]):
        if len(s["seeds"]) != 3:
            bad |= fail("%s h=%d: %d seeds" % (s["kind"], s["heads"], len(s["seeds"])))
        rels = [r["rel_error"] for r in s["seeds"]]
        if [r["rel_error"] for r in s2["seeds"]] != rels:
            bad |= fail("%s h=%d: another --threads gives other errors" % (s["kind"], s["heads"]))
        if abs(np.mean(rels) - s["rel_error_mean"]) > 1e-14 * abs(s["rel_error_mean"]) or \
           abs(np.std(rels, ddof=1) - s["rel_error_sd"]) > 1e-9 * s["rel_error_mean"] or \
           abs(s["ratio_to_fixed"] - s["rel_error_mean"] / fixed_mean) > 1e-12 * s["ratio_to_fixed"]:
            bad |= fail("%s h=%d: mean/sd/ratio inconsistent" % (s["kind"], s["heads"]))
        for r in s["seeds"]:
            L = layer(odir, "%s_h%d_seed%d_" % (s["kind"], s["heads"], r["seed"]), "W")
            F = [forward(L, X) for X in S]
            e = [np.sum((f - g) ** 2) for f, g in zip(F, G)]
            y = [np.sum(g ** 2) for g in G]
            rel = sum(e) / sum(y)
            q = [a / b for a, b in zip(e, y)]
            k = int(np.argmax(q))
            if abs(rel - r["rel_error"]) > 1e-10 * rel:
                bad |= fail("%s h=%d seed %d: rel %r, numpy %r" % (s["kind"], s["heads"], r["seed"], r["rel_error"], rel))
            if k != r["worst_sample"] or abs(np.sqrt(q[k]) - r["worst_rel_estimate"]) > 1e-10 * np.sqrt(q[k]):
                bad |= fail("%s h=%d seed %d: worst X %d (%r), numpy %d (%r)" % (s["kind"], s["heads"], r["seed"], r["worst_sample"], r["worst_rel_estimate"], k, np.sqrt(q[k])))
            t = np.sqrt(q[k])
            if not (r["worst_rel_certified_lo"] <= t * (1 + 1e-12) and t <= r["worst_rel_certified_hi"] * (1 + 1e-12)) \
               or r["worst_rel_certified_lo"] <= 0 or r["separated"] != "PROVED":
                bad |= fail("%s h=%d seed %d: certified [%r, %r] misses %r" % (s["kind"], s["heads"], r["seed"], r["worst_rel_certified_lo"], r["worst_rel_certified_hi"], t))
    rows = list(csv.DictReader(open(cpath)))
    if len(rows) != 4 * 3 * 21 or rows[0]["step"] != "1" or rows[20]["step"] != "40":
        bad |= fail("CSV: %d rows" % len(rows))
    return bad


def pairs(d):
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(5)
    X = rng.standard_normal((16, 6, 5))
    Y = rng.standard_normal((16, 6, 5))
    np.save(os.path.join(d, "X.npy"), X)
    np.save(os.path.join(d, "Y.npy"), Y)
    return 0


def relmse(jpath, pdir, ck):
    j = json.load(open(jpath))
    X = np.load(os.path.join(pdir, "X.npy"))
    Y = np.load(os.path.join(pdir, "Y.npy"))
    L = layer(ck, "", "W")
    held = int(np.floor(0.25 * X.shape[0]))
    e = y = 0.0
    for i in range(X.shape[0] - held, X.shape[0]):
        F = forward(L, X[i])
        e += np.sum((F - Y[i]) ** 2)
        y += np.sum(Y[i] ** 2)
    if abs(e / y - j["eval_rel_mse"]) > 1e-10 * (e / y):
        return fail("eval_rel_mse %r, numpy %r" % (j["eval_rel_mse"], e / y))
    return 0


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "table":
        sys.exit(table(*sys.argv[2:6]))
    if cmd == "pairs":
        sys.exit(pairs(sys.argv[2]))
    sys.exit(relmse(*sys.argv[2:5]))
