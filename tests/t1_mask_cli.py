#!/usr/bin/env python3
"""t1_mask_cli.py — `attncheck rep-theorem --mask SPEC --bias` (doc/mathematics.md §3.8)
checked from outside.

1. Bad masks, one class at a time: a one-line error naming the file (or the
   option) and the documented exit status (64 usage, 65 bad data, 66 cannot
   open): wrong shapes, values not 0/1, NaN, a query that sees no key, P
   positive off the mask, bad SPEC syntax (--learn with --mask or --bias:
   tests/rep_learn_mask.py).
2. One mask, many spellings: causal as the word, as an n x n file in P's
   layout, in PyTorch's layout with --rows (P and mask transposed), and a
   padding mask as a vector of key flags and as the equivalent n x n file
   give the same verdict, threshold and distance.
3. What is certified is what is written: for masked and biased runs the
   weights of --out-dir are read back and NumPy recomputes the masked
   softmax from the files alone (X with a row of ones appended with --bias);
   its error must lie in the certified enclosure widened by NumPy's own
   rounding (the bound of tests/t1_numpy.py), and certificate.json is
   the --json object.  Every JSON output is validated against the schema.
4. The GPT-2-layout fixture (tests/models/gpt2): a causal head of layer 1
   dumped by mh_tool (its normed input X and its pattern P, row layout),
   decided with and without --bias; the model's own head (dk = 4, with its
   biases) given by --wq/--wk must be PROVED with --bias (an oracle: the
   pattern is that head's by construction), and the numbers quoted in
   doc/mathematics.md §3.8 are the ones printed here.
Usage: t1_mask_cli.py ATTNCHECK MH_TOOL DOC
"""
import json
import os
import re
import subprocess
import sys
import tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import json_schema  # noqa: E402

try:
    import numpy as np
except ImportError:
    print("numpy not available: skipped")
    sys.exit(77)

U = 2.0 ** -53
exe, mh_tool, doc = sys.argv[1:4]
here = os.path.dirname(os.path.abspath(__file__))
failures = 0
seed = int(os.environ.get("ATTNCHECK_SEED", "20261202"))
rng = np.random.default_rng(seed)


def fail(msg):
    global failures
    failures += 1
    print("FAIL (seed %d): %s" % (seed, msg))


def run(args):
    p = subprocess.run([exe, "rep-theorem"] + args, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def jrun(args):
    rc, out, err = run(["--json"] + args)
    if rc not in (0, 1, 2):
        fail("%s: exit %d: %s" % (args, rc, err.strip()))
        return None
    return json_schema.load(out, "rep-theorem")


def masked_softmax(Z, om):
    Z = np.where(om, Z, -np.inf)
    S = np.exp(Z - Z.max(axis=0))
    return S / S.sum(axis=0)


def causal_P(X, dk, r):
    """a causal pattern of a random head of size dk on X (column layout)"""
    d, n = X.shape
    Wk, Wq = rng.standard_normal((dk, d)) / np.sqrt(d), rng.standard_normal((dk, d)) / np.sqrt(d)
    om = np.triu(np.ones((n, n), bool))
    return masked_softmax((Wk @ X).T @ (Wq @ X) / np.sqrt(dk), om)


with tempfile.TemporaryDirectory() as t:
    def f(name, a):
        path = os.path.join(t, name)
        np.save(path, np.asarray(a, dtype=np.float64))
        return path

    n, d = 6, 6
    X = rng.standard_normal((d, n))
    om = np.triu(np.ones((n, n), bool))
    P = causal_P(X, 2, 2)
    xf, pf = f("X.npy", X), f("P.npy", P)

    # ---- 1. bad masks, per class ------------------------------------------------------
    bad = [
        ("shape (n-1, n-1)", [f("m_small.npy", om[:-1, :-1])], 65, "m_small.npy"),
        ("shape (n, n+1)", [f("m_wide.npy", np.ones((n, n + 1)))], 65, "m_wide.npy"),
        ("vector of n+1 flags", [f("m_vec.npy", np.ones(n + 1))], 65, "m_vec.npy"),
        ("3-D mask", [f("m_3d.npy", np.ones((1, n, n)))], 65, "m_3d.npy"),
        ("value 2", [f("m_two.npy", 2.0 * om)], 65, "m_two.npy"),
        ("value 0.5", [f("m_half.npy", np.where(om, 1.0, 0.5))], 65, "m_half.npy"),
        ("NaN", [f("m_nan.npy", np.where(om, 1.0, np.nan))], 65, "m_nan.npy"),
        ("negative", [f("m_neg.npy", -1.0 * om)], 65, "m_neg.npy"),
        ("query sees no key", [f("m_blind.npy", np.where(np.arange(n)[None, :] == 2, 0.0, om))],
         65, "m_blind.npy"),
        ("padding hides every key", [f("m_pad0.npy", np.zeros(n))], 65, "m_pad0.npy"),
        ("P positive off the mask", [f("m_diag.npy", np.eye(n))], 65, "m_diag.npy"),
        ("missing file", [os.path.join(t, "absent.npy")], 66, "absent.npy"),
        ("window:0", ["causal,window:0"], 64, "--mask"),
        ("window:x", ["window:x"], 64, "--mask"),
        ("causal twice", ["causal,causal"], 64, "--mask"),
        ("two files", ["causal,a.npy,b.npy"], 64, "--mask"),
        ("empty part", ["causal,"], 64, "--mask"),
        ("empty", [""], 64, "--mask"),
    ]
    for what, spec, code, name in bad:
        rc, out, err = run(["--x", xf, "--p", pf, "--mask"] + spec)
        lines = [l for l in err.strip().splitlines() if not l.startswith("Try ")]
        if rc != code or len(lines) != 1 or name not in lines[0] or out:
            fail("bad mask (%s): exit %d (expected %d), stderr %r, stdout %r"
                 % (what, rc, code, err, out[:80]))
    # P with NaN on the mask, P positive off a causal mask: the P file is named
    pn = P.copy()
    pn[0, 3] = np.nan
    for what, pfile, code in [("NaN in P", f("P_nan.npy", pn), 65),
                              ("P dense, causal mask", f("P_dense.npy", np.full((n, n), 1.0 / n)),
                               65)]:
        rc, out, err = run(["--x", xf, "--p", pfile, "--mask", "causal"])
        if rc != code or len(err.strip().splitlines()) != 1 or os.path.basename(pfile) not in err:
            fail("%s: exit %d, stderr %r" % (what, rc, err))

    # ---- 2. one mask, many spellings -----------------------------------------------------
    def key(j):
        return (j["verdict"], j["exact"], j["threshold"]["lo"], j["threshold"]["hi"],
                j["mask"]["nvisible"], j["mask"]["staircase"], j["mask"]["nblocks"])

    for dk in ("1", "2", "5"):
        ref = jrun(["--x", xf, "--p", pf, "--mask", "causal", "--dk", dk])
        mf, mt = f("m_causal.npy", om), f("m_causal_rows.npy", om.T)
        ptf = f("P_rows.npy", P.T)
        for args in (["--x", xf, "--p", pf, "--mask", mf],
                     ["--x", xf, "--p", ptf, "--rows", "--mask", "causal"],
                     ["--x", xf, "--p", ptf, "--rows", "--mask", mt],
                     ["--x", xf, "--p", pf, "--mask", "causal," + mf]):
            j = jrun(args + ["--dk", dk])
            if ref is None or j is None or key(j) != key(ref):
                fail("dk %s: %s differs from --mask causal: %s vs %s"
                     % (dk, args, j and key(j), ref and key(ref)))
            elif j["distance"]["lo"] > ref["distance"]["hi"] or \
                    ref["distance"]["lo"] > j["distance"]["hi"]:
                fail("dk %s: %s: disjoint distance enclosures" % (dk, args))
        if ref and not ref["masked"] or ref and ref["route"] != "masked":
            fail("--mask causal: masked %s, route %s" % (ref["masked"], ref["route"]))
    # padding: keys 1 and 4 hidden from every query, as a vector and as n x n
    valid = np.ones(n)
    valid[[1, 4]] = 0
    ompad = np.repeat(valid[:, None] != 0, n, axis=1)
    Pp = masked_softmax(rng.standard_normal((n, n)), ompad)
    ppf = f("P_pad.npy", Pp)
    jv = jrun(["--x", xf, "--p", ppf, "--mask", f("pad.npy", valid), "--dk", "2"])
    jm = jrun(["--x", xf, "--p", ppf, "--mask", f("pad_nn.npy", ompad), "--dk", "2"])
    if jv is None or jm is None or key(jv) != key(jm) or jv["mask"]["array"] != "padding" \
            or jm["mask"]["array"] != "pairs" or jv["mask"]["nvisible"] != (n - 2) * n:
        fail("padding vector vs n x n: %s vs %s" % (jv and key(jv), jm and key(jm)))

    # ---- 3. what is certified is what is written ------------------------------------------
    def written(args, om, bias):
        with tempfile.TemporaryDirectory() as out:
            rc, so, se = run(["--json", "--out-dir", out] + args)
            j = json_schema.load(so, "rep-theorem")
            cert = json.load(open(os.path.join(out, "certificate.json")))
            if cert != j:
                fail("%s: certificate.json differs from --json" % args)
            files = set(os.listdir(out))
            if "Wq.npy" not in files:
                return j, None
            Wq, Wk = np.load(os.path.join(out, "Wq.npy")), np.load(os.path.join(out, "Wk.npy"))
            Xw = np.load(os.path.join(out, "X.npy")) if "X.npy" in files else None
            Pw = np.load(os.path.join(out, "P.npy")) if "P.npy" in files else None
            return j, (Wq, Wk, Xw, Pw)

    def maxdev(Xc, Pc, Wq, Wk, om, bias):
        if bias:
            Xc = np.vstack([Xc, np.ones((1, Xc.shape[1]))])
        dk, dd = Wk.shape
        if Xc.shape[0] != dd or Wq.shape != Wk.shape:
            return None, 0
        Z = (Wk @ Xc).T @ (Wq @ Xc) / np.sqrt(dk)
        S = masked_softmax(Z, om)
        dZ = 2 * (dd + dk + 2) * U * ((np.abs(Wk) @ np.abs(Xc)).T @ (np.abs(Wq) @ np.abs(Xc))) \
            / np.sqrt(dk)
        delta = (S * (np.exp(2 * np.where(om, dZ, 0).max(axis=0)) - 1)).max() + 8 * Xc.shape[1] * U
        return np.abs(np.where(om, S - Pc, Pc)).max(), delta

    cases = [(["--x", xf, "--p", pf, "--mask", "causal", "--dk", "2"], om, False),
             (["--x", xf, "--p", pf, "--mask", "causal", "--dk", "2", "--bias"], om, True),
             (["--x", xf, "--p", ppf, "--mask", f("pad2.npy", valid), "--dk", "3", "--bias"],
              ompad, True)]
    for nn, dd, dk, spec in ((8, 8, 2, "causal"), (10, 4, 3, "causal"), (9, 9, 2, "causal,window:4"),
                             (7, 3, 2, "causal")):
        mo = np.ones((nn, nn), bool)
        i, jj = np.indices((nn, nn))
        if "causal" in spec:
            mo &= i <= jj
        if "window" in spec:
            mo &= jj - i < 4
        for bias in (False, True):
            cases.append((["--n", str(nn), "--d", str(dd), "--dk", str(dk), "--representable",
                           "--mask", spec, "--seed", str(seed % 1000)] + (["--bias"] if bias else []),
                          mo, bias))
    for args, mo, bias in cases:
        j, w = written(args, mo, bias)
        if w is None:
            if j["verdict"] == "PROVED" and j["route"] != "masked":
                fail("%s: PROVED without weights" % args)
            continue
        Wq, Wk, Xw, Pw = w
        Xc = Xw if Xw is not None else np.load(args[args.index("--x") + 1])
        Pc = Pw if Pw is not None else np.load(args[args.index("--p") + 1])
        if Wq.shape[1] != Xc.shape[0] + (1 if bias else 0):
            fail("%s: Wq is %s for d = %d (bias %s)" % (args, Wq.shape, Xc.shape[0], bias))
            continue
        dev, delta = maxdev(Xc, Pc, Wq, Wk, mo, bias)
        wc = j["weights"]
        if not (wc["lo"] - delta <= dev <= wc["hi"] + delta):
            fail("%s: NumPy's max|Softmax_Omega - P| = %.3g outside the certified [%.3g, %.3g] "
                 "(+- %.2g)" % (args, dev, wc["lo"], wc["hi"], delta))
        if dev < j["distance"]["lo"] - delta:
            fail("%s: written weights at %.3g beat the certified lower bound %.3g"
                 % (args, dev, j["distance"]["lo"]))
        if j["bias"] != bias or j["parameters"]["bias"] != bias:
            fail("%s: bias member %s" % (args, j["bias"]))

    # ---- 4. the GPT-2-layout fixture ---------------------------------------------------------
    ids = f("ids.npy", [(7 * i + 3) % 24 for i in range(12)])
    g2 = os.path.join(t, "gpt2")
    p = subprocess.run([mh_tool, "model", os.path.join(here, "models", "gpt2"), "1", g2,
                        "--ids", ids], capture_output=True, text=True)
    if p.returncode:
        fail("mh_tool model: %s" % p.stderr)
    else:
        Xg = np.load(os.path.join(g2, "x.npy")).T            # d x n
        Pg = np.load(os.path.join(g2, "patterns.npy"))[0]    # head 0, row layout [query][key]
        fac = np.load(os.path.join(g2, "t1_factor.npy"))[0]
        gx, gp = f("g2_X.npy", Xg), f("g2_P0.npy", Pg)
        gq = f("g2_Wq.npy", np.load(os.path.join(g2, "t1_wq.npy"))[0] * fac)
        gk = f("g2_Wk.npy", np.load(os.path.join(g2, "t1_wk.npy"))[0])
        base = ["--x", gx, "--p", gp, "--rows", "--mask", "causal"]
        got = {}
        for bias in (False, True):
            j = jrun(base + ["--dk", "4"] + (["--bias"] if bias else []))
            if j is None:
                continue
            th = j["threshold"]
            got[bias] = (th["lo"], th["hi"], j["rank"]["value"], j["distance"]["hi"])
            if not (th["lo"] is not None and th["lo"] <= 4 <= (th["hi"] or 99)) and bias:
                fail("GPT-2 head with --bias: threshold [%s, %s] excludes the model's dk = 4"
                     % (th["lo"], th["hi"]))
            if j["rank"]["value"] != 8 + bias:
                fail("GPT-2: rank of X%s = %s" % (" with ones" if bias else "", j["rank"]["value"]))
        j = jrun(base + ["--dk", "4", "--bias", "--wq", gq, "--wk", gk])
        if j is None or j["verdict"] != "PROVED" or j["given_head"]["hi"] > 1e-12:
            fail("GPT-2: the model's own biased head of size 4 is not PROVED: %s"
                 % (j and (j["verdict"], j.get("given_head"))))
        else:
            got["own"] = j["given_head"]["hi"]
        at = {}
        for bias in (False, True):
            for dk in (1, 2, 3):
                j = jrun(base + ["--dk", str(dk), "--tol", "1e-3"] + (["--bias"] if bias else []))
                at[(bias, dk)] = j and j["verdict"]
        print("GPT-2 layer 1 head 0, n = 12: threshold/rank/dist_hi without bias %s, with bias %s; "
              "own head %s; at tol 1e-3 %s" % (got.get(False), got.get(True), got.get("own"), at))
        # the numbers doc/mathematics.md §3.8 quotes
        text = open(doc, encoding="utf-8").read()
        m = re.search(r"GPT-2 fixture \(tests/t1_mask_cli\.py\): (.*?)\.\n\n", text, re.S)
        if not m:
            fail("%s: no paragraph 'GPT-2 fixture (tests/t1_mask_cli.py): ...'" % doc)
        else:
            para = " ".join(m.group(1).split())
            want = []
            for bias in (False, True):
                if bias in got:
                    lo, hi, rk, _ = got[bias]
                    want.append("%s: threshold in [%s, %s]" % ("with --bias" if bias else
                                                               "without bias", lo, hi))
            refuted = [dk for dk in (1, 2, 3) if at[(False, dk)] == "REFUTED"
                       and at[(True, dk)] == "REFUTED"]
            want.append("REFUTED at tol 1e-3 for dk <= %d" % max(refuted) if refuted else
                        "REFUTED at tol 1e-3 for no dk")
            for w in want:
                if w not in para:
                    fail("doc §3.8's GPT-2 paragraph does not say '%s': %s" % (w, para))

if failures:
    print("%d failure(s)" % failures)
    sys.exit(1)
print("t1_mask_cli: all passed")
