#!/bin/sh
# t1_threads.sh — `attncheck rep-theorem` gives the same answer for any
# --threads: the JSON (its "seconds" fields aside, which are wall-clock
# times) and the written Wq.npy, Wk.npy are byte-identical for 1, 2 and 3
# threads, on the decision route (d < n, dk < rank) and the construction
# route (n = d = 96).
set -u
: "${ATTNCHECK:=./attncheck}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/t1-threads.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0
check() {
    name=$1; shift
    for t in 1 2 3; do
        "$ATTNCHECK" rep-theorem "$@" --json --threads $t --out-dir "$tmp/$name$t" \
            | grep -v '"seconds"' > "$tmp/$name$t.json"
        st=$?
        [ $st -le 1 ] || { echo "FAIL: $name --threads $t: grep status $st"; fail=1; }
    done
    for t in 2 3; do
        cmp -s "$tmp/${name}1.json" "$tmp/$name$t.json" ||
            { echo "FAIL: $name: JSON differs between --threads 1 and $t"; diff "$tmp/${name}1.json" "$tmp/$name$t.json" | head; fail=1; }
        for f in Wq.npy Wk.npy; do
            cmp -s "$tmp/${name}1/$f" "$tmp/$name$t/$f" ||
                { echo "FAIL: $name: $f differs between --threads 1 and $t"; fail=1; }
        done
    done
}
check decide --n 128 --d 32 --dk 8 --seed 3
check construct --n 96 --d 96 --seed 2
check nminus1 --n 40 --d 48 --dk 39 --seed 5
# a tol that the rank step's enclosure of X^+ X cannot meet: split products, 5 panels;
# also the rank step's LU inverse in 10 panels and its certificate in 5 column ranges
check split --n 600 --d 600 --tol 1e-13 --seed 4
# the default tol at n = 300: S = Q + (K - I)'Q by norms, 3 panels
check bound --n 300 --d 300 --seed 6
exit $fail
