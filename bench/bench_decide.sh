#!/bin/sh
# bench_decide.sh — Theorem 1, route DECIDE (rank X = d < n): the whole
# `attncheck rep-theorem --n N --d N/2` for N in BENCH_DECIDE_NS (default
# 128 256 512 1024): wall and CPU seconds, peak memory, the verdict on each
# claim and the stage that decided it (rank of X, rho, "exact", C(tol)), why
# the refinement stopped; beside it NumPy's plain (uncertified) double
# computation of the residual rho on an instance of the same size
# (bench/bench_decide.py), as a ratio peer.  The goal: n = 1024
# decided in <= 10 s, Arb only where stage 0 cannot decide.  C(tol) is
# decided by the lower bound (`lower`: the bound that gave dist_lo; the
# residual obstruction on one column of P, doc/mathematics.md §3.6, refutes
# it at every size here); the target line says whether every claim the
# route can decide was decided at n = 1024.
# Usage: bench/bench_decide.sh [N ...]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
ac=${ATTNCHECK:-./attncheck}
py=${PYTHON3:-/usr/bin/python3}
core=$("$ac" --version 2>/dev/null | sed -n 's/^BLAS kernels: \([^ ]*\).*/\1/p')
[ -n "${OPENBLAS_CORETYPE:-}" ] || { [ -n "$core" ] && export OPENBLAS_CORETYPE="$core"; }
ns=${BENCH_DECIDE_NS:-"128 256 512 1024"}
[ $# -gt 0 ] && ns="$*"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench_decide.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
for n in $ns; do
    d=$((n / 2))
    [ "$d" -ge 1 ] || d=1
    echo "-- n = $n, d = $d"
    st=0
    /usr/bin/time -f "%e %U %M" -o "$tmp/time" "$ac" rep-theorem --n "$n" --d "$d" --json \
        > "$tmp/out.json" || st=$?
    [ "$st" -le 2 ] || { echo "attncheck failed (exit $st)"; exit 1; }
    np_=$("$py" "$here/bench_decide.py" "$n" "$d" 3 2>/dev/null || echo "numpy n/a")
    "$py" - "$tmp/out.json" "$tmp/time" "$n" "$np_" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
wall, user, kb = open(sys.argv[2]).read().split()[-3:]
n = int(sys.argv[3])
npl = dict(l.split() for l in sys.argv[4].splitlines() if len(l.split()) == 2)
def stage(o):
    return o.get("stage_name", "none") if o else "n/a"
print("attncheck %.2f s wall, %.2f s user, %.0f MB peak" % (float(wall), float(user), int(kb) / 1024))
print("  rank X   %-9s decided by %s" % (r["rank"]["value"], stage(r["rank"])))
lr = r.get("log_residual")
if lr:
    print("  rho      [%.6g, %.6g]  decided by %s" % (lr["lo"], lr["hi"], stage(lr)))
rc = r.get("rank_condition")
if rc:
    print("  sigma    [%.6g, %.6g]  decided by %s" % (rc["lo"], rc["hi"], stage(rc)))
print("  exact    %-9s decided by %s" % (r["exact"], stage(r.get("exact_stage"))))
c = r["certificate"]
print("  C(tol)   %-9s dist in [%.3g, %.3g], tol %.3g; %s" % (
    r["verdict"], r["distance"]["lo"], r["distance"]["hi"], r["tol"],
    "decided by " + c["stage_name"] if r["verdict"] != "UNDECIDED" else "undecided"))
print("  lower    %s" % r["distance"].get("lower_method", "?"))
rf = r.get("refine")
print("  refine   %s" % (rf["stopped"] if rf else "not run"))
if "numpy" in npl:
    print("numpy plain rho %.4f s (rho %s); attncheck / numpy = %.1f" % (
        float(npl["numpy"]), npl.get("numpy_rho", "?"), float(wall) / float(npl["numpy"])))
if n == 1024:
    print("target: n = 1024 decided (C(tol) %s) in <= 10 s: %.2f s wall, %.2f s user" % (
        r["verdict"], float(wall), float(user)))
PYEOF
done
