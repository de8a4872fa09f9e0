#!/bin/sh
# cli_inspect.sh — `attncheck inspect`: each class of bad input or usage is a
# one-line error with its exit status, naming the file, and nothing is
# written to --out-dir; --json valid; the same result for 1 and 2 threads.
set -u
: "${ATTNCHECK:=./attncheck}"
: "${PYTHON3:=/usr/bin/python3}"
: "${top_srcdir:=.}"
fail=0
work=$(mktemp -d "${TMPDIR:-/tmp}/cli_inspect.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM HUP
err() { echo "cli_inspect: $*" >&2; fail=1; }
M="$top_srcdir/tests/models"

# expect STATUS PATTERN args...: the exit status, one line on stderr
# matching PATTERN, no --out-dir left behind
expect() {
    want=$1; pat=$2; shift 2
    rm -rf "$work/od"
    "$ATTNCHECK" inspect "$@" --out-dir "$work/od" >"$work/out" 2>"$work/err"
    got=$?
    [ "$got" = "$want" ] || { err "inspect $*: exit $got, expected $want"; sed 's/^/    /' "$work/err" >&2; }
    if [ "$want" -ge 64 ]; then
        # one line (usage errors add "Try 'attncheck inspect --help'.")
        n=$(grep -vc "^Try 'attncheck inspect --help'" "$work/err")
        [ "$n" -eq 1 ] || err "inspect $*: not one line: $(cat "$work/err")"
        head -1 "$work/err" | grep -q -- "$pat" || err "inspect $*: message lacks '$pat': $(cat "$work/err")"
        [ ! -e "$work/od" ] || err "inspect $*: --out-dir written on error"
    fi
}

"$PYTHON3" - "$work" <<'PY' || exit 99
import sys, numpy as np
w = sys.argv[1]
np.save(w + "/ids.npy", np.array([3, 5, 7, 2, 9, 11, 4], float))
np.save(w + "/ids_big.npy", np.array([3, 5, 24], float))        # vocab 24
np.save(w + "/ids_frac.npy", np.array([3, 5.5], float))
np.save(w + "/ids_neg.npy", np.array([3, -1], float))
np.save(w + "/ids_long.npy", np.arange(13, dtype=float))         # 12 positions
np.save(w + "/ids_int.npy", np.array([3, 5], np.int64))
r = np.random.RandomState(1)
np.save(w + "/r8.npy", r.standard_normal((5, 8)))
np.save(w + "/r9.npy", r.standard_normal((5, 9)))
np.save(w + "/r16.npy", r.standard_normal((5, 16)))
np.save(w + "/r12.npy", r.standard_normal((5, 12)))
np.save(w + "/r10.npy", r.standard_normal((5, 10)))
x = r.standard_normal((5, 8)); x[2, 3] = np.nan
np.save(w + "/nan.npy", x)
x = r.standard_normal((5, 8)); x[0, 0] = np.inf
np.save(w + "/inf.npy", x)
np.save(w + "/r1d.npy", r.standard_normal(8))
open(w + "/junk.npy", "w").write("not a npy file")
# attention masks for 7 tokens: right padding, left padding, bad entries
np.save(w + "/keep.npy", np.array([1, 1, 1, 1, 1, 0, 0], float))
np.save(w + "/keep5.npy", np.array([1, 1, 1, 0, 0], float))
np.save(w + "/keep_left.npy", np.array([0, 0, 1, 1, 1, 1, 1], float))
np.save(w + "/keep_half.npy", np.array([1, 1, 0.5, 1, 1, 0, 0], float))
np.save(w + "/keep_two.npy", np.array([1, 1, 2, 1, 1, 0, 0], float))
k = np.ones(7); k[3] = np.nan
np.save(w + "/keep_nan.npy", k)
np.save(w + "/keep_zero.npy", np.zeros(7))
np.save(w + "/keep_short.npy", np.ones(6))
np.save(w + "/keep_2d.npy", np.ones((7, 1)))
np.save(w + "/keep_int.npy", np.ones(7, np.int64))
PY

expect 0 "" --model "$M/gpt2" --tokens "$work/ids.npy"
expect 0 "" --model "$M/gpt2" --layer 1 --hidden "$work/r8.npy"
expect 0 "" --model "$M/gpt2" --layer 2 --head 1 --normed "$work/r8.npy"
expect 2 "" --model "$M/llama" --layer 0 --normed "$work/r16.npy"   # RoPE: not decided
expect 64 "give exactly one input" --model "$M/gpt2"
expect 64 "give exactly one input" --model "$M/gpt2" --tokens "$work/ids.npy" --hidden "$work/r8.npy"
expect 64 "model DIR is required" --tokens "$work/ids.npy"
expect 64 "layer 3: .* has 3 layers" --model "$M/gpt2" --layer 3 --tokens "$work/ids.npy"
expect 64 "head 2: .* has 2 heads" --model "$M/gpt2" --head 2 --tokens "$work/ids.npy"
expect 64 "dk-prime 5: larger than" --model "$M/gpt2" --dk-prime 5 --tokens "$work/ids.npy"
expect 64 "name it with --layer" --model "$M/gpt2" --hidden "$work/r8.npy"
expect 64 "takes no token ids" --model "$M/layer" --tokens "$work/ids.npy"
expect 64 "--tol" --model "$M/gpt2" --tokens "$work/ids.npy" --tol 2
expect 65 "r9.npy: 5 x 9; the model's width is d = 8" --model "$M/gpt2" --layer 0 --hidden "$work/r9.npy"
expect 65 "nan.npy: entry (2, 3) is NaN" --model "$M/gpt2" --layer 0 --hidden "$work/nan.npy"
expect 65 "inf.npy: entry (0, 0) is infinite" --model "$M/gpt2" --layer 0 --normed "$work/inf.npy"
expect 65 "r1d.npy" --model "$M/gpt2" --layer 0 --normed "$work/r1d.npy"
expect 65 "junk.npy" --model "$M/gpt2" --layer 0 --normed "$work/junk.npy"
expect 65 "ids_big.npy: token 2 is 24, beyond the vocabulary" --model "$M/gpt2" --tokens "$work/ids_big.npy"
expect 65 "ids_frac.npy: entry 1 (5.5) is not a token id" --model "$M/gpt2" --tokens "$work/ids_frac.npy"
expect 65 "ids_neg.npy: entry 1 (-1) is not a token id" --model "$M/gpt2" --tokens "$work/ids_neg.npy"
expect 65 "ids_long.npy: 13 tokens; the model has 12 positions" --model "$M/gpt2" --tokens "$work/ids_long.npy"
expect 65 "ids_int.npy: dtype" --model "$M/gpt2" --tokens "$work/ids_int.npy"
expect 66 "missing.npy" --model "$M/gpt2" --tokens "$work/missing.npy"
# --attention-mask: right padding runs (BERT, GPT-2, the generic layer, from
# tokens and from a layer's input); each class of bad mask refused
expect 0 "" --model "$M/bert" --tokens "$work/ids.npy" --attention-mask "$work/keep.npy"
expect 0 "" --model "$M/gpt2" --tokens "$work/ids.npy" --attention-mask "$work/keep.npy"
expect 0 "" --model "$M/layer_ln" --normed "$work/r10.npy" --attention-mask "$work/keep5.npy"
expect 2 "" --model "$M/layer" --normed "$work/r12.npy" --attention-mask "$work/keep5.npy" # RoPE
expect 65 "keep_left.npy: token 0 sees no real key in layer 0 (a causal mask" --model "$M/gpt2" \
    --tokens "$work/ids.npy" --attention-mask "$work/keep_left.npy"
expect 65 "keep_half.npy: entry 2 (0.5) is not 0 or 1" --model "$M/bert" --tokens "$work/ids.npy" \
    --attention-mask "$work/keep_half.npy"
expect 65 "keep_two.npy: entry 2 (2) is not 0 or 1" --model "$M/bert" --tokens "$work/ids.npy" \
    --attention-mask "$work/keep_two.npy"
expect 65 "keep_nan.npy: entry 3 (nan) is not 0 or 1" --model "$M/bert" --tokens "$work/ids.npy" \
    --attention-mask "$work/keep_nan.npy"
expect 65 "keep_zero.npy: every token is padding" --model "$M/bert" --tokens "$work/ids.npy" \
    --attention-mask "$work/keep_zero.npy"
expect 65 "keep_short.npy: 6 entries; the input has 7 tokens" --model "$M/bert" \
    --tokens "$work/ids.npy" --attention-mask "$work/keep_short.npy"
expect 65 "keep_2d.npy" --model "$M/bert" --tokens "$work/ids.npy" --attention-mask "$work/keep_2d.npy"
expect 65 "keep_int.npy: dtype" --model "$M/bert" --tokens "$work/ids.npy" --attention-mask "$work/keep_int.npy"
expect 66 "nokeep.npy" --model "$M/bert" --tokens "$work/ids.npy" --attention-mask "$work/nokeep.npy"
expect 64 "takes no attention mask" --model "$M/vit" --layer 0 --normed "$work/r12.npy" \
    --attention-mask "$work/keep5.npy"
expect 66 "nomodel" --model "$work/nomodel" --tokens "$work/ids.npy"
# a malformed checkpoint: config.json naming an unknown model type
mkdir -p "$work/bad" && cp "$M/gpt2/model.safetensors" "$work/bad/" &&
    printf '{"model_type": "gpt5"}\n' >"$work/bad/config.json"
expect 65 "gpt5" --model "$work/bad" --tokens "$work/ids.npy"
# a truncated safetensors file
mkdir -p "$work/trunc" && cp "$M/gpt2/config.json" "$work/trunc/" &&
    head -c 100 "$M/gpt2/model.safetensors" >"$work/trunc/model.safetensors"
expect 65 "model.safetensors" --model "$work/trunc" --tokens "$work/ids.npy"
# an output directory that cannot be created: 73, nothing computed is printed
"$ATTNCHECK" inspect --model "$M/gpt2" --tokens "$work/ids.npy" --out-dir /proc/nonexistent/x \
    >"$work/out" 2>"$work/err"
[ $? = 73 ] || err "--out-dir in /proc: exit $?, expected 73"
# --csv: a header and one row per head
"$ATTNCHECK" inspect --model "$M/gpt2" --tokens "$work/ids.npy" --csv "$work/t.csv" >/dev/null ||
    err "--csv run failed"
[ "$(wc -l <"$work/t.csv")" = 7 ] || err "--csv: $(wc -l <"$work/t.csv") lines, expected 7"

# --json: the schema; the same document for 1 and 2 threads (but the times);
# --out-dir: the arrays and certificate.json equal to --json
"$ATTNCHECK" inspect --model "$M/bert" --tokens "$work/ids.npy" --json --threads 1 \
    --weights --out-dir "$work/o1" >"$work/j1" || err "bert --threads 1 failed"
"$ATTNCHECK" inspect --model "$M/bert" --tokens "$work/ids.npy" --json --threads 2 --weights >"$work/j2" ||
    err "bert --threads 2 failed"
"$PYTHON3" - "$work" "$top_srcdir/tests" <<'PY' || fail=1
import json, os, sys
import numpy as np
w = sys.argv[1]
sys.path.insert(0, sys.argv[2])
import json_schema
def strip(o):
    if isinstance(o, dict):
        return {k: strip(v) for k, v in o.items() if k not in ("seconds", "time")}
    if isinstance(o, list):
        return [strip(v) for v in o]
    return o
a = json_schema.load(open(w + "/j1").read(), "inspect")
b = json_schema.load(open(w + "/j2").read(), "inspect")
bad = []
if strip(a) != strip(b):
    bad.append("--threads 1 and 2 differ")
c = json.load(open(w + "/o1/certificate.json"))
if strip(c) != strip(a):
    bad.append("certificate.json differs from --json")
P = np.load(w + "/o1/patterns.npy")
m = a["model"]
L, H, d = m["layers"], m["h"], m["d"]
if P.shape != (L, H, 7, 7):
    bad.append("patterns.npy shape %s" % (P.shape,))
if abs(P.sum(-1) - 1).max() > 64 * 2.0 ** -53:
    bad.append("rows of patterns.npy do not sum to 1")
for f in ("normed", "hidden", "wq_dk2", "wk_dk2", "wq_dk1", "wk_dk1"):
    if not os.path.exists(w + "/o1/%s.npy" % f):
        bad.append("%s.npy missing" % f)
q = np.load(w + "/o1/wq_dk2.npy")
if q.shape != (L, H, 2, d + 1):
    bad.append("wq_dk2.npy shape %s (expected [layers, heads, 2, d + 1])" % (q.shape,))
for s in bad:
    print("cli_inspect: " + s, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
exit $fail
