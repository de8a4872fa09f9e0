#!/bin/sh
# model_kappa.sh — `attncheck condition --model`: the blocks and their kappa
# against NumPy (model_kappa_numpy.py rebuilds each model from its .npy
# files), for ListOps (padding masked; pre-LN, 2 layers; post-LN) and text
# (causal), with --data files; identical results for any --threads; the
# errors (exit status and one-line message naming the file or option).
# Exit status: 0 pass, 1 failure, 77 skipped (no numpy), 99 setup error.
PY=${PYTHON3:-/usr/bin/python3}
: "${ATTNCHECK:=./attncheck}"
: "${top_srcdir:=.}"
A="$ATTNCHECK"
fail=0
err() { printf 'model_kappa: %s\n' "$*" >&2; fail=1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/model_kappa.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM HUP
cd "$work" || exit 99

# expect STATUS PATTERN CMD...: exit status STATUS and one stderr line matching PATTERN
expect() {
    want=$1 pat=$2; shift 2
    "$@" >out.txt 2>err.txt
    got=$?
    [ "$got" = "$want" ] || err "'$*': exit $got, expected $want: $(head -c 300 err.txt)"
    [ -z "$pat" ] || grep -q -- "$pat" err.txt || err "'$*': stderr lacks '$pat': $(cat err.txt)"
    [ "$want" = 2 ] || [ "$(wc -l < err.txt)" -le 2 ] || err "'$*': more than one error line"
}

cp "$top_srcdir/README" text.txt || exit 99
cat > lo.txt <<'EOT'
Source	Target
( [MAX 2 9 [MIN 4 7 ] 0 ] )	9
[SM 1 2 3 ]
[MED [MAX 5 6 ] 1 8 [MIN 3 9 ] ]

[MIN 7 ]
2
EOT
T="--width 16 --heads 2 --seq 24 --batch 4 --steps 8 --init-std 0.3 --quiet"
"$A" train --task listops $T --layers 2 --save lo2 >/dev/null || exit 99
# head size 20 > width 16: the training runs merged heads, the measurement the
# heads of the unmerged block (attn_merged.c, model_kappa.c)
"$A" train --task listops $T --layers 1 --ln post --attention fixed --head-dim 20 --save lop >/dev/null || exit 99
"$A" train --task text --text text.txt $T --layers 2 --save tx >/dev/null || exit 99
head -c 3000 text.txt > part.txt

run() { # run NAME CKPT DATA [more options]: JSON into NAME.json, exit status 2 expected
    n=$1 c=$2 d=$3; shift 3
    "$A" condition --model "$c" --data "$d" --trials 3 --json "$@" > "$n.json" 2>"$n.err"
    s=$?
    [ $s = 2 ] || err "condition --model $c --data $d: exit $s: $(cat "$n.err")"
    "${PYTHON3:-/usr/bin/python3}" "$top_srcdir/tests/json_schema.py" condition "$n.json" || err "condition --model --json: schema violation"
}
run lo2 lo2 lo.txt
run lop lop lo.txt --threads 1
run tx tx part.txt --batches 2
run tx1 tx part.txt --batches 2 --threads 1
run tx3 tx part.txt --batches 2 --threads 3
grep -v '^  "seconds": ' tx.json > tx.nos # the wall time differs between runs
for f in tx1 tx3; do
    grep -v '^  "seconds": ' "$f.json" | cmp -s tx.nos - || err "--threads changes the result ($f)"
done
grep -q '"sequences": 5' lo2.json || err "lo.txt has 5 expressions (header, blank line skipped)"

if "$PY" -c 'import numpy' >/dev/null 2>&1; then
    "$PY" "$top_srcdir/tests/model_kappa_numpy.py" lo2 lo.txt lo2.json lop lo.txt lop.json \
        tx part.txt tx.json || fail=1
else
    echo "model_kappa: numpy not installed for $PY; the NumPy comparison is skipped" >&2
    [ $fail = 0 ] && exit 77
fi

# the checkpoint's own held-out data, CSV and plot
"$A" condition --model lo2 --trials 3 --csv lo2.csv --batches 2 > lo2.txt 2>&1
[ $? = 2 ] || err "condition --model lo2 (held-out data) failed: $(cat lo2.txt)"
[ "$(wc -l < lo2.csv)" = 3 ] || err "lo2.csv: a header and one row per layer expected"
grep -q '^layer' lo2.txt || err "the text output has no table"
if command -v gnuplot >/dev/null 2>&1; then
    "$A" condition --model lo2 --trials 3 --plot p.png >/dev/null 2>&1
    [ -s p.png ] || err "--plot p.png wrote nothing"
fi

# errors
expect 64 "does not apply with --model" "$A" condition --model lo2 --heads 4
expect 64 "--plot" "$A" condition --model lo2 --plot p.txt
expect 66 "nonexistent" "$A" condition --model nonexistent
mkdir notck
expect 65 "notck" "$A" condition --model notck
"$A" train --task fit-p --n 4 --steps 2 --quiet --save fp >/dev/null 2>&1
expect 64 "text or listops" "$A" condition --model fp
printf '[MAX 2 X ]\n' > bad1.txt
expect 65 "bad1.txt:1" "$A" condition --model lo2 --data bad1.txt
printf '[MAX 2 3\n' > bad2.txt
expect 65 "bad2.txt:1: not a well-formed" "$A" condition --model lo2 --data bad2.txt
awk 'BEGIN { printf "[SM"; for (i = 0; i < 40; i++) printf " 1"; print " ]" }' > long.txt
expect 65 "long.txt:1: the expression has more than 23 tokens" "$A" condition --model lo2 --data long.txt
printf 'abc\001def' > bytes.txt
expect 65 "bytes.txt: byte 0x01 at offset 3" "$A" condition --model tx --data bytes.txt
expect 66 "missing.txt" "$A" condition --model tx --data missing.txt
expect 64 "--batches" "$A" condition --model tx --batches 0
exit $fail
