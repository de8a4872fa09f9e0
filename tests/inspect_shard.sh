#!/bin/sh
# inspect_shard.sh — `attncheck inspect --shard I/K --shard-out FILE` and
# `attncheck merge`: the merge of every complete set equals the unsharded
# run (--json member for member, but the times) for K = 1, 2, 3, 5 and
# --threads 1 and 2, on several model families and selections; every class
# of hostile shard set is refused with exit 65, one line naming the file and
# the problem, and nothing is written (--csv).
set -u
: "${ATTNCHECK:=./attncheck}"
: "${PYTHON3:=/usr/bin/python3}"
: "${top_srcdir:=.}"
fail=0
work=$(mktemp -d "${TMPDIR:-/tmp}/inspect_shard.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM HUP
err() { echo "inspect_shard: $*" >&2; fail=1; }
M="$top_srcdir/tests/models"
ncase=0

"$PYTHON3" - "$work" <<'PY' || exit 99
import sys, numpy as np
w = sys.argv[1]
np.save(w + "/ids.npy", np.array([3, 5, 7, 2, 9, 11, 4], float))
r = np.random.RandomState(7)
np.save(w + "/r12.npy", r.standard_normal((6, 12)))
np.save(w + "/r16.npy", r.standard_normal((5, 16)))
np.save(w + "/keep.npy", np.array([1, 1, 1, 1, 1, 0, 0], float))
PY

# same A B: the two --json documents equal but for the times
same() {
    "$PYTHON3" - "$1" "$2" "$top_srcdir/tests" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[3])
import json_schema
def strip(o):
    if isinstance(o, dict):
        return {k: strip(v) for k, v in o.items() if k not in ("seconds", "time")}
    if isinstance(o, list):
        return [strip(v) for v in o]
    return o
a = json_schema.load(open(sys.argv[1]).read(), "inspect")
b = json_schema.load(open(sys.argv[2]).read(), "inspect")
if strip(a) != strip(b):
    sys.exit("the merged result differs from the whole run")
if a["verdict"] != b["verdict"]:
    sys.exit("verdicts differ")
PY
}

# sharded NAME K THREADS inspect-args...: K shards, merged, against the whole run
sharded() {
    name=$1 k=$2 t=$3
    shift 3
    d="$work/$name.$k.$t"
    mkdir -p "$d"
    "$ATTNCHECK" inspect "$@" --json --threads "$t" >"$d/whole.json"
    want=$?
    files=""
    i=$k
    while [ "$i" -ge 1 ]; do # in reverse order: merge takes any order
        "$ATTNCHECK" inspect "$@" --threads "$t" --shard "$i/$k" --shard-out "$d/s$i" \
            >"$d/out" 2>"$d/err" || { err "$name: shard $i/$k failed: $(cat "$d/err")"; return; }
        files="$files $d/s$i"
        i=$((i - 1))
    done
    # shellcheck disable=SC2086
    "$ATTNCHECK" merge $files --json --threads "$t" >"$d/merged.json" 2>"$d/err"
    got=$?
    [ "$got" = "$want" ] || err "$name K=$k threads $t: merge exit $got, whole run $want: $(cat "$d/err")"
    same "$d/whole.json" "$d/merged.json" || err "$name K=$k threads $t: differs"
    ncase=$((ncase + 1))
}

for t in 1 2; do
    for k in 1 2 3 5; do
        sharded gpt2 "$k" "$t" --model "$M/gpt2" --tokens "$work/ids.npy"
    done
done
for k in 1 2 3 5; do
    sharded bert "$k" 2 --model "$M/bert" --tokens "$work/ids.npy" --dk-prime 1,3
done
for k in 2 3; do
    sharded gpt2_head "$k" 1 --model "$M/gpt2" --head 1 --tokens "$work/ids.npy"
    sharded layer "$k" 2 --model "$M/layer" --hidden "$work/r12.npy"
    sharded llama "$k" 2 --model "$M/llama" --layer 1 --normed "$work/r16.npy"
done
sharded vit 3 1 --model "$M/vit" --layer 0 --hidden "$work/r12.npy"
for k in 2 3; do # padding: the merge reads the attention mask again
    sharded gpt2_pad "$k" 2 --model "$M/gpt2" --tokens "$work/ids.npy" --attention-mask "$work/keep.npy"
    sharded bert_pad "$k" 1 --model "$M/bert" --tokens "$work/ids.npy" --attention-mask "$work/keep.npy"
done

# the text of a shard, and of a merge: inspect's table
"$ATTNCHECK" inspect --model "$M/gpt2" --tokens "$work/ids.npy" --shard 2/3 \
    --shard-out "$work/t2" >"$work/out" || err "text shard failed"
grep -q "^shard 2/3: (layer, head) pairs 2..3 of 6, written to" "$work/out" ||
    err "shard text: $(cat "$work/out")"

# ---- usage -----------------------------------------------------------------------
usage() {
    want=$1 pat=$2
    shift 2
    "$ATTNCHECK" inspect --model "$M/gpt2" --tokens "$work/ids.npy" "$@" >/dev/null 2>"$work/err"
    got=$?
    [ "$got" = "$want" ] || err "inspect $*: exit $got, expected $want"
    head -1 "$work/err" | grep -q -- "$pat" || err "inspect $*: message lacks '$pat': $(cat "$work/err")"
}
usage 64 "go together" --shard 1/2
usage 64 "go together" --shard-out "$work/x"
usage 64 "more shards than the 6" --shard 1/7 --shard-out "$work/x"
usage 64 "csv needs the whole run" --shard 1/2 --shard-out "$work/x" --csv "$work/x.csv"
usage 64 "out-dir is not taken" --shard 1/2 --shard-out "$work/x" --out-dir "$work/od"
usage 64 "shard must be\|--shard" --shard 3/2 --shard-out "$work/x"
[ ! -e "$work/x" ] || err "a shard file written on a usage error"
"$ATTNCHECK" inspect --model "$M/gpt2" --tokens "$work/ids.npy" --shard 1/2 \
    --shard-out /proc/nonexistent/s >/dev/null 2>&1
[ $? = 73 ] || err "--shard-out in /proc: not 73"

# ---- hostile shard sets ------------------------------------------------------------
# a model and an input of our own, changed after the shards were made
cp -r "$M/gpt2" "$work/model"
cp "$work/ids.npy" "$work/in.npy"
H="$work/h"
mkdir -p "$H"
for i in 1 2 3; do
    "$ATTNCHECK" inspect --model "$work/model" --tokens "$work/in.npy" --shard "$i/3" \
        --shard-out "$H/s$i" >/dev/null || err "hostile: shard $i failed"
done
"$ATTNCHECK" inspect --model "$work/model" --tokens "$work/in.npy" --shard 2/2 \
    --shard-out "$H/k2" >/dev/null || err "hostile: K=2 shard failed"
cp "$work/keep.npy" "$work/mask.npy"
for i in 1 2 3; do
    "$ATTNCHECK" inspect --model "$work/model" --tokens "$work/in.npy" --attention-mask "$work/mask.npy" \
        --shard "$i/3" --shard-out "$H/m$i" >/dev/null || err "hostile: masked shard $i failed"
done
"$ATTNCHECK" inspect --model "$work/model" --tokens "$work/in.npy" --tol 1e-6 --shard 2/3 \
    --shard-out "$H/tol" >/dev/null || err "hostile: --tol shard failed"
"$ATTNCHECK" condition --heads 1 --seq 4 --head-dim 4 --trials 2 --shard 1/1 \
    --samples-out "$H/cond" >/dev/null 2>&1 || err "hostile: condition shard failed"

# tamper FILE OUT EXPR: the shard's JSON changed by a Python statement on
# `s` (the object) and signed again (a valid checksum: the deeper checks are
# reached); EXPR "" with RAW: the bytes changed without signing
tamper() {
    "$PYTHON3" - "$@" <<'PY'
import json, sys
src, dst, expr = sys.argv[1:4]
text = open(src, encoding="utf-8").read()
if expr.startswith("RAW:"):
    exec(expr[4:])
    open(dst, "w", encoding="utf-8").write(text)
    sys.exit(0)
s = json.loads(text)
del s["fnv1a64"]
exec(expr)
body = json.dumps(s, separators=(",", ":"), ensure_ascii=False)[:-1]
h = 0xcbf29ce484222325
for b in body.encode("utf-8"):
    h = ((h ^ b) * 0x100000001b3) % 2 ** 64
open(dst, "w", encoding="utf-8").write(body + ',"fnv1a64":"%016x"}\n' % h)
PY
}

nhost=0
# hostile PATTERN FILE...: merge refused with 65, one line naming the first
# offending file (PATTERN), --csv not written
hostile() {
    pat=$1
    shift
    rm -f "$work/m.csv"
    "$ATTNCHECK" merge "$@" --csv "$work/m.csv" >"$work/out" 2>"$work/err"
    got=$?
    nhost=$((nhost + 1))
    [ "$got" = 65 ] || { err "merge [$pat]: exit $got, expected 65: $(cat "$work/err")"; return; }
    [ "$(wc -l <"$work/err")" = 1 ] || err "merge [$pat]: not one line: $(cat "$work/err")"
    grep -q -- "$pat" "$work/err" || err "merge [$pat]: message is: $(cat "$work/err")"
    [ ! -e "$work/m.csv" ] || err "merge [$pat]: --csv written"
    [ ! -s "$work/out" ] || err "merge [$pat]: something printed on stdout"
    [ -n "${VERBOSE:-}" ] && echo "  [$pat] $(cat "$work/err")"
}

# the set itself
hostile "h/s1: shard 3/3 of this run is missing" "$H/s1" "$H/s2"
hostile "h/s2: shard 2/3 given twice (also .*h/s2)" "$H/s1" "$H/s2" "$H/s2" "$H/s3"
hostile "h/k2: a shard of another run than .*h/s1" "$H/s1" "$H/k2" "$H/s3"
hostile "h/tol: a shard of another run than .*h/s1" "$H/s1" "$H/tol" "$H/s3"
hostile "h/cond: not an inspect shard file" "$H/s1" "$H/cond" "$H/s3"
# the bytes
tamper "$H/s2" "$H/raw" 'RAW:text = text.replace("\"dk\":4", "\"dk\":5", 1)'
hostile "h/raw: corrupt inspect shard file: checksum mismatch" "$H/s1" "$H/raw" "$H/s3"
head -c 700 "$H/s2" >"$H/trunc"
hostile "h/trunc: corrupt inspect shard file (truncated or damaged)" "$H/s1" "$H/trunc" "$H/s3"
tamper "$H/s2" "$H/nosum" 'RAW:text = text[:text.rindex(",\"fnv1a64\"")] + "}\n"'
hostile "h/nosum: corrupt inspect shard file: it does not end with its checksum" "$H/s1" "$H/nosum" "$H/s3"
tamper "$H/s2" "$H/v2" 's["version"] = 2'
hostile "h/v2: not an inspect shard file: format version 2" "$H/s1" "$H/v2" "$H/s3"
tamper "$H/s2" "$H/nohead" 'del s["heads"][0]["qk"]'
hostile "h/nohead: corrupt inspect shard file: head record 0 (pair 2) is malformed" "$H/s1" "$H/nohead" "$H/s3"
# the pairs: overlapping, repeated, out of their range, missing
tamper "$H/s2" "$H/range" 's["pairs"] = [1, 4]; s["heads"].insert(0, s["heads"][0])'
hostile "h/range: inconsistent inspect shard file: shard 2/3 of 6 pairs holds \[1, 4), not \[2, 4)" "$H/s1" "$H/range" "$H/s3"
tamper "$H/s2" "$H/dup" 's["heads"][1] = s["heads"][0]'
hostile "h/dup: inconsistent inspect shard file: it holds layer 1, head 0 where layer 1, head 1 belongs" "$H/s1" "$H/dup" "$H/s3"
tamper "$H/s2" "$H/few" 's["heads"].pop()'
hostile "h/few: inconsistent inspect shard file: 1 head records for the 2 pairs" "$H/s1" "$H/few" "$H/s3"
tamper "$H/s2" "$H/total" 's["total"] = 9; s["pairs"] = [3, 6]; s["heads"].append(s["heads"][0])'
hostile "h/total: a shard of another run than" "$H/s1" "$H/total" "$H/s3"
tamper "$H/s1" "$H/total1" 's["total"] = 9; s["shard"] = [1, 1]; s["pairs"] = [0, 9]; s["heads"] += s["heads"][:1] * 7'
hostile "h/total1: inconsistent inspect shard file: 9 pairs; its options give 6" "$H/total1"
# the numbers of a head
tamper "$H/s2" "$H/lohi" 'd = s["heads"][0]["dist"][0]; d[2], d[3] = "0x1p+3", "0x1p+2"'
hostile "h/lohi: .*layer 1, head 0: its enclosure is not 0 <= lo <= hi" "$H/s1" "$H/lohi" "$H/s3"
tamper "$H/s2" "$H/nan" 's["heads"][1]["evals"][0][2] = "nan"'
hostile "h/nan: .*layer 1, head 1: a bound is NaN" "$H/s1" "$H/nan" "$H/s3"
tamper "$H/s2" "$H/proved" 'c = s["heads"][0]["self"]; c[0] = 0; c[6] = c[7] = "0x1p-1"'
hostile "h/proved: .*layer 1, head 0: its self-check certificate contradicts itself" "$H/s1" "$H/proved" "$H/s3"
tamper "$H/s2" "$H/thr" 's["heads"][0]["thr"][0:2] = [4, 2]'
hostile "h/thr: .*layer 1, head 0: its threshold range is impossible" "$H/s1" "$H/thr" "$H/s3"
tamper "$H/s2" "$H/own" 's["heads"][0]["own"] = (s["heads"][0]["own"] + 1) % 3'
hostile "h/own: .*layer 1, head 0: its verdict at its own dk is not the one" "$H/s1" "$H/own" "$H/s3"
tamper "$H/s2" "$H/rank" 's["heads"][1]["qk"][0] += 1'
hostile "h/rank: .*layer 1, head 1: its rank range is not the one its enclosures give" "$H/s1" "$H/rank" "$H/s3"
tamper "$H/s2" "$H/sv" 's["heads"][1]["ov"][3][0] = "0x1p+60"'
hostile "h/sv: .*layer 1, head 1: a singular value enclosure is not 0 <= lo <= hi" "$H/s1" "$H/sv" "$H/s3"
tamper "$H/s2" "$H/pmin" 's["heads"][0]["pmin"] = "0x1p-60"'
hostile "h/pmin: .*layer 1, head 0: its smallest or largest pattern weight" "$H/s1" "$H/pmin" "$H/s3"
tamper "$H/s2" "$H/dec" 's["heads"][0]["dist"][0][4] = "0x1p+0"'
hostile "h/dec: .*layer 1, head 0: a distance's decades are not log10(hi / lo)" "$H/s1" "$H/dec" "$H/s3"
tamper "$H/s2" "$H/kv" 's["heads"][1]["kv_head"] = 0'
hostile "h/kv: .*layer 1, head 1: its sizes or class" "$H/s1" "$H/kv" "$H/s3"
tamper "$H/s2" "$H/time" 's["heads"][0]["time"][0] = "-0x1p+0"'
hostile "h/time: .*layer 1, head 0: a time is not a finite number >= 0" "$H/s1" "$H/time" "$H/s3"
tamper "$H/s2" "$H/pat" 'p = s["heads"][0]["pattern"]; s["heads"][0]["pattern"] = ("1" if p[0] != "1" else "2") + p[1:]'
hostile "h/pat: .*layer 1, head 0: its pattern is not the one this model and input give" "$H/s1" "$H/pat" "$H/s3"
tamper "$H/s2" "$H/sha" 's["model"][0] = "0" * 64'
hostile "h/sha: made on another model" "$H/s1" "$H/sha" "$H/s3"
tamper "$H/s2" "$H/input" 's["input"] = "0123456789abcdef"'
hostile "h/input: made on another input" "$H/s1" "$H/input" "$H/s3"
# the model and the input themselves changed after the shards
cp "$work/ids.npy" "$work/in.npy.keep"
"$PYTHON3" -c "import numpy as np; np.save('$work/in.npy', np.array([3, 5, 7, 2, 9, 11, 5], float))"
hostile "h/s1: made on another input" "$H/s1" "$H/s2" "$H/s3"
cp "$work/in.npy.keep" "$work/in.npy"
# a mask with and a mask without: other runs; the mask file changed: another input
hostile "h/m2: a shard of another run than .*h/s1" "$H/s1" "$H/m2" "$H/s3"
"$PYTHON3" -c "import numpy as np; np.save('$work/mask.npy', np.array([1, 1, 1, 1, 0, 0, 0], float))"
hostile "h/m1: made on another input" "$H/m1" "$H/m2" "$H/m3"
"$PYTHON3" - "$work/model/model.safetensors" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[-3] ^= 1                         # one weight, in its last bytes
open(p, "wb").write(bytes(b))
PY
hostile "h/s1: made on another model: .*model.safetensors has SHA-256" "$H/s1" "$H/s2" "$H/s3"

echo "inspect_shard: $ncase merges equal to the whole run, $nhost hostile sets refused"
exit $fail
