#!/bin/sh
# inspect_plot.sh — `attncheck inspect --plot FILE` and `attncheck merge
# --plot FILE` of inspect's shards: the picture written in each format
# (.svg, .png, .pdf) for a whole model, one head, a model whose heads are not
# decided (RoPE) and a merge; the map's cells are the thresholds of --json;
# exit 73 with nothing written when gnuplot is missing or fails or the file
# cannot be created; 64 for a name gnuplot has no terminal for, or --plot
# with --shard.
set -u
: "${ATTNCHECK:=./attncheck}"
: "${PYTHON3:=/usr/bin/python3}"
: "${top_srcdir:=.}"
fail=0
work=$(mktemp -d "${TMPDIR:-/tmp}/inspect_plot.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM HUP
err() { echo "inspect_plot: $*" >&2; fail=1; }
M="$top_srcdir/tests/models"
command -v gnuplot >/dev/null 2>&1 || [ -n "${ATTNCHECK_GNUPLOT:-}" ] ||
    { echo "inspect_plot: SKIP: no gnuplot"; exit 77; }

"$PYTHON3" - "$work" <<'PY' || exit 99
import sys, numpy as np
w = sys.argv[1]
np.save(w + "/ids.npy", np.array([3, 5, 7, 2, 9, 11, 4], float))
np.save(w + "/r16.npy", np.random.RandomState(7).standard_normal((5, 16)))
PY

# check FILE: a picture of its format, nothing on stderr from gnuplot
check() {
    case $1 in
    *.svg) grep -q "<svg" "$1" || err "$1: not an SVG" ;;
    *.png) [ "$(head -c 4 "$1" | tail -c 3)" = PNG ] || err "$1: not a PNG" ;;
    *.pdf) [ "$(head -c 4 "$1")" = %PDF ] || err "$1: not a PDF" ;;
    esac
    [ ! -s "$work/err" ] || err "$1: gnuplot said: $(cat "$work/err")"
}
for ext in svg png pdf; do
    "$ATTNCHECK" inspect --model "$M/gpt2" --tokens "$work/ids.npy" --plot "$work/p.$ext" \
        --json >"$work/j" 2>"$work/err" || err "gpt2 --plot p.$ext failed"
    check "$work/p.$ext"
done
# the map's labels are the thresholds of --json, one cell per (layer, head)
"$PYTHON3" - "$work/j" "$work/p.svg" <<'PY' || fail=1
import json, re, sys
j = json.load(open(sys.argv[1]))
svg = open(sys.argv[2]).read()
want = []
for ly in j["layers"]:
    for h in ly["heads"]:
        t = h["threshold"]
        want.append(str(t["lo"]) if t["exact"] else "[%s, %s]" % (t["lo"], t["hi"]))
got = re.findall(r"<text[^>]*>\s*<tspan[^>]*>([^<]*)</tspan>", svg) + re.findall(r"<text[^>]*>([^<]*)</text>", svg)
for w in set(want):
    if got.count(w) < want.count(w):
        sys.exit("inspect_plot: the map shows %s %d times, --json has it %d times" % (w, got.count(w), want.count(w)))
PY
"$ATTNCHECK" inspect --model "$M/gpt2" --layer 2 --head 1 --tokens "$work/ids.npy" \
    --plot "$work/one.svg" >/dev/null 2>"$work/err" || err "one head --plot failed"
check "$work/one.svg"
"$ATTNCHECK" inspect --model "$M/llama" --layer 0 --normed "$work/r16.npy" \
    --plot "$work/rope.svg" >/dev/null 2>"$work/err"
[ $? = 2 ] || err "llama --plot: not exit 2"
check "$work/rope.svg"
# a merge of inspect's shards draws the same map
for i in 1 2; do
    "$ATTNCHECK" inspect --model "$M/gpt2" --tokens "$work/ids.npy" --shard "$i/2" \
        --shard-out "$work/s$i" >/dev/null || err "shard $i failed"
done
"$ATTNCHECK" merge "$work/s1" "$work/s2" --plot "$work/m.svg" --csv "$work/m.csv" \
    >/dev/null 2>"$work/err" || err "merge --plot failed: $(cat "$work/err")"
check "$work/m.svg"
"$ATTNCHECK" inspect --model "$M/gpt2" --tokens "$work/ids.npy" --csv "$work/w.csv" >/dev/null
cmp -s "$work/m.csv" "$work/w.csv" || err "merge --csv differs from the whole run's"

# failures: 73 and nothing written; 64 for usage
f73() {
    what=$1 out=$2
    shift 2
    "$@" >"$work/out" 2>"$work/err"
    st=$?
    [ "$st" = 73 ] || err "$what: exit $st, expected 73"
    [ ! -e "$out" ] || err "$what: $out written"
    [ "$(wc -l <"$work/err")" = 1 ] || err "$what: not one line: $(cat "$work/err")"
    [ ! -s "$work/out" ] || err "$what: something printed on stdout"
}
ATTNCHECK_GNUPLOT=/nonexistent f73 "no gnuplot" "$work/x.svg" \
    "$ATTNCHECK" inspect --model "$M/gpt2" --tokens "$work/ids.npy" --plot "$work/x.svg"
grep -q "gnuplot not found" "$work/err" || err "no gnuplot: $(cat "$work/err")"
ATTNCHECK_GNUPLOT=/bin/false f73 "gnuplot fails" "$work/y.svg" \
    "$ATTNCHECK" inspect --model "$M/gpt2" --tokens "$work/ids.npy" --plot "$work/y.svg" \
    --csv "$work/y.csv"
[ ! -e "$work/y.csv" ] || err "gnuplot fails: --csv written"
f73 "unwritable" /proc/nonexistent/z.svg \
    "$ATTNCHECK" inspect --model "$M/gpt2" --tokens "$work/ids.npy" --plot /proc/nonexistent/z.svg
ATTNCHECK_GNUPLOT=/nonexistent f73 "merge, no gnuplot" "$work/mx.svg" \
    "$ATTNCHECK" merge "$work/s1" "$work/s2" --plot "$work/mx.svg"
"$ATTNCHECK" inspect --model "$M/gpt2" --tokens "$work/ids.npy" --plot "$work/p.jpg" \
    >/dev/null 2>"$work/err"
[ $? = 64 ] || err "--plot p.jpg: not 64"
"$ATTNCHECK" inspect --model "$M/gpt2" --tokens "$work/ids.npy" --plot "$work/q.svg" \
    --shard 1/2 --shard-out "$work/q" >/dev/null 2>"$work/err"
[ $? = 64 ] || err "--plot with --shard: not 64"
grep -q "plot needs the whole run" "$work/err" || err "--plot with --shard: $(cat "$work/err")"
[ ! -e "$work/q" ] && [ ! -e "$work/q.svg" ] || err "--plot with --shard: a file written"
exit $fail
