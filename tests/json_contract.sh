#!/bin/sh
# The JSON contract (attncheck(1), section JSON): every command's --json
# (rep-theorem incl. --learn, separate incl. --embed and --student,
# condition incl. --certify and a shard, merge, train incl. --dump-grads,
# and train --log FILE.jsonl) validates against its schema in schema/;
# seeds are written exactly over all of uint64; non-finite numbers are
# null.  Negative tests: documents that break the contract in each way the
# schemas guard against (a missing key, "inf" as a string, a NaN token, a
# duplicate key, a seed written -1, a field changing type between .jsonl
# rows) are rejected, so a validation cannot pass vacuously.  report --json
# is validated in cli_condition.sh (it runs report --quick already);
# condition --model in model_kappa.sh.
set -u
: "${ATTNCHECK:?run through make check}"
PY=${PYTHON3:-/usr/bin/python3}
"$PY" -c 'import jsonschema' 2>/dev/null || { echo "SKIP: python3-jsonschema not installed"; exit 77; }
V="$PY $top_srcdir/tests/json_schema.py"
A=$ATTNCHECK
tmp=$(mktemp -d "${TMPDIR:-/tmp}/jsonc.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0 n=0
bad() { echo "FAIL: $*"; fail=1; }
# valid SCHEMA STATUSES -- cmd...: run cmd (exit status in STATUSES, e.g. 0,1,2),
# validate its stdout against SCHEMA
valid() {
    sch=$1 ok=$2; shift 3
    n=$((n + 1))
    "$@" > "$tmp/o$n.json" 2> "$tmp/e$n"; s=$?
    case ",$ok," in *",$s,"*) ;; *) bad "$* -> exit $s: $(head -c 300 "$tmp/e$n")"; return;; esac
    echo "$sch $tmp/o$n.json" >> "$tmp/list"   # validated together below
}

# ---- every command's --json ---------------------------------------------------
valid rep-theorem 0,1,2 -- $A rep-theorem --n 4 --dk 2 --json
valid rep-theorem 0,1,2 -- $A rep-theorem --n 5 --json --seed 18446744073709551615
valid rep-theorem 0,1,2 -- $A rep-theorem --example paper --dk 1 --json
valid rep-theorem 0,1,2 -- $A rep-theorem --learn --n 4 --dk-range 2:4 --json
valid separate 0,1,2 -- $A separate --case 3 --optimize 5 --json
valid separate 0,1,2 -- $A separate --embed --dp 8 --json
valid separate 0,1,2 -- $A separate --student --d 8 --h 4 --dp 4 --n 4 --student-heads 1,2 \
    --student-steps 5 --student-seeds 2 --samples 3 --seed 18446744073709551615 --json
sw="--heads 1,2 --seq 16 --head-dim 4 --trials 6 --seed 18446744073709551615"
valid condition 0,1,2 -- $A condition $sw --json
valid condition 0,1,2 -- $A condition $sw --certify --json
valid condition 0,1,2 -- $A condition $sw --certify --shard 1/2 --samples-out "$tmp/s1.json" --json
valid condition 0,1,2 -- $A condition $sw --certify --shard 2/2 --samples-out "$tmp/s2.json" --json
valid merge 0,1,2 -- $A merge "$tmp/s1.json" "$tmp/s2.json" --json
valid train 0,1,2 -- $A train --task fit-p --n 5 --json
valid train 0 -- $A train --task listops --seq 24 --batch 4 --width 16 --heads 2 --steps 3 \
    --seed 18446744073709551615 --log "$tmp/l.jsonl" --json
valid train 0 -- $A train --task listops --seq 24 --batch 4 --width 16 --heads 2 --steps 1 \
    --dump-grads "$tmp/dump" --json
$V --list "$tmp/list" || bad "some --json output does not validate against its schema"
$V --lines train-log "$tmp/l.jsonl" || bad "train --log .jsonl rows do not validate"
[ "$(wc -l < "$tmp/l.jsonl")" -eq 3 ] || bad "expected 3 log rows"

# ---- uint64 seeds exactly; negative tests: each kind of violation is caught -----
"$PY" - "$top_srcdir/tests" "$tmp" <<'PYEOF' || bad "seeds or negative tests (above)"
import copy, json, os, sys
sys.path.insert(0, sys.argv[1])
import json_schema as js
tmp = sys.argv[2]
fail = 0
def seeds(o):
    if isinstance(o, dict):
        for k, v in o.items():
            if "seed" in k and isinstance(v, int) and not isinstance(v, bool):
                yield k, v
            yield from seeds(v)
    elif isinstance(o, list):
        for v in o:
            yield from seeds(v)
for i in (2, 7, 8, 14):   # the runs with --seed 18446744073709551615
    text = open(os.path.join(tmp, "o%d.json" % i)).read()
    d = json.loads(text)
    s = list(seeds(d))
    if d["parameters"]["seed"] != 2**64 - 1 or not all(0 <= v < 2**64 for _, v in s):
        print("FAIL: o%d.json: seeds %s" % (i, s)); fail = 1
    for bad in ('"inf"', '"-inf"', '"nan"', 'Infinity', 'NaN'):
        if bad in text:
            print("FAIL: o%d.json: a non-finite number written %s" % (i, bad)); fail = 1
base_text = open(os.path.join(tmp, "o1.json")).read()
base = js.load(base_text, "rep-theorem")     # the baseline is valid
mutations = [
    'del d["schema_version"]', 'del d["parameters"]["seed"]', 'd["parameters"]["seed"] = -1',
    'd["parameters"]["seed"] = 2**64', 'd["certificate"]["hi"] = "inf"',
    'd["distance"]["lo"] = "nan"', 'del d["certificate"]["precision_bits"]',
    'd["verdict"] = "MAYBE"', 'd["command"] = "separate"', 'd["seconds"] = None',
    'd["trace"][0]["lo"] = "-inf"', 'd["instance"]["x_generated"] = "Infinity"',
]
for m in mutations:
    d = copy.deepcopy(base)
    exec(m)
    try:
        js.load(json.dumps(d), "rep-theorem")
        print("FAIL: accepted mutation:", m); fail = 1
    except AssertionError:
        pass
for text in (base_text.replace('"schema_version": 1,', '"schema_version": NaN,'),
             base_text.replace('{', '{"verdict": "PROVED",', 1)):   # NaN token, duplicate key
    try:
        js.load(text, "rep-theorem")
        print("FAIL: accepted:", text[:60]); fail = 1
    except AssertionError:
        pass
sys.exit(fail)
PYEOF
printf '{"step": 1, "lr": 0.1, "loss": 2, "grad_norm": 1, "accuracy": 0.5, "maxdev": null, "eval_loss": null, "eval_accuracy": null, "eval_maxdev": null, "tokens_per_s": 5, "seconds": 0.1}\n' > "$tmp/g.jsonl"
$V --lines train-log "$tmp/g.jsonl" || bad "valid .jsonl row rejected"
sed 's/"eval_loss": null/"eval_loss": "inf"/' "$tmp/g.jsonl" >> "$tmp/g.jsonl"
$V --lines train-log "$tmp/g.jsonl" 2>/dev/null && bad "accepted a .jsonl field that changes type"
sed -n 1p "$tmp/g.jsonl" | sed 's/"maxdev": null, //' > "$tmp/h.jsonl"
$V --lines train-log "$tmp/h.jsonl" 2>/dev/null && bad "accepted a .jsonl row without a key"
exit $fail
