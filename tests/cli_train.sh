#!/bin/sh
# CLI tests of `attncheck train`: every exit status, each class of bad
# input, checkpoints (atomic, refused when corrupted or mismatched, resumed
# bit-identically), determinism across --threads, logs and --json.
set -u
: "${ATTNCHECK:=./attncheck}"
: "${top_srcdir:=.}"
PY=${PYTHON3:-/usr/bin/python3}
A="$ATTNCHECK"
fail=0
err() { echo "cli_train: $*" >&2; fail=1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/cli_train.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM HUP
cd "$work" || exit 99

# expect STATUS CMD...: run, compare the exit status
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
# the error message must mention a text
says() { grep -q -- "$1" err.txt || { err "message lacks '$1':"; sed 's/^/    /' err.txt >&2; }; }

cp "$top_srcdir/README" text.txt || exit 99
S="--task text --text text.txt --seq 16 --batch 4 --width 16 --heads 2 --layers 1"

# ---- usage errors (64)
expect 64 "$A" train
says "--task is required"
expect 64 "$A" train --task lm
expect 64 "$A" train $S --steps 0
expect 64 "$A" train $S --steps 1x
expect 64 "$A" train $S --lr -1
expect 64 "$A" train $S --heads 3
says "does not divide"
expect 64 "$A" train $S --x X.npy
says "does not apply"
expect 64 "$A" train --task fit-p --batch 4
expect 64 "$A" train $S --steps 10 --stop-at 11
expect 64 "$A" train $S --warmup 100 --steps 10
expect 64 "$A" train $S --ln middle
expect 64 "$A" train $S --log-format xml
expect 64 "$A" train $S extra
expect 64 "$A" train $S --bogus
expect 64 "$A" train --task listops --seq 1
expect 64 "$A" train --task listops --seq 16 --listops-min-len 40

# ---- cannot open input (66)
expect 66 "$A" train --task text --text missing.txt
says "missing.txt"
expect 66 "$A" train --task teacher --teacher nodir
mkdir empty
expect 66 "$A" train --task teacher --teacher empty
says "neither"
expect 66 "$A" train --task fit-p --x nox.npy
expect 66 "$A" train $S --resume nockpt

# ---- bad input data (65)
printf 'short' > short.txt
expect 65 "$A" train --task text --text short.txt
says "short.txt"
mkdir badt
printf 'not an npy file' > badt/Wq.npy
expect 65 "$A" train --task teacher --teacher badt
says "Wq.npy"
if "$PY" -c 'import numpy' 2>/dev/null; then
    "$PY" - <<'PYEOF' || exit 99
import numpy as np, os
os.makedirs("shapes", exist_ok=True)
for n in ("Wq", "Wk", "Wv"):
    np.save("shapes/%s.npy" % n, np.ones((2, 3, 4)))
np.save("shapes/Wo.npy", np.ones((2, 4, 2)))
np.save("P.npy", np.full((3, 3), 0.5))          # columns sum to 1.5
np.save("X.npy", np.arange(6.0).reshape(2, 3))
np.save("Xnan.npy", np.array([[1.0, np.nan], [0.0, 1.0]]))
os.makedirs("tch", exist_ok=True)
rng = np.random.default_rng(1)
for n in ("Wq", "Wk", "Wv"):
    np.save("tch/%s.npy" % n, rng.standard_normal((2, 2, 4)))
np.save("tch/Wo.npy", rng.standard_normal((2, 4, 2)))
PYEOF
    expect 65 "$A" train --task teacher --teacher shapes
    says "shapes do not form"
    expect 65 "$A" train --task fit-p --x X.npy --p P.npy
    says "P.npy"
    expect 65 "$A" train --task fit-p --x Xnan.npy
    says "NaN"
    expect 0 "$A" train --task teacher --teacher tch --steps 20 --quiet
    # the same layer as a V stack (g_V), chosen automatically or by name
    mkdir vst && for n in q k v o; do cp tch/W$n.npy vst/V$n.npy; done
    expect 0 "$A" train --task teacher --teacher vst --steps 5 --quiet
    expect 0 "$A" train --task teacher --teacher vst --teacher-stack V --steps 5 --quiet
    expect 66 "$A" train --task teacher --teacher vst --teacher-stack W --steps 5
    says "Wq.npy"
    expect 64 "$A" train --task teacher --teacher vst --teacher-stack Q
    expect 64 "$A" train --task teacher --teacher vst --width 16
    says "--arch transformer"
    expect 0 "$A" train --task teacher --teacher vst --attention fixed --steps 3 --quiet
fi
mkdir notckpt
expect 65 "$A" train $S --resume notckpt
says "config.json"

# ---- cannot create output (73); nothing left behind
printf 'x' > afile
expect 73 "$A" train $S --steps 2 --save afile/ck
mkdir mine && printf 'precious' > mine/notes.txt
expect 73 "$A" train $S --steps 2 --save mine
says "not an attncheck checkpoint"
grep -q precious mine/notes.txt || err "a non-checkpoint directory was touched"
[ "$(ls -A mine)" = "notes.txt" ] || err "files left in mine: $(ls -A mine)"
expect 73 "$A" train $S --steps 2 --log afile/log.csv
# a run that fails on its data creates no checkpoint and no staging directory
expect 65 "$A" train --task text --text short.txt --save never
[ ! -e never ] || err "--save directory created by a failed run"
[ -z "$(ls -A | grep '^\.')" ] || err "stray staging files: $(ls -A | grep '^\.')"

# ---- training, checkpoints, resume
expect 0 "$A" train $S --steps 12 --save full --log full.csv --quiet
expect 0 "$A" train $S --steps 12 --stop-at 5 --save part --log part.csv --quiet
[ -f part/config.json ] || err "no checkpoint written"
grep -q '"step": 5' part/config.json || err "checkpoint is not at step 5"
expect 0 "$A" train --resume part --save part --log part.csv --quiet
for f in full/*.npy; do
    cmp -s "$f" "part/$(basename "$f")" || err "resumed run differs in $(basename "$f")"
done
# the loss columns of the logs agree line by line (timings differ)
cut -d, -f1-9 full.csv > a.csv; cut -d, -f1-9 part.csv > b.csv
cmp -s a.csv b.csv || err "resumed log differs from the uninterrupted one"
[ "$(wc -l < full.csv)" -eq 13 ] || err "log should have a header and 12 rows"
head -1 full.csv | grep -q '^step,lr,loss,grad_norm' || err "bad CSV header"
[ -z "$(ls -A | grep '^\.')" ] || err "stray staging files after checkpoints"
# a resumed run may change --steps, not the model or optimiser
expect 64 "$A" train --resume part --lr 0.5
says "--lr contradicts"
expect 64 "$A" train --resume part --task listops
expect 0 "$A" train --resume part --steps 14 --quiet
# corrupted checkpoints are refused, naming the file
cp -r part trunc && truncate -s 200 trunc/head.weight.npy
expect 65 "$A" train --resume trunc
says "head.weight.npy"
cp -r part swapped && cp part/lnf.weight.npy swapped/lnf.bias.npy
expect 65 "$A" train --resume swapped
says "checksum"
cp -r part gone && rm gone/adamw.m.npy
expect 65 "$A" train --resume gone
says "adamw.m.npy: missing"

# ---- determinism across thread counts
expect 0 "$A" train $S --steps 6 --threads 1 --save th1 --quiet
expect 0 "$A" train $S --steps 6 --threads 2 --save th2 --quiet
expect 0 "$A" train $S --steps 6 --threads 3 --save th3 --quiet
for f in th1/*.npy; do
    b=$(basename "$f")
    cmp -s "$f" "th2/$b" && cmp -s "$f" "th3/$b" || err "$b depends on the thread count"
done

# ---- listops, teacher pairs, JSON lines, --json
expect 0 "$A" train --task listops --seq 24 --batch 4 --width 16 --heads 2 --steps 4 --log l.jsonl --quiet
[ "$(wc -l < l.jsonl)" -eq 4 ] || err "JSON-lines log should have 4 lines"
grep -q '^{"step": 1, "lr": ' l.jsonl || err "bad JSON-lines log"
expect 0 "$A" train --task listops --seq 24 --batch 4 --width 16 --heads 2 --steps 3 --json
if "$PY" -c 'import json' 2>/dev/null; then
    "$PY" -c 'import json,sys; d=json.load(open("out.txt")); assert d["command"]=="train" and d["step"]==3 and "eval_accuracy" in d and len(d["evals"])>=1, d' \
        || err "--json output malformed"
fi

# ---- fit-p: certified verdicts on the learned weights
expect 0 "$A" train --task fit-p --n 6 --json
grep -q '"verdict": "PROVED"' out.txt || err "fit-p d = n did not prove"
# d < n: no head reaches a Dirichlet P (Theorem 1's bottleneck)
expect 1 "$A" train --task fit-p --n 8 --d 2 --steps 300
grep -q 'REFUTED' out.txt || err "fit-p d < n did not refute"
expect 0 "$A" train --task fit-p --n 4 --steps 200 --tol 0.9 --quiet
expect 64 "$A" train --task fit-p --tol 2

# ---- dump for cross-checks
expect 0 "$A" train $S --dump-grads dump
[ -f dump/loss.npy ] && [ -f dump/grad.head.weight.npy ] && [ -f dump/batch.tokens.npy ] \
    || err "--dump-grads did not write the expected files"

# fit-p --rows: a row-stochastic P (PyTorch's layout) is fitted as its transpose
if "${PYTHON3:-/usr/bin/python3}" -c 'import numpy' 2>/dev/null; then
    "${PYTHON3:-/usr/bin/python3}" -c "
import numpy as np, sys
rng = np.random.default_rng(5); X = rng.standard_normal((6, 6))
A = np.exp(rng.standard_normal((6, 6))); A /= A.sum(axis=1, keepdims=True)
np.save(sys.argv[1] + '/rx.npy', X); np.save(sys.argv[1] + '/ra.npy', A); np.save(sys.argv[1] + '/rat.npy', A.T.copy())" "$work"
    "$ATTNCHECK" train --task fit-p --x "$work/rx.npy" --p "$work/rat.npy" --steps 20 --json > "$work/rowsT.json" 2>/dev/null
    "$ATTNCHECK" train --task fit-p --x "$work/rx.npy" --p "$work/ra.npy" --rows --steps 20 --json > "$work/rows.json" 2>/dev/null
    "${PYTHON3:-/usr/bin/python3}" -c "
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert a['best'] == b['best'] and a['verdict'] == b['verdict'], (a['best'], b['best'])" "$work/rows.json" "$work/rowsT.json" ||
        { echo "FAIL: train --rows does not fit the transpose"; fail=1; }
    "$ATTNCHECK" train --task fit-p --x "$work/rx.npy" --p "$work/ra.npy" --steps 2 2> "$work/rerr" >/dev/null
    grep -q 'row-stochastic.*--rows' "$work/rerr" || { echo "FAIL: a row-stochastic P without --rows: $(cat "$work/rerr")"; fail=1; }
fi
exit $fail
