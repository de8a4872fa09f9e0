#!/usr/bin/env python3
"""shard_hostile.py — hostile condition shards for `attncheck merge`
(attncheck-merge(1), CHECKS; src/conditioning/shard.c).

Three clean shard sets are written by `attncheck condition --shard I/2`
(i.i.d. certified, attention certified with the rank refutation of
doc/mathematics.md §5.10, i.i.d. not certified); every case below damages
one file of a set and runs `attncheck merge` on the set.

Classes and what each must give:
  field      each of the 18 fields of a sample, each time and each
             eigenvalue, set to NaN, +-inf, -1, 0, 2x, the next double up,
             the next down, a huge whole number; the checksum recomputed
             (tampering).  The oracle below re-derives from the documented
             rules (attncheck-merge(1), CHECKS) whether the sample still
             agrees with itself: if not, 65 "inconsistent shard file" naming
             the file, h and the trial; if so, the merge must succeed
             (exit 0, 1 or 2) and its --json must pass the schema.
  corrupt    the same edits without recomputing the checksum: 65 "corrupt
             shard file" "checksum mismatch" (unless the edit left the
             bytes unchanged).
  header     shard I/K, the trial range, T, N, h, d, E, rtol, seed, mode,
             spectrum, the words, the versions: 65, naming the file.
  truncate   the file cut at every one of 120 offsets spread over it and at
             each of the last 40 bytes: 65 "corrupt shard file"; cutting only
             the final newline changes nothing (exit as the clean set).
  duplicate  the same shard twice, a member given twice (checksum
             recomputed), a shard relabelled as the other one: 65.
  mixed      a version-1 shard (no checksum) with a version-2 one, another
             attncheck version, another seed: 65; a whole version-1 set is
             read and merges to exactly the clean result.
  huge       T = 2^60, 2^40 + 1, K = 2^40, h = 2^60, N = 2^30, whole numbers
             beyond 2^63, a trial range up to 2^62: 65 (never 70 "out of
             memory").
Usage: shard_hostile.py ATTNCHECK [smoke|full]   (seed: SHARD_HOSTILE_SEED)
"""
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import json_schema  # noqa: E402

A = sys.argv[1] if len(sys.argv) > 1 else "./attncheck"
TIER = sys.argv[2] if len(sys.argv) > 2 else "smoke"
SEED = int(os.environ.get("SHARD_HOSTILE_SEED", "20261201"))
rng = random.Random(SEED)
INF = math.inf
FNV_INIT, FNV_PRIME = 0xcbf29ce484222325, 0x100000001b3
SUM_KEY = ',"fnv1a64":"'
FIELDS = ["kappa", "sigma1", "sigmin", "relerr", "route", "resolved", "prec", "cert",
          "cert_stage", "cert_prec", "s1_lo", "s1_hi", "smin_lo", "smin_hi", "kappa_lo",
          "kappa_hi", "dev_lo", "dev_hi"]
INTS = set(range(4, 10))
PROVED, REFUTED, UNDECIDED = 0, 1, 2
STAGE_NONE, STAGE_EXACT = -2, -1


def fnv1a(data):
    h = FNV_INIT
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return h


def dumps(obj, version=2, checksum=True):
    """The shard text attncheck writes: compact JSON, then (version 2) the
    checksum of every byte before ,"fnv1a64"."""
    o = dict(obj)
    o.pop("fnv1a64", None)
    o["version"] = version
    text = json.dumps(o, separators=(",", ":"))
    if version == 2 and checksum:
        body = text[:-1]
        return body + SUM_KEY + "%016x" % fnv1a(body.encode()) + '"}\n'
    return text + "\n"


def hexd(x):
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return float.hex(x)


def fromhex(s):
    return float(s) if s in ("nan", "inf", "-inf") else float.fromhex(s)


def up(x):
    return math.nextafter(x, INF)


def dn(x):
    return math.nextafter(x, -INF)


def div(a, b):
    if b == 0:
        return INF if a > 0 else math.nan
    return a / b


def judge_le(lo, hi, tau):
    if math.isnan(lo) or math.isnan(hi):
        return UNDECIDED
    if hi <= tau:
        return PROVED
    if lo > tau:
        return REFUTED
    return UNDECIDED


def fmax(a, b):
    return b if math.isnan(a) else a if math.isnan(b) else max(a, b)


def sample_ok(v, rtol, mode, certify, attn_refuted, max_prec=1024, sched=(128, 256, 512, 1024)):
    """Whether sample v (18 raw JSON values) agrees with itself and with the
    sweep's options, by the rules of attncheck-merge(1), CHECKS."""
    try:
        d = [fromhex(x) if k not in INTS else x for k, x in enumerate(v)]
    except (TypeError, ValueError):
        return False
    if any(not isinstance(d[k], int) or isinstance(d[k], bool) for k in INTS):
        return False
    kappa, s1, sm, relerr = d[0:4]
    route, resolved, prec, cert, stage, cprec = d[4:10]
    enc = d[10:18]
    if any(math.isnan(x) for x in d[0:4] + enc):
        return False
    if route not in (0, 1, 2) or resolved not in (0, 1):
        return False
    if not (math.isfinite(s1) and s1 >= 0 and math.isfinite(sm) and sm >= 0 and relerr >= 0):
        return False
    if resolved:
        if kappa != (div(s1, sm) if sm > 0 else INF):
            return False
    elif route != 2 or kappa != INF or relerr != INF:
        return False
    if (prec < 53 or prec > max_prec) if route == 2 else prec != 53:
        return False
    if cert not in (0, 1, 2):
        return False
    if (stage != STAGE_NONE) != certify:
        return False
    if stage == STAGE_NONE:
        return all(x == 0 for x in enc) and cert == UNDECIDED and cprec == 0
    if (stage == STAGE_EXACT) != attn_refuted:
        return False
    if stage == STAGE_EXACT:
        return (mode == "attention" and cert == REFUTED and cprec == 0 and
                enc == [0, INF, 0, 0, INF, INF, INF, INF])
    if stage < 0 or stage > len(sched):
        return False
    if stage == 0 and cprec != 53:
        return False
    if stage >= 1 and cprec != sched[stage - 1]:
        return False
    s1lo, s1hi, smlo, smhi, klo, khi, dlo, dhi = enc
    if not (0 <= s1lo <= s1hi and 0 <= smlo <= smhi and klo <= khi and 0 <= dlo <= dhi):
        return False
    # the kappa enclosure from the sigma enclosures (certify.c)
    wklo = dn(s1lo / smhi) if smhi > 0 and math.isfinite(smhi) else 0.0
    wkhi = up(div(s1hi, smlo)) if smlo > 0 else INF
    wklo = max(wklo, 1.0)
    if (wklo, wkhi) != (klo, khi):
        return False
    # dev and the verdict from kappa~ and the kappa enclosure
    if not kappa > 0:
        wd = (0.0, INF)
    elif math.isinf(kappa):
        wd = (1.0 if math.isfinite(khi) else 0.0, 1.0)
    else:
        rlo, rhi = dn(klo / kappa), up(div(khi, kappa))
        wd = (fmax(0.0, fmax(dn(rlo - 1), dn(1 - rhi))), fmax(up(rhi - 1), up(1 - rlo)))
    if wd != (dlo, dhi):
        return False
    if judge_le(dlo, dhi, rtol) != cert:
        return False
    if cert == UNDECIDED and stage != len(sched):
        return False
    return True


class Runner:
    def __init__(self, tmp):
        self.tmp = tmp
        self.fail = 0
        self.count = {}
        self.n = 0

    def merge(self, files, json_out=False):
        cmd = [A, "merge"] + files + (["--json"] if json_out else [])
        p = subprocess.run(cmd, capture_output=True, text=True)
        return p.returncode, p.stdout, p.stderr

    def check(self, cls, what, files, want, pats=()):
        """want: 65, or "ok" (0, 1 or 2 with a valid --json)."""
        self.n += 1
        self.count[cls] = self.count.get(cls, 0) + 1
        rc, out, err = self.merge(files, json_out=(want == "ok"))
        bad = None
        if want == "ok":
            if rc not in (0, 1, 2):
                bad = "exit %d, want 0/1/2: %s" % (rc, err.strip())
            else:
                try:
                    json_schema.load(out, "merge")
                except (AssertionError, ValueError) as e:
                    bad = "--json: %s" % e
        else:
            if rc != want:
                bad = "exit %d, want %d: %s" % (rc, want, err.strip())
            elif len(err.strip().splitlines()) != 1:
                bad = "not a one-line message: %r" % err
            else:
                for p in pats:
                    if p not in err:
                        bad = "message lacks %r: %s" % (p, err.strip())
                        break
        if bad:
            self.fail += 1
            print("FAIL [%s] %s: %s  (seed %d)" % (cls, what, bad, SEED))
        return rc, err


def make_set(tmp, name, sweep):
    files = []
    for i in (1, 2):
        f = os.path.join(tmp, "%s%d.json" % (name, i))
        subprocess.run([A, "condition"] + sweep.split() + ["--shard", "%d/2" % i, "--samples-out", f],
                       check=True, capture_output=True)
        files.append(f)
    return files


def load(path):
    text = open(path).read()
    return text, json.loads(text)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def perturbations(x, is_int, tier):
    if is_int:
        vals = [x + 1, x - 1, -3, 9, 1 << 62, 53, 0]
    else:
        f = fromhex(x)
        vals = [math.nan, INF, -INF, -1.0, 0.0, 2 * f if math.isfinite(f) else 1.0,
                up(f) if math.isfinite(f) else 1.0, dn(f) if math.isfinite(f) and f != 0 else 2.0,
                1e300]
        vals = [hexd(v) for v in vals]
    vals = [v for v in vals if v != x]
    if tier == "smoke":
        vals = [rng.choice(vals)]
    return vals


def main():
    if not os.path.exists(A):
        print("no attncheck at %s" % A)
        return 1
    tmp = tempfile.mkdtemp(prefix="shard_hostile.")
    R = Runner(tmp)
    try:
        return run(R, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(R, tmp):
    sets = {
        "iid": ("--heads 1,2 --seq 6 --head-dim 3 --trials 5 --seed 7 --certify", True, False),
        "attn": ("--mode attention --input-dim 2 --heads 1,2 --seq 6 --head-dim 3 --trials 4 "
                 "--seed 3 --certify", True, True),
        "plain": ("--heads 2 --seq 5 --head-dim 2 --trials 4 --seed 5 --spectrum", False, False),
    }
    clean = {}
    for name, (sweep, certify, refuted) in sets.items():
        files = make_set(tmp, name, sweep)
        for f in files:
            text, obj = load(f)
            if dumps(obj) != text:
                R.fail += 1
                print("FAIL: the test's writer does not reproduce %s byte for byte" % f)
                return 1
        rc, out, err = R.merge(files, json_out=True)
        if rc not in (0, 1, 2):
            print("FAIL: clean set %s: exit %d: %s" % (name, rc, err))
            return 1
        clean[name] = (files, json.loads(out), certify, refuted, rc)

    bad_path = os.path.join(tmp, "bad.json")

    def with_bad(files, k):
        return [bad_path if j == k else f for j, f in enumerate(files)]

    # ---- field: tampered samples (checksum recomputed) and corrupt ones (not)
    for name, (files, _, certify, refuted, _) in clean.items():
        for k, f in enumerate(files):
            text, obj = load(f)
            if not R_full() and k != 0:
                continue
            for ri, res in enumerate(obj["results"]):
                if not R_full() and ri != rng.randrange(len(obj["results"])):
                    continue
                h = res["h"]
                lo = obj["trials"][0]
                for t in [rng.randrange(len(res["samples"]))]:
                    for fi in (range(18) if R_full() else rng.sample(range(18), 8)):
                        for val in perturbations(res["samples"][t][fi], fi in INTS, TIER):
                            o2 = json.loads(text)
                            o2["results"][ri]["samples"][t][fi] = val
                            ok = sample_ok(o2["results"][ri]["samples"][t], fromhex(res["rtol"]),
                                           res["mode"], certify,
                                           refuted and name == "attn")
                            write(bad_path, dumps(o2))
                            what = "%s %s h=%d trial %d %s=%r" % (name, os.path.basename(f), h,
                                                                   lo + t, FIELDS[fi], val)
                            if ok:
                                R.check("field", what, with_bad(files, k), "ok")
                            else:
                                R.check("field", what, with_bad(files, k), 65,
                                        (bad_path, "inconsistent shard file",
                                         "h = %d, trial %d" % (h, lo + t)))
                            if rng.random() < 0.3:
                                # the same edit, the old checksum kept
                                t2 = dumps(o2)
                                t2 = t2[:t2.rindex(SUM_KEY)] + text[text.rindex(SUM_KEY):]
                                write(bad_path, t2)
                                R.check("corrupt", what, with_bad(files, k), 65,
                                        (bad_path, "corrupt shard file", "checksum mismatch"))
                # times and eigenvalues
                for key in ("time", "eig"):
                    if key not in res:
                        continue
                    for val in ("nan", "-0x1p+0", "inf"):
                        o2 = json.loads(text)
                        if key == "time":
                            o2["results"][ri]["time"][rng.randrange(6)] = val
                            pat = "h = %d: a time" % h
                        else:
                            t = rng.randrange(len(res["eig"]))
                            o2["results"][ri]["eig"][t][rng.randrange(len(res["eig"][t]))] = val
                            pat = "h = %d, trial %d: eigenvalue" % (h, lo + t)
                        if key == "eig" and val == "-0x1p+0":
                            continue  # a negative eigenvalue of a rounded Gram matrix is legal
                        write(bad_path, dumps(o2))
                        R.check("field", "%s %s %s=%s" % (name, f, key, val), with_bad(files, k),
                                65, (bad_path, "inconsistent shard file", pat))

    files, cjson, _, _, crc = clean["iid"]
    text1, obj1 = load(files[0])
    text2, obj2 = load(files[1])

    # ---- header
    def hdr(what, edit, pats=()):
        o = json.loads(text1)
        edit(o)
        write(bad_path, dumps(o))
        R.check("header", what, [bad_path, files[1]], 65, (bad_path,) + tuple(pats))

    def set_res(key, val):
        def e(o):
            for r in o["results"]:
                r[key] = val
        return e

    hdr("shard 2/2", lambda o: o.__setitem__("shard", [2, 2]), ("inconsistent",))
    hdr("shard 1/3", lambda o: o.__setitem__("shard", [1, 3]), ("inconsistent",))
    hdr("shard 0/2", lambda o: o.__setitem__("shard", [0, 2]), ("inconsistent",))
    hdr("trials [0,3)", lambda o: o.__setitem__("trials", [0, 3]), ("corrupt",))
    hdr("trials [1,3)", lambda o: o.__setitem__("trials", [1, 3]), ("inconsistent",))
    hdr("T 6", set_res("T", 6), ("inconsistent",))
    hdr("T 0", set_res("T", 0), ("inconsistent",))
    hdr("N 7", set_res("N", 7), ())
    hdr("h 3", lambda o: o["results"][0].__setitem__("h", 3), ())
    hdr("d 0", set_res("d", 0), ("inconsistent",))
    hdr("E 4", set_res("E", 4), ("inconsistent",))
    hdr("rtol 1e-9", set_res("rtol", hexd(1e-9)), ())
    hdr("rtol 0.5", set_res("rtol", hexd(0.5)), ("inconsistent",))
    hdr("rtol nan", set_res("rtol", "nan"), ("inconsistent",))
    hdr("seed 8", set_res("seed", "8"), ())
    hdr("seed -1", set_res("seed", "-1"), ("corrupt",))
    hdr("seed 2^64", set_res("seed", str(1 << 64)), ("corrupt",))
    hdr("mode attention", set_res("mode", "attention"), ("inconsistent",))
    hdr("mode other", set_res("mode", "gaussian"), ("corrupt",))
    hdr("spectrum 3", set_res("spectrum", 3), ("corrupt",))
    hdr("words", lambda o: o["words"].__setitem__(-1, "--spectrum"), ("another sweep",))
    hdr("words --csv", lambda o: o["words"].extend(["--csv", os.path.join(tmp, "x.csv")]), ())
    # words that would bring an output option, --help or an operand into
    # the merge: both shards carry them (checksums recomputed)
    bad2 = os.path.join(tmp, "bad2.json")
    # (a sweep option given wrongly: the option's own message)
    not_opt = "not an option of the sweep"
    for extra, why in ((["--csv", os.path.join(tmp, "x.csv")], not_opt),
                       (["--cs=" + os.path.join(tmp, "x.csv")], not_opt), (["--help"], not_opt),
                       (["--he"], not_opt), (["operand"], not_opt),
                       (["--merge-from", files[0]], not_opt), (["--json"], not_opt),
                       (["--certify=1"], "--certify takes no value"),
                       (["--seed"], "'--seed' needs a value")):
        for src, dst in ((text1, bad_path), (text2, bad2)):
            o = json.loads(src)
            o["words"] += extra
            write(dst, dumps(o))
        R.check("header", "words + %s" % extra, [bad_path, bad2], 65,
                (bad_path, "inconsistent shard file", why))
    o = json.loads(text1)
    write(bad_path, dumps(o, version=3, checksum=False))
    R.check("header", "version 3", [bad_path, files[1]], 65, (bad_path, "format version 3"))
    if os.path.exists(os.path.join(tmp, "x.csv")):
        R.fail += 1
        print("FAIL [header] a word of a shard made merge write a file")
    for what, ed in (("no results", lambda o: o.__setitem__("results", [])),
                     ("no format", lambda o: o.pop("format")),
                     ("a result not an object", lambda o: o["results"].__setitem__(0, 3))):
        o = json.loads(text1)
        ed(o)
        write(bad_path, dumps(o))
        R.check("header", what, [bad_path, files[1]], 65, (bad_path,))

    # ---- truncate
    n = len(text1)
    cuts = sorted(set([int(n * j / 120) for j in range(120)] + list(range(n - 40, n))))
    if TIER == "smoke":
        cuts = sorted(rng.sample(cuts, 12))
    for c in cuts:
        write(bad_path, text1[:c])
        if c == n - 1:  # only the newline
            R.check("truncate", "cut at %d of %d" % (c, n), [bad_path, files[1]], "ok")
        else:
            R.check("truncate", "cut at %d of %d" % (c, n), [bad_path, files[1]], 65,
                    (bad_path, "corrupt shard file" if c > 60 else ""))

    # ---- duplicate
    R.check("duplicate", "shard 1 twice", [files[0], files[0], files[1]], 65, ("given twice",))
    o = json.loads(text1)
    body = json.dumps(dict((k, v) for k, v in o.items() if k != "fnv1a64"), separators=(",", ":"))
    body = body[:-1] + ',"trials":[0,2]'
    write(bad_path, body + SUM_KEY + "%016x" % fnv1a(body.encode()) + '"}\n')
    R.check("duplicate", "member trials twice", [bad_path, files[1]], 65,
            (bad_path, "two members"))
    body = json.dumps(dict((k, v) for k, v in o.items() if k != "fnv1a64"), separators=(",", ":"))
    body = body.replace('"samples":', '"samples":[],"samples":', 1)[:-1]
    write(bad_path, body + SUM_KEY + "%016x" % fnv1a(body.encode()) + '"}\n')
    R.check("duplicate", "member samples twice", [bad_path, files[1]], 65,
            (bad_path, "two members"))
    o = json.loads(text1)
    o["results"][1] = o["results"][0]
    write(bad_path, dumps(o))
    R.check("duplicate", "one result twice", [bad_path, files[1]], 65, ())
    o = json.loads(text2)
    o["shard"] = [1, 2]
    write(bad_path, dumps(o))
    R.check("duplicate", "shard 2 relabelled 1", [bad_path, files[1]], 65, ("inconsistent",))

    # ---- mixed
    write(bad_path, dumps(obj1, version=1))
    R.check("mixed", "version 1 with version 2", [bad_path, files[1]], 65,
            (bad_path, "format 1"))
    o = json.loads(text1)
    o["attncheck"] = "0.0.9"
    write(bad_path, dumps(o))
    R.check("mixed", "another attncheck", [bad_path, files[1]], 65, ("0.0.9",))
    o = json.loads(text1)
    write(bad_path, dumps(o, version=1)[:-2] + ',"fnv1a64":"0000000000000000"}\n')
    R.check("mixed", "version 1 with a checksum", [bad_path, files[1]], 65, ("corrupt",))
    other = make_set(tmp, "other", "--heads 1,2 --seq 6 --head-dim 3 --trials 5 --seed 8 --certify")
    R.check("mixed", "another seed", [files[0], other[1]], 65, ("another sweep",))
    v1 = [os.path.join(tmp, "v1_%d.json" % i) for i in (1, 2)]
    write(v1[0], dumps(obj1, version=1))
    write(v1[1], dumps(obj2, version=1))
    rc, out, err = R.merge(v1, json_out=True)
    R.n += 1
    R.count["mixed"] = R.count.get("mixed", 0) + 1

    def strip(x):
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k not in ("time", "seconds", "wall", "threads")}
        if isinstance(x, list):
            return [strip(v) for v in x]
        return x
    if rc != crc or strip(json.loads(out)) != strip(cjson):
        R.fail += 1
        print("FAIL [mixed] a version-1 set does not merge to the clean result: %d %s" % (rc, err))

    # ---- huge
    for what, ed in (("T 2^60", set_res("T", 1 << 60)), ("T 2^40+1", set_res("T", (1 << 40) + 1)),
                     ("h 2^60", lambda o: o["results"][0].__setitem__("h", 1 << 60)),
                     ("N 2^30", set_res("N", 1 << 30)),
                     ("d 2^64", set_res("d", 1 << 64)),
                     ("K 2^40", lambda o: o.__setitem__("shard", [1, 1 << 40])),
                     ("I 2^63-1", lambda o: o.__setitem__("shard", [(1 << 63) - 1, 2])),
                     ("hi 2^62", lambda o: o.__setitem__("trials", [0, 1 << 62])),
                     ("spectrum 2^50", set_res("spectrum", 1 << 50)),
                     ("prec 2^62", lambda o: o["results"][0]["samples"][0].__setitem__(6, 1 << 62))):
        o = json.loads(text1)
        ed(o)
        write(bad_path, dumps(o))
        R.check("huge", what, [bad_path, files[1]], 65, (bad_path,))

    print("shard_hostile (%s, seed %d): %d cases, %d failed; per class: %s" %
          (TIER, SEED, R.n, R.fail, ", ".join("%s %d" % kv for kv in sorted(R.count.items()))))
    return 1 if R.fail else 0


def R_full():
    return TIER == "full"


if __name__ == "__main__":
    sys.exit(main())
