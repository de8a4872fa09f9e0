#!/usr/bin/env python3
"""attncheck.condition and attncheck.merge (Python) against the program.

Usage: python_condition.py ATTNCHECK   (the program of the same build; run
by python_condition.sh with PYTHONPATH and ATTNCHECK_LIBRARY set).

The package computes exactly what the program computes (the same library
call, the same serialiser): every JSON member equal but the times, for
sweeps with every option, shards written from Python and merged by either
side, the sweep's options read back from a shard (odd doubles, the largest
seed, words spelled as a command line spells them), --model; the arrays
agree with the JSON and with each other (kappa = sigma1 / sigmin, the
certified enclosures within rtol of kappa for a PROVED sample); every option
of the command is a keyword; bad arguments raise InputError with the
program's status.  Seeds come from ATTNCHECK_TEST_SEED (printed)."""
import inspect
import json
import math
import os
import random
import subprocess
import sys
import tempfile

import numpy as np

import attncheck as ac

EXE = sys.argv[1]
SEED = int(os.environ.get("ATTNCHECK_TEST_SEED", "1"))
U = 2.0 ** -53
failures = 0
print("seed %d (ATTNCHECK_TEST_SEED)" % SEED)
rng = random.Random(SEED)
tmp = tempfile.mkdtemp(prefix="python_condition.")


def check(cond, what):
    global failures
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures += 1


def strip(o):
    """the JSON without what depends on the clock or the threads"""
    if isinstance(o, dict):
        return {k: strip(v) for k, v in o.items()
                if k not in ("time", "seconds", "wall", "threads")}
    if isinstance(o, list):
        return [strip(v) for v in o]
    return o


def program(*args):
    p = subprocess.run([EXE] + [str(a) for a in args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def program_json(*args):
    rc, out, err = program(*args, "--json")
    if rc > 2:
        raise RuntimeError("attncheck %s: %d: %s" % (args, rc, err))
    return rc, json.loads(out)


def raises(f, cls, status, words, what):
    try:
        f()
    except cls as e:
        ok = (status is None or getattr(e, "status", None) == status) and \
            all(w in str(e) for w in words)
        check(ok, "%s: %s %s" % (what, type(e).__name__, e))
        return
    except Exception as e:  # noqa: BLE001 (reported as a failure)
        check(False, "%s: %s %s instead of %s" % (what, type(e).__name__, e, cls.__name__))
        return
    check(False, "%s: no error" % what)


# ---- every option of the command is a keyword -----------------------------------
opts = [o for o in ac.COMMANDS["condition"]["options"] if not o["program_only"]]
sig = inspect.signature(ac.condition)
legacy = ["heads", "seq", "head_dim", "input_dim", "mode", "trials", "seed"]
check(list(sig.parameters)[:7] == legacy, "condition keeps its arguments: %s"
      % list(sig.parameters)[:7])
check(all(o["python"] in sig.parameters for o in opts) and
      all(sig.parameters[o["python"]].kind == inspect.Parameter.KEYWORD_ONLY
          for o in opts if o["python"] not in legacy),
      "every option of condition is a keyword, the new ones keyword-only: %s"
      % [o["python"] for o in opts])
check(list(inspect.signature(ac.merge).parameters) == ["files", "threads"],
      "merge(files, *, threads)")
check({"json", "csv", "plot", "trace"} ==
      {o["name"] for o in ac.COMMANDS["condition"]["options"] if o["program_only"]},
      "the program's outputs are not arguments")

# ---- sweeps: the program's numbers --------------------------------------------------
rtol = rng.choice([1e-8, 3e-9, 1.0 / 3.0 * 1e-7])
seed = rng.randrange(1, 2 ** 32)
sweeps = [
    (dict(heads=[1, 3], seq=24, head_dim=4, trials=7, seed=seed, certify=True, spectrum=True,
          bins=5, rtol=rtol, max_prec=256),
     ["--heads", "1,3", "--seq", 24, "--head-dim", 4, "--trials", 7, "--seed", seed,
      "--certify", "--spectrum", "--bins", 5, "--rtol", repr(rtol), "--max-prec", 256]),
    (dict(heads=[4, 1, 2], embed=16, seq=16, trials=5, mode="attention", input_dim=7, seed=seed),
     ["--heads", "4,1,2", "--embed", 16, "--seq", 16, "--trials", 5, "--mode", "attention",
      "--input-dim", 7, "--seed", seed]),
    (dict(heads=[2], seq=8, head_dim=4, trials=4, certify=True, mode="attention"),
     ["--heads", 2, "--seq", 8, "--head-dim", 4, "--trials", 4, "--certify", "--mode",
      "attention"]),
]
for kw, args in sweeps:
    r = ac.condition(**kw)
    rc, j = program_json("condition", *args)
    check(strip(r.json) == strip(j) and r.status == rc,
          "condition(%s) equals `condition %s --json` (status %d)"
          % (kw, " ".join(map(str, args)), rc))
    T, nh = kw["trials"], len(kw["heads"])
    k, s1, sm = r.kappa, r.sigma1, r.sigmin
    check(k.shape == (nh, T) and s1.shape == (nh, T) and sm.shape == (nh, T),
          "  kappa, sigma1, sigmin: one row of %d samples per h" % T)
    check(np.all(np.abs(k - s1 / sm) <= 2 * U * k) and np.all(k >= 1),
          "  kappa = sigma1 / sigmin >= 1 for every sample")
    for i, x in enumerate(r.results):
        med = np.quantile(k[i], 0.5)
        check(abs(med - x.stats.median) <= 4 * U * med and x.h == kw["heads"][i],
              "  h = %d: the median of the row is the JSON's (%.10g)" % (x.h, x.stats.median))
        row = r.rows[i]
        check(row.h == x.h and np.array_equal(row.kappa, k[i]) and row.median == x.stats.median,
              "  .rows[%d] as before" % i)
    if kw.get("certify"):
        lo, hi = r.kappa_lo, r.kappa_hi
        proved = np.array([[True] * T for _ in range(nh)]) if r.verdict == "PROVED" else None
        check(lo.shape == (nh, T) and np.all(lo <= hi),
              "  certified enclosures kappa_lo <= kappa_hi")
        if proved is not None:
            # claim C: (1 - rtol) kappa~ <= kappa <= (1 + rtol) kappa~, with room for
            # the rounding of the products here
            rt = r.parameters.rtol
            check(np.all(hi >= (1 - rt) * k * (1 - 4 * U)) and
                  np.all(lo <= (1 + rt) * k * (1 + 4 * U)),
                  "  PROVED: every enclosure meets [(1 - rtol) kappa~, (1 + rtol) kappa~]")
    else:
        check("kappa_lo" not in r.arrays, "  no enclosures without certify")
    if kw.get("spectrum"):
        for i, x in enumerate(r.results):
            e = r.arrays["eig_h%d" % x.h]
            m = min(x.N, x.D)
            check(e.shape == (T, m) and np.all(np.diff(e, axis=1) >= 0) and np.all(e >= 0),
                  "  eig_h%d: %d x %d, ascending, >= 0" % (x.h, T, m))

# the arguments it always had, positionally, and the threads
old = ac.condition([1, 2], 16, 4, 0, "iid", 20, 1)
rc, j = program_json("condition", "--heads", "1,2", "--seq", 16, "--head-dim", 4, "--trials", 20)
check(strip(old.json) == strip(j) and old.mode == "iid" and len(old.rows) == 2,
      "condition([1, 2], 16, 4, 0, 'iid', 20, 1) as before")
t1 = ac.condition([2, 5], 20, 4, trials=9, threads=1, mode="attention")
t2 = ac.condition([2, 5], 20, 4, trials=9, threads=2, mode="attention")
check(strip(t1.json) == strip(t2.json) and np.array_equal(t1.kappa, t2.kappa) and
      t1.parameters.threads == 1 and t2.parameters.threads == 2,
      "the same result on 1 and 2 threads")

# ---- shards from Python, merged by Python and by the program ----------------------------
whole_kw = dict(heads=[1, 3], seq=24, head_dim=4, trials=11, seed=(1 << 64) - 1, certify=True,
                spectrum=True, bins=4, rtol=1.0 / 3.0 * 1e-8, mode="attention", input_dim=5)
whole = ac.condition(**whole_kw)
k = rng.randrange(2, 6)
files = []
for i in range(1, k + 1):
    f = os.path.join(tmp, "s%d.json" % i)
    s = ac.condition(**whole_kw, shard=(i, k), samples_out=f, threads=1 + i % 2)
    files.append(f)
    check(s.verdict is None and s.status == 0 and s.shard == [i, k] and os.path.exists(f),
          "shard %d/%d written from Python (trials %s)" % (i, k, s.trials))
order = files[:]
rng.shuffle(order)
m = ac.merge(order)
check(strip(m.json) == strip(whole.json) and m.status == whole.status,
      "merge of %d shards in the order %s equals the whole sweep (%s)"
      % (k, [os.path.basename(f) for f in order], m.verdict))
check(all(np.array_equal(m.arrays[a], whole.arrays[a]) for a in whole.arrays) and
      set(m.arrays) == set(whole.arrays), "  and so do its arrays: %s" % sorted(m.arrays))
rc, pj = program_json("merge", *order)
check(strip(pj) == strip(whole.json), "the program merges Python's shards to the same result")
rc, out, err = program("merge", "--threads", 1, "--json", *order)
check(rc == whole.status and strip(json.loads(out)) == strip(whole.json),
      "merge takes its options before the files too")
words = json.load(open(files[0]))["words"]
check(words[:2] == ["--heads", "1,3"] and "--threads" not in words and "--shard" not in words
      and "--samples-out" not in words and words[words.index("--seed") + 1] == str((1 << 64) - 1),
      "a shard records the sweep's options once, canonically: %s" % " ".join(words))

# the words as a command line spells them: unique prefixes, --name=value
legacy_words = ["--heads", "1,3", "--seq=24", "--head-d", "4", "--tri=11", "--seed",
                str((1 << 64) - 1), "--cert", "--spec", "--bins", "4", "--rtol",
                repr(1.0 / 3.0 * 1e-8), "--mode=attention", "--inp", "5"]


def rewrite(src, dst, words):
    """the shard src with other words, its checksum recomputed as attncheck
    writes it (FNV-1a of every byte before ,"fnv1a64"), so that merge reads
    the words and not a corrupt file"""
    o = json.load(open(src))
    o["words"] = words
    o.pop("fnv1a64", None)
    body = json.dumps(o, separators=(",", ":"))[:-1]
    h = 0xcbf29ce484222325
    for b in body.encode():
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    with open(dst, "w") as f:
        f.write(body + ',"fnv1a64":"%016x"}\n' % h)


lw = []
for i, f in enumerate(files):
    g = os.path.join(tmp, "legacy%d.json" % i)
    rewrite(f, g, legacy_words)
    lw.append(g)
m2 = ac.merge(lw)
check(strip(m2.json) == strip(whole.json),
      "words spelled by a command line (prefixes, --name=value) merge to the same result")
for bad, what in ((["--json"] + words, "an output option"), (words + ["--se", "3"], "an ambiguous prefix"),
                  (words + ["--threads", "2"], "--threads"), (words + ["x"], "an operand"),
                  (words + ["--cert=1"], "a flag with a value")):
    b = [os.path.join(tmp, "bad%d.json" % i) for i in range(len(files))]
    for f, g in zip(files, b):
        rewrite(f, g, bad)
    raises(lambda: ac.merge(b), ac.InputError, 65, ["inconsistent shard file", "bad0.json"],
           "a shard whose words bring %s" % what)
b = [os.path.join(tmp, "val%d.json" % i) for i in range(len(files))]
for f, g in zip(files, b):
    rewrite(f, g, [w if w != "11" else "0" for w in words])
raises(lambda: ac.merge(b), ac.InputError, 65, ["inconsistent shard file", "--trials"],
       "a shard whose words give a value out of range")
for f, g in zip(files, b):
    rewrite(f, g, words + ["--bins"])
raises(lambda: ac.merge(b), ac.InputError, 65, ["inconsistent shard file", "'--bins' needs a value"],
       "a shard whose words end without a value")
raises(lambda: ac.merge(files[:-1]), ac.InputError, 65, ["missing"], "a shard missing")
raises(lambda: ac.merge([]), ac.InputError, 64, ["merge needs the shard files"], "no files")
raises(lambda: ac.merge([os.path.join(tmp, "nope.json")]), ac.InputError, 66, ["nope.json"],
       "a file that does not exist")

# ---- bad arguments ------------------------------------------------------------------------
raises(lambda: ac.condition([1], 16, 4, rtol=1), ac.InputError, 64, ["rtol"], "rtol = 1")
raises(lambda: ac.condition([2, 2], 16, 4), ac.InputError, 64, ["appears twice"], "h twice")
raises(lambda: ac.condition([1], 16, 4, embed=8), ac.InputError, 64, ["alternatives"],
       "head_dim and embed")
raises(lambda: ac.condition([1], 16, 4, shard=(1, 2)), ac.InputError, 64, ["go together"],
       "shard without samples_out")
raises(lambda: ac.condition([1], 16, 4, frobnicate=1), TypeError, None, ["frobnicate"],
       "an unknown keyword")
raises(lambda: ac.condition([1], 16, 4, data="x"), ac.InputError, 64, ["--model"],
       "data without model")

# ---- trained heads (--model) --------------------------------------------------------------
ck = os.path.join(tmp, "lo")
rc, out, err = program("train", "--task", "listops", "--width", 16, "--heads", 2, "--seq", 24,
                       "--batch", 4, "--steps", 6, "--quiet", "--save", ck)
if rc != 0:
    check(False, "train a ListOps checkpoint: %s" % err)
else:
    r = ac.condition(model=ck, trials=3, batches=1)
    rc, j = program_json("condition", "--model", ck, "--trials", 3, "--batches", 1)
    check(strip(r.json) == strip(j) and r.status == 2 == rc and r.verdict is None,
          "condition(model=...) equals `condition --model ... --json` (status 2, measured)")
    L, n = r.num_layers, r.sequences
    check(r.kappa.shape == (L, n) and all(r.kappa[l].tolist() == x.kappa
                                         for l, x in enumerate(r.layers)) and
          r.init_kappa.shape == (L, n) and r.gauss_kappa.shape == (1, 3),
          "  arrays: kappa and init_kappa per layer (the JSON's), the Gaussian heads' kappa")
    check(all(abs(x.ratio_gauss_pred - x.kappa_median / r.gaussian.prediction_median)
              <= 2 * U * x.ratio_gauss_pred for x in r.layers),
          "  the ratios are the medians' quotients")
    raises(lambda: ac.condition(model=ck, heads=[4]), ac.InputError, 64,
           ["does not apply with --model"], "heads with model")
    raises(lambda: ac.condition(model=os.path.join(tmp, "none")), ac.InputError, 66, ["none"],
           "a checkpoint that does not exist")

print("%d failure(s)" % failures)
sys.exit(1 if failures else 0)
