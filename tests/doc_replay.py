#!/usr/bin/env python3
"""doc_replay.py — replay the commands README, doc/*.md and the man pages
quote with their outputs, and compare the numbers the documents print.

proofs/*.md carry their commands in ```attncheck blocks (tests/proofs.py).
The other documents are read by people as plain text or roff, so their
quotes are listed beside them, in tests/doc_quotes.txt, one entry per
quoted command or measured table:

    == README: the --learn table
    file: README
    run: attncheck rep-theorem --learn --n 16
    tier: slow
    expect: PROVED
    quote: DOCREGEX ~~ OUTREGEX

`run:`    the command, run in a scratch directory (several `run:` lines run
          in order there, and the last one's output is compared; omitted for a quote that
          is checked against the document only: `tier: timing`);
`from:`   in place of `run:`, a file of the source tree whose text stands
          for the output (a measured table the document copies from a
          results file, e.g. examples/experiments/results/*.csv);
`tier:`   quick (make check), slow (make check-docs), timing (a time or
          a speed, measured once, not replayed) or manual (a number measured
          with input files or tools other than attncheck, not replayed; the
          entry says where it is checked, if anywhere); of timing and manual
          entries only the presence in the document is checked, so they
          cannot go missing silently;
`expect:` (optional) the verdict: exit status 0 / 1 / 2 and the printed
          verdict (tests/proofs.py's printed_verdict);
`quote:`  DOCREGEX must match the document (after its whitespace is
          collapsed to single spaces and, for roff, its escapes removed),
          OUTREGEX the command's standard output; their groups are compared
          in order: words exactly, numbers to the digits the document shows
          (the output's number within one unit of the document's last digit;
          a document's 0 must be 0),
          or within `rel R` (relative) when the line ends with ` rel R`
          (a stated tolerance for a statistic).  `OUTREGEX => EXPR` compares
          the document's one group with EXPR of the output's groups g1, g2,
          ... (a ratio the document quotes: `=> g2 / g1`).
Numbers are read in either spelling: 1.15e-14 or 1.15·10⁻¹⁴.

Usage: doc_replay.py [--tier quick|all] [--root DIR] [--only FILE] [QUOTES]
--root reads the documents from DIR (tests/doc_replay_stale.sh plants a
stale number in a copy and checks that it is caught); --only FILE replays
the entries of that document only.
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proofs import EXIT, printed_verdict  # noqa: E402

SUP = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")


def number(s):
    """The value of a printed number (1.15e-14, 1.15·10⁻¹⁴, 3.4·10³, 62,
    -0.5, 83%) and the unit of its last digit; None if s is not one."""
    s = s.strip().rstrip("%").replace("−", "-")
    if re.fullmatch(r"[-+]?\d{1,3}([ \u202f]\d{3})+(\.\d+)?", s):
        s = re.sub(r"[ \u202f]", "", s)  # 63 936
    m = re.fullmatch(r"([-+]?)(\d*)(?:\.(\d*))?(?:(?:[eE]([-+]?\d+))|(?:[·×]10([⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺]+)))?", s)
    if not m or not (m.group(2) or m.group(3)):
        return None
    mant = m.group(1) + (m.group(2) or "0") + "." + (m.group(3) or "")
    exp = int(m.group(4) if m.group(4) is not None else
              (m.group(5).translate(SUP) if m.group(5) else "0"))
    frac = len(m.group(3) or "")
    return float(mant) * 10.0 ** exp, 10.0 ** (exp - frac)


ROFF = [(r"\\f[BIRP]", ""), (r"\\f\[[A-Z]*\]", ""), (r"\\-", "-"), (r"\\\(mi", "-"),
        (r"\\\(em", "--"), (r"\\\(en", "-"), (r"\\\(<=", "<="), (r"\\\(>=", ">="),
        (r"\\\(mu", "x"), (r"\\&", ""), (r"\\e", "\\\\"), (r"\\ ", " ")]


def normalise(path, text):
    if re.search(r"\.[1-8]$", path):
        lines = []
        for l in text.splitlines():
            if l.startswith(".\\\"") or l.startswith("'\\\""):
                continue
            if l.startswith("."):
                l = re.sub(r"^\.[A-Za-z]+\s?", "", l)
            lines.append(l)
        text = "\n".join(lines)
        for rx, rep in ROFF:
            text = re.sub(rx, rep, text)
    return re.sub(r"\s+", " ", text)


def parse(path):
    entries, cur = [], None
    for no, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.rstrip("\n")
        if line.startswith("== "):
            cur = {"name": line[3:].strip(), "line": no, "quote": []}
            entries.append(cur)
        elif not line.strip() or line.startswith("#"):
            continue
        elif cur is not None and re.match(r"^(file|run|from|tier|expect|quote):", line):
            key, val = line.split(":", 1)
            if key in ("quote", "run"):
                cur.setdefault(key, []).append(val.strip())
            else:
                cur[key] = val.strip()
        else:
            raise SystemExit("%s:%d: cannot parse '%s'" % (path, no, line))
    return entries


def compare(dv, ov, rel):
    """Problems comparing the document's group dv with the output's ov."""
    dn, on = number(dv), number(ov)
    if dn is None or on is None:
        return [] if dv == ov else ["document says '%s', output '%s'" % (dv, ov)]
    (d, unit), (o, _) = dn, on
    tol = rel * abs(d) if rel is not None else (0.0 if d == 0 else unit)
    if abs(o - d) > tol * (1 + 1e-12):
        return ["document says %s, output %s (tolerance %.3g%s)"
                % (dv, ov, tol, ", rel %g" % rel if rel is not None else ", one unit of the last digit")]
    return []


def check_entry(e, root, top, exe, tmp, cache):
    problems = []
    for key in ("file", "tier"):
        if key not in e:
            return ["no '%s:'" % key], False
    if e["tier"] not in ("quick", "slow", "timing", "manual"):
        return ["tier must be quick, slow, timing or manual"], False
    src = [k for k in ("run", "from") if k in e]
    if (e["tier"] in ("timing", "manual")) != (not src) or len(src) > 1:
        return ["timing and manual entries have no 'run:' or 'from:', every other one has one"], False
    if not e["quote"]:
        return ["no 'quote:'"], False
    path = os.path.join(root, e["file"])
    try:
        doc = normalise(path, open(path, encoding="utf-8").read())
    except OSError as x:
        return ["cannot read %s: %s" % (path, x)], False
    out = ""
    if "from" in e:
        try:
            out = open(os.path.join(top, e["from"]), encoding="utf-8").read()
        except OSError as x:
            return ["cannot read %s: %s" % (e["from"], x)], False
    runs = tuple(e.get("run", []))
    for r in runs:
        cmd = shlex.split(r)
        if not cmd or cmd[0] != "attncheck":
            return ["the command must start with 'attncheck'"], False
    if runs and runs in cache:  # entries that quote the same run share it
        p = cache[runs]
    for r in runs if runs not in cache else ():
        p = subprocess.run([exe] + shlex.split(r)[1:], cwd=tmp, capture_output=True, text=True)
    if runs:
        cache[runs] = p
        out = p.stdout
    if "run" in e:
        if "expect" in e:
            want = e["expect"]
            if want not in EXIT:
                return ["expect must be PROVED, REFUTED or UNDECIDED"], False
            if p.returncode != EXIT[want]:
                problems.append("exit status %d, expected %d (%s)" % (p.returncode, EXIT[want], want))
            v, _ = printed_verdict(out)
            if v is not None and v != want:
                problems.append("prints verdict %s, expected %s" % (v, want))
        elif p.returncode not in (0, 1, 2):
            problems.append("exit status %d: %s" % (p.returncode, p.stderr.strip()[:500]))
    for q in e["quote"]:
        rel = None
        m = re.match(r"^(.*) rel ([0-9.e-]+)$", q)
        if m:
            q, rel = m.group(1), float(m.group(2))
        drx, _, orx = q.partition(" ~~ ")
        dm = re.search(drx, doc)
        if not dm:
            problems.append("%s does not contain /%s/" % (e["file"], drx))
            continue
        if not src:
            continue
        if not orx:
            problems.append("quote without ' ~~ OUTREGEX'")
            continue
        orx, _, expr = orx.partition(" => ")
        om = re.search(orx, out, re.M)
        if not om:
            problems.append("output does not match /%s/" % orx)
            continue
        if expr:
            try:
                env = {"g%d" % (i + 1): float(g) for i, g in enumerate(om.groups())}
                val = eval(expr, {"__builtins__": {}}, dict(env, abs=abs, min=min, max=max))
            except Exception as x:
                problems.append("cannot evaluate %s on %s: %s" % (expr, om.groups(), x))
                continue
            if len(dm.groups()) != 1:
                problems.append("/%s/ must have one group with '=> EXPR'" % drx)
                continue
            problems += compare(dm.group(1), "%.17g" % val, rel)
            continue
        if len(dm.groups()) != len(om.groups()):
            problems.append("/%s/ and /%s/ have different numbers of groups" % (drx, orx))
            continue
        for dv, ov in zip(dm.groups(), om.groups()):
            problems += compare(dv, ov, rel)
    if problems and out and "run" in e:
        problems.append("stdout: " + out.replace("\n", "\n            ")[:2500])
    return problems, bool(src)


def main(argv):
    tier, root, quotes, only = "quick", os.environ.get("top_srcdir", "."), None, None
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--tier":
            tier = args.pop(0)
        elif a == "--root":
            root = args.pop(0)
        elif a == "--only":
            only = args.pop(0)
        else:
            quotes = a
    top = os.environ.get("top_srcdir", ".")
    quotes = quotes or os.path.join(top, "tests", "doc_quotes.txt")
    exe = os.path.abspath(os.environ.get("ATTNCHECK", "./attncheck"))
    entries = parse(quotes)
    failures = ran = timing = 0
    cache = {}
    with tempfile.TemporaryDirectory() as tmp:
        for e in entries:
            if (tier == "quick" and e.get("tier") == "slow") or (only and e.get("file") != only):
                continue
            problems, was_run = check_entry(e, root, top, exe, tmp, cache)
            where = "doc_quotes.txt:%d %s" % (e["line"], e["name"])
            ran += was_run
            timing += not was_run
            if problems:
                failures += 1
                print("FAIL " + where)
                for pr in problems:
                    print("    " + pr)
            else:
                print("ok   %s%s" % (where, "" if was_run else " (%s, not replayed)" % e["tier"]))
    total = ran + timing
    print("%d of %d document quotes as documented (%d replayed, %d timings and manual ones not replayed)"
          % (total - failures, total, ran, timing))
    if total == 0:
        print("no document quotes found")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
