#!/usr/bin/env python3
"""t1_mask_table.py — the table of doc/mathematics.md §3.8 ("Measured"): the
head size at tol = 2^-26 of causal patterns of random rank-r logits on
X = I_n (t1_mask_tool measure N R SEED), the exact threshold's certified
range for the rounded P, and the CPU time to decide both.

  t1_mask_table.py TOOL [N ...]          print the rows (markdown)
  t1_mask_table.py TOOL --check DOC N ...  replay the rows of DOC for those n:
                                           every threshold column must agree
                                           (the times are not compared)
"""
import json
import os
import re
import subprocess
import sys

SEED = 1


def ranks(n):
    return sorted(set(r for r in (1, 2, 4, n // 4, n) if 1 <= r <= n))


def row(tool, n, r):
    t0 = os.times()
    p = subprocess.run([tool, "measure", str(n), str(r), str(SEED)], capture_output=True,
                       text=True, check=True)
    t1 = os.times()
    j = json.loads(p.stdout)
    cpu = (t1.children_user - t0.children_user) + (t1.children_system - t0.children_system)
    at = "%d" % j["lo"] if j["exact"] else "[%d, %s]" % (j["lo"], j["hi"])
    e = j["exact_rep"]
    ex = "%d" % e["lo"] if e["exact"] else "[%d, %d]" % (e["lo"], e["hi"])
    return "| %d | %d | %s | %s | %d | %.2f |" % (n, r, at, ex, n // 2, cpu)


def key(line):
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    return cells[:5]


def main():
    tool = sys.argv[1]
    if len(sys.argv) > 2 and sys.argv[2] == "--check":
        doc = open(sys.argv[3], encoding="utf-8").read()
        want = {}
        for line in doc.splitlines():
            if re.match(r"^\| \d+ \| \d+ \|", line):
                k = key(line)
                want[(int(k[0]), int(k[1]))] = k
        bad = 0
        for n in map(int, sys.argv[4:]):
            for r in ranks(n):
                got = key(row(tool, n, r))
                if want.get((n, r)) != got:
                    print("table of doc/mathematics.md §3.8: n = %d, r = %d: doc %s, got %s"
                          % (n, r, want.get((n, r)), got))
                    bad = 1
        sys.exit(bad)
    print("| n | r | head size at tol | exact threshold (rounded P) | floor(n/2) | CPU s |")
    print("|---|---|---|---|---|---|")
    for n in map(int, sys.argv[2:] or ["8", "16", "32", "64", "128", "256"]):
        for r in ranks(n):
            print(row(tool, n, r), flush=True)


main()
