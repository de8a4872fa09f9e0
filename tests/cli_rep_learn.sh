#!/bin/sh
# CLI tests of `attncheck rep-theorem --learn` and of fit-p's optimiser in
# `attncheck train`: the table's consistency (the learned head's certified
# error is never below the certified lower bound on the distance — this
# fails if either certificate is wrong), the transition at dk = n - 1 for
# rank X = n, JSON and CSV shapes, the plot, determinism across --threads,
# the best iterate, and each bad option.
set -u
: "${ATTNCHECK:=./attncheck}"
: "${top_srcdir:=.}"
PY=${PYTHON3:-/usr/bin/python3}
A="$ATTNCHECK"
fail=0
err() { echo "cli_rep_learn: $*" >&2; fail=1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/cli_rep_learn.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM HUP
cd "$work" || exit 99

expect() {
    want=$1; shift
    "$@" >out.txt 2>err.txt
    got=$?
    if [ "$got" != "$want" ]; then
        err "expected status $want, got $got: $*"
        sed 's/^/    /' err.txt >&2
    fi
    case " $* " in # --json output: validate against the command's schema
    *" --json "*) [ "$got" -ge 64 ] || "${PYTHON3:-/usr/bin/python3}" "$top_srcdir/tests/json_schema.py" "$2" out.txt || err "--json: schema violation: $*" ;;
    esac
}
says() { grep -q -- "$1" err.txt || { err "message lacks '$1':"; sed 's/^/    /' err.txt >&2; }; }

# ---- bad options (64)
expect 64 "$A" rep-theorem --learn --dk-range 3
says "is not A:B"
expect 64 "$A" rep-theorem --learn --dk-range 5:3
says "A must not exceed B"
expect 64 "$A" rep-theorem --learn --dk-range 0:3
expect 64 "$A" rep-theorem --learn --dk-range 1:x
expect 64 "$A" rep-theorem --dk-range 1:3
says "needs --learn"
expect 64 "$A" rep-theorem --csv t.csv
expect 64 "$A" rep-theorem --plot t.svg
expect 64 "$A" rep-theorem --learn --plot t.txt
says ".svg, .png or .pdf"
expect 64 "$A" rep-theorem --learn --dk 3
says "dk-range"
expect 64 "$A" rep-theorem --learn --trace
expect 64 "$A" rep-theorem --starts 2
says "needs --learn"
expect 64 "$A" rep-theorem --learn --starts 0
[ ! -e t.csv ] && [ ! -e o ] || err "a refused run wrote a file"
# --out-dir with --learn: each row's head, as the JSON names it
expect 0 "$A" rep-theorem --learn --n 4 --dk-range 2:3 --out-dir o --json
for f in Wq_dk2 Wk_dk2 Wq_dk3 Wk_dk3; do
    [ -f "o/$f.npy" ] || err "--learn --out-dir: o/$f.npy not written"
done
grep -q '"wq": "Wq_dk3"' o/certificate.json || err "--learn --out-dir: certificate.json lacks wq"
# bad input files: one line naming the file (65, 66)
expect 66 "$A" rep-theorem --learn --x missing.npy
says "missing.npy"
if "$PY" -c 'import numpy' 2>/dev/null; then
    "$PY" -c 'import numpy as np; np.save("badP.npy", np.full((4, 4), 0.3)); np.save("X4.npy", np.eye(4))'
    expect 65 "$A" rep-theorem --learn --x X4.npy --p badP.npy
    says "badP.npy: column 0"
fi
expect 64 "$A" train --task fit-p --optimizer sgd
says "adamw, bfgs"
expect 64 "$A" train --task listops --optimizer bfgs
says "fit-p only"

# ---- the table, for several instances: consistency and the transition
# (rank X = n: every dk <= n - 2 refuted, learned heads within tol from n - 1)
for inst in "--n 6 --seed 1" "--n 6 --seed 2" "--n 7 --d 9 --seed 3" "--n 5 --seed 4"; do
    expect 0 "$A" rep-theorem --learn $inst --json
    "$PY" - <<'EOF' || err "--learn $inst: table inconsistent"
import json
d = json.load(open("out.txt"))
n = d["instance"]["n"]
rows = d["rows"]
assert d["mode"] == "learn" and d["verdict"] == "PROVED", d["verdict"]
assert [r["dk"] for r in rows] == list(range(1, n + 2)), [r["dk"] for r in rows]
assert d["instance"]["rank"] == n
for r in rows:
    L, E = r["learned"], r["exact"]
    c = L["certificate"]
    # soundness: no head has error below the certified infimum
    assert c["hi"] >= E["dist_lo"], (r["dk"], c["hi"], E["dist_lo"])
    assert c["lo"] <= L["maxdev"] <= c["hi"] * (1 + 1e-12), (r["dk"], c, L["maxdev"])
    assert L["kl"] >= 0
    if r["dk"] <= n - 2:
        assert E["verdict"] == "REFUTED" and L["verdict"] == "REFUTED", r
    else:
        assert L["verdict"] == "PROVED" and L["maxdev"] <= 1e-6, r
        assert E["verdict"] != "REFUTED", r
assert d["learned_transition"] == n - 1 and d["criterion_transition"] == n - 1, d
EOF
done

# text: the table and the sentence saying where the transition is
expect 0 "$A" rep-theorem --learn --n 6 --dk-range 3:6
grep -q "transition appears where the criterion puts it" out.txt || err "--learn text lacks the comparison"
[ "$(grep -cE '^ +[3-6] ' out.txt)" = 4 ] || err "--learn --dk-range 3:6 does not print 4 rows"

# a range below the threshold only: nothing learned, everything refuted: agree
expect 0 "$A" rep-theorem --learn --n 6 --dk-range 1:3 --json
"$PY" -c 'import json,sys; d=json.load(sys.stdin); assert d["learned_transition"] is None and d["criterion_transition"] is None' <out.txt || err "--dk-range 1:3: transitions not null"

# d < n (rank X = d): no head size reaches a Dirichlet P; the criterion refutes every dk
expect 0 "$A" rep-theorem --learn --n 6 --d 3 --dk-range 1:4 --json
"$PY" -c '
import json,sys; d=json.load(sys.stdin)
assert all(r["learned"]["verdict"] == "REFUTED" and r["exact"]["verdict"] == "REFUTED" for r in d["rows"])
assert all(r["learned"]["certificate"]["hi"] >= r["exact"]["dist_lo"] for r in d["rows"])' <out.txt || err "--learn d < n"

# the paper's example (rank X = 1 < n = 2): nothing reachable, all refuted
expect 0 "$A" rep-theorem --learn --example paper
grep -q "no transition in the range" out.txt || err "--learn --example paper: no agreement sentence"

# ---- CSV shape, plot, threads
expect 0 "$A" rep-theorem --learn --n 5 --csv t.csv --threads 1 --json
cp out.txt t1.json
"$PY" - <<'EOF' || err "--csv shape"
import csv
rows = list(csv.reader(open("t.csv")))
head = rows[0]
assert head == ["dk", "steps", "learned_maxdev", "learned_kl", "learned_lo", "learned_hi",
                "learned_verdict", "dist_lo", "dist_hi", "exact_verdict", "exact_representable",
                "seconds"], head
assert len(rows) == 1 + 6, len(rows)
for r in rows[1:]:
    assert len(r) == len(head)
    assert float(r[5]) >= float(r[7])
EOF
expect 0 "$A" rep-theorem --learn --n 5 --threads 2 --json
strip() { "$PY" -c '
import json,sys
d=json.load(sys.stdin); d.pop("seconds")
for r in d["rows"]:
    r["learned"].pop("seconds"); r["exact"].pop("seconds"); r["learned"]["certificate"].pop("seconds", None)
print(json.dumps(d, sort_keys=True))' ; }
[ "$(strip <t1.json)" = "$(strip <out.txt)" ] || err "--learn differs between --threads 1 and 2"
if command -v gnuplot >/dev/null 2>&1 || [ -n "${ATTNCHECK_GNUPLOT:-}" ]; then
    expect 0 "$A" rep-theorem --learn --n 5 --plot t.svg
    grep -q "<svg" t.svg || err "--plot wrote no SVG"
    grep -q "lower bound" t.svg || err "--plot lacks the lower bound"
fi

# ---- train: BFGS reaches 1e-6 at d = dk = n = 16; AdamW's best iterate
expect 0 "$A" train --task fit-p --n 16 --tol 1e-6 --json
"$PY" -c 'import json,sys; d=json.load(sys.stdin); assert d["optimizer"] == "bfgs" and d["verdict"] == "PROVED" and d["best"]["maxdev"] <= 1e-6' <out.txt || err "fit-p n = 16 BFGS"
# the brief's case: AdamW at n = 8 ends worse than an earlier evaluation
expect 0 "$A" train --task fit-p --optimizer adamw --n 8 --seed 3 --steps 20000 --json
"$PY" - <<'EOF' || err "fit-p AdamW: the best iterate is not the one certified"
import json
d = json.load(open("out.txt"))
ev = d["evals"]
best = min(ev, key=lambda e: e["maxdev"])
assert ev[-1]["maxdev"] > 2 * best["maxdev"], (ev[-1], best)
assert d["best"]["step"] == best["step"] and d["best"]["maxdev"] == best["maxdev"]
c = d["certificate"]
assert c["lo"] <= best["maxdev"] * (1 + 1e-9) and best["maxdev"] <= c["hi"] * (1 + 1e-9), c
EOF
# the certificate printed is about the files written: --save writes the best
# iterate (the weights certified) at its step, and rep-theorem certifies the
# saved Wq.npy, Wk.npy with the same bounds and verdict (at this seed the
# last iterate is worse than the best; with the native kernels 4.5e-4 > tol,
# REFUTED); a run resumed from that checkpoint ends with the same
# checkpoint, byte for byte
expect 0 "$A" rep-theorem --n 8 --seed 3 --tol 1 --out-dir g
expect 0 "$A" train --task fit-p --x g/X.npy --p g/P.npy --optimizer adamw --steps 20000 \
    --tol 3e-4 --save ck --json
cp out.txt fitp.json
expect 0 "$A" rep-theorem --x g/X.npy --p g/P.npy --wq ck/Wq.npy --wk ck/Wk.npy --tol 3e-4 --json
"$PY" - <<'EOF' || err "fit-p --save: the certificate printed is not about the files written"
import json
t, r, ck = (json.load(open(f)) for f in ("fitp.json", "out.txt", "ck/config.json"))
c, g = t["certificate"], r["given_head"]
assert t["verdict"] == "PROVED" and g["verdict"] == t["verdict"], (t["verdict"], g)
assert (g["lo"], g["hi"]) == (c["lo"], c["hi"]), (g, c)
assert t["checkpoint_step"] == t["best"]["step"] == ck["step"] == ck["best"]["step"], (t, ck)
# the case: the last iterate is not the one certified (worse than the best)
assert t["best"]["step"] < t["step"] and t["evals"][-1]["maxdev"] > t["best"]["maxdev"], t
EOF
cp -r ck ck0
expect 0 "$A" train --resume ck --save ck2 --quiet
for f in ck0/*; do
    cmp -s "$f" "ck2/$(basename "$f")" ||
        err "fit-p: resumed from the best iterate, $(basename "$f") differs from the first run's"
done
# a BFGS checkpoint cannot be resumed (its curvature is not saved)
expect 0 "$A" train --task fit-p --n 4 --steps 5 --tol 1 --save ck --quiet
expect 64 "$A" train --resume ck --steps 10
says "BFGS"

exit $fail
