#!/usr/bin/env python3
"""python_coverage.py ATTNCHECK — what the Python package sees of each
command, against the program (README, section Python, quotes the table).

Options: every option of a command's table (attncheck/commands.h) is a
keyword of its Python function, except those that only say what the program
prints or writes (--json, --out-dir, --csv, --plot, --log, --quiet, ...:
Python returns the JSON and the arrays instead), and Python has the
library-only array inputs the program reads from directories.

Results: for a set of seeded runs (every mode of every command), every member
of the program's --json, at every depth (the first three entries of a list),
is an attribute of the Python result (r.certificate.hi, r.rows[0].verdict,
...) with the same value, timings aside; an interval's null lo or hi is -inf
or +inf in Python (no finite bound).

Prints the table (markdown) and one line per gap; exit 1 if any."""
import inspect
import json
import math
import os
import subprocess
import sys
import tempfile

import attncheck as ac
from attncheck import _commands

prog = os.path.abspath(sys.argv[1])
bad = []
TIMED = {"seconds", "tokens_per_s", "version"}

functions = {"rep-theorem": ac.rep_theorem, "separate": ac.separate, "condition": ac.condition,
             "merge": ac.merge, "train": ac.train, "report": ac.report, "inspect": ac.inspect}


def paths(j, pre=""):
    """every member of a JSON value as a path of keys and indices"""
    if isinstance(j, dict):
        for k, v in j.items():
            yield pre + "." + k, v
            yield from paths(v, pre + "." + k)
    elif isinstance(j, list):
        for i, v in enumerate(j[:3]):  # the first three entries of a list
            yield from paths(v, "%s[%d]" % (pre, i))


def get(obj, path):
    """the attribute path of a Python result (".a.b[0].c")"""
    import re
    for key, idx in re.findall(r"\.([A-Za-z0-9_]+)|\[(\d+)\]", path):
        if key:
            obj = getattr(obj, key) if hasattr(obj, key) else obj[key]
        else:
            obj = obj[int(idx)]
    return obj


def plain(v):
    if isinstance(v, ac.Verdict):
        return v.value
    if hasattr(v, "json"):
        return v.json
    if isinstance(v, tuple):
        return [plain(x) for x in v]
    return v


def same(a, b, key=""):
    a = plain(a)
    if b is None and key in ("lo", "hi") and a == (-math.inf if key == "lo" else math.inf):
        return True  # an interval's null end: no finite bound (Interval, CertificateRecord)
    if hasattr(a, "shape") and hasattr(a, "dtype"):  # an array the JSON also holds
        import numpy as np
        return isinstance(b, (list, dict)) or np.array_equal(a, np.asarray(b))
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    if isinstance(b, (dict, list)):
        return True  # compared member by member
    return a == b


tmp = tempfile.mkdtemp()
os.chdir(tmp)
subprocess.run([prog, "condition", "--heads", "1,2", "--trials", "4", "--shard", "1/2",
                "--samples-out", "s1.txt", "--json"], check=True, capture_output=True)
subprocess.run([prog, "condition", "--heads", "1,2", "--trials", "4", "--shard", "2/2",
                "--samples-out", "s2.txt", "--json"], check=True, capture_output=True)

# inspect: the GPT-2 fixture on 7 token ids (the program reads them from a file)
import numpy as np  # noqa: E402
GPT2 = os.path.join(os.environ.get("top_srcdir") or os.path.join(os.path.dirname(
    os.path.abspath(__file__)), ".."), "tests", "models", "gpt2")
IDS = np.array([3.0, 5, 7, 2, 9, 11, 4])
np.save("ids.npy", IDS)
KEEP = np.array([1.0, 1, 1, 1, 1, 0, 0])
np.save("keep.npy", KEEP)

# (command, program arguments, Python keywords)
runs = [
    ("rep-theorem", ["--n", "8", "--d", "16", "--dk", "7"], dict(n=8, d=16, dk=7)),
    ("rep-theorem", ["--n", "8", "--d", "4", "--dk", "2", "--representable", "--trace"],
     dict(n=8, d=4, dk=2, representable=True)),
    ("rep-theorem", ["--n", "8", "--d", "4", "--dk", "2", "--representable", "--mask",
                     "causal,window:5", "--bias"],
     dict(n=8, d=4, dk=2, representable=True, mask="causal,window:5", bias=True)),
    ("rep-theorem", ["--n", "5", "--d", "3", "--learn", "--dk-range", "1:3"],
     dict(n=5, d=3, learn=True, dk_range="1:3")),
    ("separate", ["--case", "2"], dict(case=2)),
    ("separate", ["--embed", "--dp", "8"], dict(embed=True, dp=8)),
    ("separate", ["--student", "--student-steps", "30", "--student-seeds", "1",
                  "--student-heads", "1,2", "--samples", "4"],
     dict(student=True, student_steps=30, student_seeds=1, student_heads=[1, 2], samples=4)),
    ("condition", ["--heads", "1,2", "--trials", "6", "--certify"],
     dict(heads=[1, 2], trials=6, certify=True)),
    ("merge", ["s1.txt", "s2.txt"], dict(files=["s1.txt", "s2.txt"])),
    ("train", ["--task", "fit-p", "--n", "6", "--d", "4", "--steps", "20"],
     dict(task="fit-p", n=6, d=4, steps=20)),
    ("report", ["--quick"], dict(quick=True)),
    ("inspect", ["--model", GPT2, "--tokens", "ids.npy", "--layer", "1"],
     dict(model=GPT2, tokens=IDS, layer=1)),
    ("inspect", ["--model", GPT2, "--tokens", "ids.npy", "--attention-mask", "keep.npy",
                 "--layer", "2", "--head", "0"],
     dict(model=GPT2, tokens=IDS, attention_mask=KEEP, layer=2, head=0)),
]
# the --trace steps are the program's text output; Python has no trace keyword
runs[1][2].pop("trace", None)

members = {}
for cmd, args, kw in runs:
    p = subprocess.run([prog, cmd] + args + ["--json"], capture_output=True, text=True)
    if p.returncode not in (0, 1, 2):
        bad.append("%s %s: exit %d: %s" % (cmd, " ".join(args), p.returncode, p.stderr.strip()))
        continue
    j = json.loads(p.stdout)
    try:
        r = functions[cmd](**kw)
    except Exception as e:  # noqa: BLE001 - reported as a gap
        bad.append("%s(%s): %r" % (functions[cmd].__name__, kw, e))
        continue
    total = seen = 0
    for path, v in paths(j):
        # inspect's input files: the program names the file, Python the array ("tokens")
        if (path.split(".")[-1] in TIMED or ".time." in path + "." or
                cmd == "inspect" and path in (".input.file", ".input.attention_mask.file") or
                "--trace" in args and path.startswith(".steps")):
            continue
        total += 1
        try:
            pv = get(r, path)
        except (AttributeError, KeyError, IndexError, TypeError):
            bad.append("%s %s: --json member %s is not an attribute of the Python result"
                       % (cmd, " ".join(args), path))
            continue
        if not same(pv, v, path.split(".")[-1]):
            bad.append("%s %s: %s is %r in Python, %r in --json" % (cmd, " ".join(args), path,
                                                                     plain(pv), v))
            continue
        seen += 1
    m = members.setdefault(cmd, [0, 0, 0])
    m[0] += total
    m[1] += seen
    m[2] += 1

rows = []
for c in _commands._describe()["commands"]:
    name = c["name"]
    sig = inspect.signature(functions[name]).parameters
    prog_opts = [o for o in c["options"] if not o["library_only"]]
    program_only = [o for o in prog_opts if o["program_only"]]
    wanted = [o for o in c["options"] if not o["program_only"]]
    have = [o for o in wanted if o["python"] in sig]
    for o in wanted:
        if o["python"] not in sig:
            bad.append("%s: --%s is not a keyword of %s()" % (name, o["name"],
                                                             functions[name].__name__))
    lib_only = [o for o in c["options"] if o["library_only"]]
    m = members.get(name, [0, 0, 0])
    rows.append("| %s | %d | %d of %d | %s | %d | %d of %d (%d runs) |" % (
        name, len(prog_opts), len(have) - len(lib_only), len(prog_opts) - len(program_only),
        ", ".join("--" + o["name"] for o in program_only) or "-", len(lib_only), m[1], m[0],
        m[2]))

print("| command | program options | Python keywords (of those not about output) "
      "| program-only (output) | library-only arrays | --json members in Python |")
print("|---|---|---|---|---|---|")
print("\n".join(rows))
for b in bad:
    print("python_coverage: " + b)
sys.exit(1 if bad else 0)
