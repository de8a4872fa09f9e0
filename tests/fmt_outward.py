#!/usr/bin/env python3
"""fmt_outward.py — printed certified bounds are rounded outward, exactly.

usage: fmt_outward.py FMT_TOOL [ATTNCHECK]

ac_fmt_lo / ac_fmt_hi (attncheck/json.h), the one formatter of every
printed certified bound, on doubles across the whole range: random bit
patterns (normal, subnormal, both signs), the neighbours of powers of ten
and of short decimals (0.1, 2.5, 2.8651842, 1e22, ...), 0, -0, the
extremes; for the specs the program prints with (".3g", ".4g", ".6g",
".10g", ".2g", ".17g", ".1e", "+.2f%", "+.4f%", ".4f", "+.2f").  Checked in
exact decimal arithmetic (Python's decimal, independent of the C code):
  the printed lo <= x <= the printed hi (x the double, exactly; 100 x for
  '%'), and each is the nearest such decimal with that many digits (FLOOR
  and CEILING of x at that precision), so nothing is given away either.
With ATTNCHECK, also end to end: the intervals `condition --certify`
prints (mean, median, the relative errors in percent, dev) and those of
`rep-theorem` (the distance, the weights) contain the exact ones of the same
run's --json (JSON writes the doubles exactly).
Exit 0 when every case holds, 1 otherwise (each failure printed with the
seed, FMT_OUTWARD_SEED).
"""
import json
import os
import random
import re
import struct
import subprocess
import sys
from decimal import Decimal, Context, ROUND_FLOOR, ROUND_CEILING

SPECS = [".3g", ".4g", ".6g", ".10g", ".2g", ".17g", ".1e", "+.2f%", "+.4f%", ".4f", "+.2f"]
SEED = int(os.environ.get("FMT_OUTWARD_SEED", "20261201"))


def doubles(rng, count):
    out = [0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
           -1.7976931348623157e308, 1.0, -1.0]
    for s in ("0.1", "2.5", "2.8651842", "1e22", "1e23", "0.3", "123456.5", "9.995",
              "0.0005", "1e-5", "7e-300", "99.995", "0.125"):
        x = float(s)
        for v in (x, -x):
            out += [v, float.fromhex(v.hex()), next_up(v), next_down(v)]
    for e in range(-320, 309, 7):
        x = 10.0 ** e if e > -308 else float("1e%d" % e)
        out += [x, next_up(x), next_down(x)]
    while len(out) < count:
        bits = rng.getrandbits(64)
        x = struct.unpack("<d", struct.pack("<Q", bits))[0]
        if x == x and abs(x) != float("inf"):
            out.append(x)
        # values of moderate size too, where the fixed formats are short
        out.append(rng.uniform(-1e4, 1e4) * 2.0 ** rng.randint(-40, 10))
    return out


def next_up(x):
    import math
    return math.nextafter(x, float("inf"))


def next_down(x):
    import math
    return math.nextafter(x, float("-inf"))


def bound(x, spec, rounding):
    """x rounded as spec asks, in the direction given, exactly."""
    d = Decimal(x)
    if spec.endswith("%"):
        d = times100(d)
        spec = spec[:-1]
    prec = int(spec.lstrip("+ -")[1:-1])
    conv = spec[-1]
    if d == 0:
        return Decimal(0)
    if conv == "f":
        big = Context(prec=2000, Emin=-999999, Emax=999999)
        return d.quantize(Decimal(1).scaleb(-prec), rounding=rounding, context=big)
    p = prec + 1 if conv == "e" else max(prec, 1)
    return Context(prec=p, rounding=rounding, Emin=-999999, Emax=999999).plus(d)


def times100(d):
    """100 d exactly (Decimal arithmetic would round to the context's 28 digits)"""
    t = d.as_tuple()
    return Decimal((t.sign, t.digits, t.exponent + 2))


def parse(s):
    return Decimal(s[:-1] if s.endswith("%") else s)


def main():
    tool = sys.argv[1]
    rng = random.Random(SEED)
    xs = doubles(rng, 4000)
    inp = "".join(x.hex() + "\n" for x in xs)
    p = subprocess.run([tool] + SPECS, input=inp, capture_output=True, text=True, check=True)
    lines = p.stdout.split("\n")
    fails = 0
    k = 0
    for x in xs:
        for spec in SPECS:
            lo_s, hi_s = lines[k].split()
            k += 1
            xd = times100(Decimal(x)) if spec.endswith("%") else Decimal(x)
            lo, hi = parse(lo_s), parse(hi_s)
            want_lo, want_hi = bound(x, spec, ROUND_FLOOR), bound(x, spec, ROUND_CEILING)
            ok = lo <= xd <= hi and lo == want_lo and hi == want_hi
            if spec.endswith("%") != lo_s.endswith("%") or spec.endswith("%") != hi_s.endswith("%"):
                ok = False
            if spec.startswith("+") and not (lo_s[0] in "+-" and hi_s[0] in "+-"):
                ok = False
            if not ok:
                fails += 1
                if fails <= 20:
                    print("FAIL %r spec %s: printed [%s, %s], want [%s, %s] (seed %d)"
                          % (x, spec, lo_s, hi_s, want_lo, want_hi, SEED))
    print("fmt_outward: %d doubles x %d specs, %d failures (seed %d)"
          % (len(xs), len(SPECS), fails, SEED))
    if len(sys.argv) > 2:
        fails += end_to_end(sys.argv[2])
    return 1 if fails else 0


def contains(text_lo, text_hi, lo, hi, what):
    """the printed [text_lo, text_hi] contains the exact [lo, hi]"""
    a, b = parse(text_lo), parse(text_hi)
    pct = text_lo.endswith("%")
    elo, ehi = Decimal(lo), Decimal(hi)
    if pct:
        elo, ehi = times100(elo), times100(ehi)
    if not (a <= elo and ehi <= b):
        print("FAIL %s: printed [%s, %s] does not contain the certified [%r, %r]"
              % (what, text_lo, text_hi, lo, hi))
        return 1
    return 0


def end_to_end(exe):
    fails = checks = 0
    sweep = ["condition", "--heads", "1,3", "--seq", "24", "--head-dim", "4", "--trials", "5",
             "--seed", "7", "--certify"]
    js = json.loads(subprocess.run([exe] + sweep + ["--json"], capture_output=True,
                                   text=True).stdout)
    txt = subprocess.run([exe] + sweep, capture_output=True, text=True).stdout
    rows = [ln for ln in txt.split("\n") if re.match(r"\s+\d+\s+\d+ (PROVED|REFUTED|UNDECIDED)", ln)]
    for ln, r in zip(rows, js["results"]):
        c = r["certified"]
        iv = re.findall(r"\[([^,\]]+), ([^\]]+)\]", ln)
        for (a, b), key in zip(iv, ("mean", "median", "first_order_vs_mean", "tw_point_vs_mean")):
            checks += 1
            fails += contains(a, b, c[key][0], c[key][1], "condition h = %d %s" % (r["h"], key))
    m = re.search(r"dev = max \|kappa/kappa~ - 1\| in \[([^,]+), ([^\]]+)\]", txt)
    checks += 1
    fails += contains(m.group(1), m.group(2), js["certificate"]["lo"], js["certificate"]["hi"],
                      "condition dev")
    for args in (["--d", "4", "--n", "8", "--dk", "2", "--seed", "3"],
                 ["--n", "6", "--dk", "4", "--seed", "2"], ["--example", "paper", "--dk", "1"]):
        js = json.loads(subprocess.run([exe, "rep-theorem"] + args + ["--json"],
                                       capture_output=True, text=True).stdout)
        txt = subprocess.run([exe, "rep-theorem"] + args, capture_output=True, text=True).stdout
        for label, key in (("distance", "distance"), ("weights", "weights")):
            m = re.search(r"^%s .* in \[([^,]+), ([^\]]+)\]" % label, txt, re.M)
            if m and js.get(key) and js[key].get("lo") is not None:
                checks += 1
                fails += contains(m.group(1), m.group(2), js[key]["lo"],
                                  js[key]["hi"] if js[key]["hi"] is not None else float("inf"),
                                  "rep-theorem %s %s" % (" ".join(args), label))
    if checks < 10:
        print("FAIL end to end: only %d intervals found in the output" % checks)
        fails += 1
    print("fmt_outward end to end: %d printed intervals, %d failures" % (checks, fails))
    return fails


if __name__ == "__main__":
    sys.exit(main())
