#!/bin/sh
# Condition sweeps in shards: shards computed in any order, on 1 or 2
# threads, by GNU parallel with 2 workers and by the Slurm example script,
# merge into exactly the unsharded result (every field of --json but the
# times); incomplete, duplicated, foreign and malformed sets are refused
# (65), impossible --shard options are usage errors (64).
set -u
: "${ATTNCHECK:?run through make check}"
PY=${PYTHON3:-/usr/bin/python3}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/shard.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
same() { # same JSON but the times
    "$PY" - "$1" "$2" <<'PYEOF'
import json, sys
def clean(o):
    if isinstance(o, dict):
        return {k: clean(v) for k, v in o.items() if k not in ("time", "seconds", "wall", "threads")}
    if isinstance(o, list):
        return [clean(x) for x in o]
    return o
a, b = (clean(json.load(open(f))) for f in sys.argv[1:3])
sys.exit(0 if a == b else 1)
PYEOF
}
expect() { # expect STATUS PATTERN -- cmd...
    want=$1 pat=$2; shift 3
    "$@" > "$tmp/out" 2> "$tmp/err"; got=$?
    [ "$got" = "$want" ] && grep -q -- "$pat" "$tmp/err" "$tmp/out" ||
        bad "$* -> $got (want $want, '$pat'): $(cat "$tmp/err")"
}
A=$ATTNCHECK
sweep="--heads 1,3 --seq 24 --head-dim 4 --trials 13 --seed 7 --certify --spectrum"
$A condition $sweep --json > "$tmp/whole.json" || [ $? -le 2 ] || bad "unsharded run"

# sequential shards, merged in another order, on one and two threads
for i in 3 1 4 2; do
    t=$(( i % 2 + 1 ))
    $A condition $sweep --threads $t --shard $i/4 --samples-out "$tmp/s$i.json" > /dev/null || bad "shard $i/4"
done
$A merge "$tmp/s2.json" "$tmp/s4.json" "$tmp/s1.json" "$tmp/s3.json" --json > "$tmp/m.json"
same "$tmp/m.json" "$tmp/whole.json" || bad "merged 4 shards differ from the unsharded run"
printf 'condition %s\nmerge %s\n' "$tmp/whole.json" "$tmp/m.json" > "$tmp/list"
"$PY" "$top_srcdir/tests/json_schema.py" --list "$tmp/list" || bad "--json: schema violation"
$A condition $sweep --csv "$tmp/whole.csv" > /dev/null
$A merge "$tmp"/s*.json --csv "$tmp/m.csv" > /dev/null
grep -v -i 'second\|time' "$tmp/whole.csv" | cut -d, -f1-30 > "$tmp/a.csv"
grep -v -i 'second\|time' "$tmp/m.csv" | cut -d, -f1-30 > "$tmp/b.csv"
cmp -s "$tmp/a.csv" "$tmp/b.csv" || bad "merged CSV differs"

# GNU parallel, 2 workers (the local form of `parallel -S host1,host2`)
if command -v parallel > /dev/null 2>&1; then
    mkdir "$tmp/p"
    parallel --will-cite -j 2 "$A" condition $sweep --shard {}/4 --samples-out "$tmp/p/s{}.json" ::: 1 2 3 4 > /dev/null ||
        bad "GNU parallel shards"
    $A merge "$tmp"/p/s*.json --json > "$tmp/mp.json" && same "$tmp/mp.json" "$tmp/whole.json" ||
        bad "GNU parallel: merged result differs"
else
    echo "GNU parallel not installed: its run skipped (apt-get install parallel)"
fi

# the Slurm array script, its array variables set by hand
for i in 1 2 3; do
    SLURM_ARRAY_TASK_ID=$i SLURM_ARRAY_TASK_COUNT=3 ATTNCHECK=$A \
        sh "$top_srcdir/examples/slurm_condition.sh" "$tmp/slurm" $sweep > /dev/null || bad "slurm task $i"
done
$A merge "$tmp"/slurm/shard-*-of-3.json --json > "$tmp/ms.json" && same "$tmp/ms.json" "$tmp/whole.json" ||
    bad "Slurm script: merged result differs"
expect 2 "" -- env -u SLURM_ARRAY_TASK_ID sh "$top_srcdir/examples/slurm_condition.sh" "$tmp/x" $sweep
grep -q 'not a Slurm array task' "$tmp/err" || bad "slurm script outside an array: $(cat "$tmp/err")"

# bad sets (65) and bad options (64)
expect 65 "shard 3/4 of this sweep is missing" -- $A merge "$tmp/s1.json" "$tmp/s2.json" "$tmp/s4.json"
expect 65 "given twice" -- $A merge "$tmp/s1.json" "$tmp/s1.json" "$tmp/s2.json" "$tmp/s3.json" "$tmp/s4.json"
$A condition --heads 1,3 --seq 24 --head-dim 4 --trials 13 --seed 8 --certify --spectrum \
    --shard 2/4 --samples-out "$tmp/other.json" > /dev/null
expect 65 "another sweep" -- $A merge "$tmp/s1.json" "$tmp/other.json" "$tmp/s3.json" "$tmp/s4.json"
head -c 300 "$tmp/s1.json" > "$tmp/trunc.json"
expect 65 "trunc.json" -- $A merge "$tmp/trunc.json" "$tmp/s2.json"
echo '{"format": "something else"}' > "$tmp/foreign.json"
expect 65 "not a condition shard file" -- $A merge "$tmp/foreign.json"
expect 66 "nope.json" -- $A merge "$tmp/nope.json"
expect 64 "merge needs the shard files" -- $A merge
expect 64 "go together" -- $A condition $sweep --shard 1/2
expect 64 "go together" -- $A condition $sweep --samples-out "$tmp/z.json"
expect 64 "I/K" -- $A condition $sweep --shard 0/2 --samples-out "$tmp/z.json"
expect 64 "I/K" -- $A condition $sweep --shard 3/2 --samples-out "$tmp/z.json"
expect 64 "I/K" -- $A condition $sweep --shard 1/x --samples-out "$tmp/z.json"
expect 64 "more shards than" -- $A condition $sweep --shard 1/14 --samples-out "$tmp/z.json"
expect 64 "whole sweep" -- $A condition $sweep --shard 1/2 --samples-out "$tmp/z.json" --csv "$tmp/c.csv"
[ ! -e "$tmp/z.json" ] || bad "a refused shard run left $tmp/z.json"
expect 73 "cannot create" -- $A condition $sweep --shard 1/2 --samples-out "$tmp/no/such/dir/z.json"
exit $fail
