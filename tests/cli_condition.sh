#!/bin/sh
# cli_condition.sh — `attncheck condition`: exit codes, every class of bad
# argument, output files (JSON, CSV, plot) written atomically and nothing
# left behind on failure, identical results for any number of threads.
set -u
: "${ATTNCHECK:=./attncheck}"
: "${PYTHON3:=/usr/bin/python3}"
fail=0
work=$(mktemp -d "${TMPDIR:-/tmp}/cli_condition.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM HUP

err() { echo "cli_condition: $*" >&2; fail=1; }

# expect STATUS ARGS...: run `attncheck condition ARGS`, check the status and
# that a failure prints a one-line message naming the command
expect() {
    want=$1; shift
    "$ATTNCHECK" condition "$@" >"$work/out" 2>"$work/err"
    got=$?
    case " $* " in # --json output: validate against the command's schema
    *" --json "*) [ "$got" -ge 64 ] || "${PYTHON3:-/usr/bin/python3}" "$top_srcdir/tests/json_schema.py" condition "$work/out" || err "--json: schema violation: $*" ;;
    esac
    if [ "$got" -ne "$want" ]; then
        err "condition $*: status $got, expected $want"
        sed 's/^/    /' "$work/err" >&2
    fi
    if [ "$want" -ge 64 ] && ! grep -q "attncheck condition: " "$work/err"; then
        err "condition $*: no error message on stderr"
    fi
}

small="--seq 16 --head-dim 4 --trials 6"

# ---- usage errors (64) ----------------------------------------------------
expect 64 --heads ""
expect 64 --heads 0
expect 64 --heads 1,0,2
expect 64 --heads 1,,2
expect 64 --heads 1,
expect 64 --heads ,1
expect 64 --heads 1,a
expect 64 --heads -1
expect 64 --heads 2,2
expect 64 --seq 0
expect 64 --seq x
expect 64 --head-dim 0
expect 64 --embed 0
expect 64 --embed 100 --heads 3
expect 64 --embed 64 --head-dim 8
expect 64 --trials 0
expect 64 --trials -5
expect 64 --mode gaussian
expect 64 --input-dim 8
expect 64 --mode attention --input-dim 0
expect 64 --rtol 0
expect 64 --rtol 1
expect 64 --rtol nan
expect 64 --max-prec 64
expect 64 --bins 0 --spectrum
expect 64 --threads 0
expect 64 --plot "$work/k.txt"
expect 64 --plot "$work/noext"
expect 64 --frobnicate
expect 64 extra
expect 64 --seq
# T too large for memory: refused up front, with the numbers
expect 64 --heads 1 $small --trials 1099511627776
grep -q "GiB" "$work/err" || err "memory error does not give the sizes"
# N*D beyond LAPACK's 32-bit indices
expect 64 --seq 65536 --head-dim 65536 --heads 1 --trials 1

# ---- success ------------------------------------------------------------------
"$ATTNCHECK" condition --help >"$work/out" 2>&1 || err "--help failed"
grep -q -- "--heads" "$work/out" || err "--help does not list --heads"
# without --certify nothing is certified: UNDECIDED (2)
expect 2 --heads 1,2,4 $small
grep -q "^verdict    UNDECIDED" "$work/out" || err "text output lacks the verdict line"
grep -q "predictions" "$work/out" || err "text output lacks the predictions table"
# with --certify the claim is decided: PROVED (0)
expect 0 --heads 1,2,4 $small --certify
grep -q "^verdict    PROVED" "$work/out" || err "--certify: no PROVED verdict line"
# --embed: d = D/h
expect 2 --heads 1,2,4 --embed 32 --seq 16 --trials 4
grep -q "D = 32 (d = D/h)" "$work/out" || err "--embed not reported"
# attention mode, also with an explicit input width, and the spectrum
expect 2 --mode attention --heads 1,4 $small --spectrum --bins 6
grep -q "KS distance" "$work/out" || err "--spectrum: no KS distance"
expect 2 --mode attention --input-dim 40 --heads 2 $small
expect 2 --heads 1 --seq 1 --head-dim 1 --trials 3

# JSON: one object with verdict, certificate and one result per h
expect 0 --heads 1,4,8 $small --certify --json --spectrum
"$PYTHON3" - "$work/out" <<'EOF' || err "JSON output malformed"
import json, sys
o = json.load(open(sys.argv[1]))
assert o["command"] == "condition" and o["verdict"] == "PROVED", o["verdict"]
c = o["certificate"]
assert c["verdict"] == "PROVED" and c["relation"] == "<=" and c["hi"] <= c["tau"]
r = o["results"]
assert [x["h"] for x in r] == [1, 4, 8]
sq = [x for x in r if x["D"] == x["N"]][0]
assert sq["stats"]["mean"] is None and sq["predictions"]["edelman_median"] > 0
for x in r:
    assert x["certified"]["proved"] == x["trials"]
    assert len(x["spectrum"]["histogram"]) == 24
    assert x["routes"]["gram"] + x["routes"]["svd"] + x["routes"]["mpfr"] == x["trials"]
EOF

# CSV: a header and one row per h, written atomically
expect 2 --heads 1,4,8 $small --csv "$work/k.csv"
[ "$(wc -l <"$work/k.csv")" -eq 4 ] || err "CSV should have 4 lines"
head -1 "$work/k.csv" | grep -q "^h,d,D,N,E,mode,trials,regime,mean" || err "CSV header"
"$PYTHON3" -c "
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [r['h'] for r in rows] == ['1', '4', '8']
assert rows[1]['mean'] == 'nan' and float(rows[1]['edelman_median']) > 0
float(rows[2]['tw_point']); float(rows[2]['err_first_order'])
" "$work/k.csv" || err "CSV content"

# determinism: the same JSON (times aside) for 1 and 2 threads
for t in 1 2; do
    "$ATTNCHECK" condition --heads 1,2,6 --seq 24 --head-dim 8 --trials 17 --json \
        --threads $t --mode attention >"$work/t$t.json"
done
"${PYTHON3:-/usr/bin/python3}" "$top_srcdir/tests/json_schema.py" condition "$work/t1.json" || err "--json: schema violation"
"$PYTHON3" - "$work/t1.json" "$work/t2.json" <<'EOF' || err "results differ between 1 and 2 threads"
import json, sys
def strip(o):
    if isinstance(o, dict):
        return {k: strip(v) for k, v in o.items() if k not in ("time", "seconds", "threads")}
    if isinstance(o, list):
        return [strip(v) for v in o]
    return o
a, b = (strip(json.load(open(f))) for f in sys.argv[1:])
assert a == b
EOF

# ---- output files: 73, nothing left behind ----------------------------------------
mkdir "$work/outdir"
expect 73 --heads 1 $small --csv "$work/missing/dir/k.csv"
expect 73 --heads 1 $small --plot "$work/missing/dir/k.svg"
# gnuplot absent: a clear error before any sampling, no file
ATTNCHECK_GNUPLOT=/nonexistent/gnuplot expect 73 --heads 1 $small --plot "$work/outdir/k.svg"
grep -q "gnuplot not found" "$work/err" || err "missing gnuplot: unclear message"
# a gnuplot that fails: 73, and neither the plot nor its temporary remains
printf '#!/bin/sh\ncat >/dev/null\nexit 3\n' >"$work/badgnuplot"
chmod +x "$work/badgnuplot"
ATTNCHECK_GNUPLOT="$work/badgnuplot" expect 73 --heads 1 $small --plot "$work/outdir/k.svg" \
    --csv "$work/outdir/k.csv"
[ -z "$(ls -A "$work/outdir")" ] || err "failed --plot left files: $(ls -A "$work/outdir")"
# a real plot, when gnuplot is installed
if command -v gnuplot >/dev/null 2>&1; then
    for ext in svg png pdf; do
        expect 2 --heads 1,2,4 $small --plot "$work/outdir/k.$ext"
        [ -s "$work/outdir/k.$ext" ] || err "--plot: k.$ext not written"
    done
    head -c 200 "$work/outdir/k.svg" | grep -q "<svg" || err "k.svg is not SVG"
    head -c 8 "$work/outdir/k.png" | grep -q "PNG" || err "k.png is not PNG"
    head -c 5 "$work/outdir/k.pdf" | grep -q "%PDF" || err "k.pdf is not PDF"
    [ "$(ls -A "$work/outdir" | wc -l)" -eq 3 ] || err "stray files: $(ls -A "$work/outdir")"
fi

# --trace: one line per sample
expect 2 --heads 1,3 $small --trace
[ "$(grep -c '^h = .*, trial ' "$work/out")" -eq 12 ] || err "--trace: expected 12 sample lines"

# report rows are present (--json: validated against schema/report.schema.json,
# with numeric lo, hi wherever the row certifies an interval)
"$ATTNCHECK" report --quick --json >"$work/rep" 2>"$work/rep.err"
"${PYTHON3:-/usr/bin/python3}" "$top_srcdir/tests/json_schema.py" report "$work/rep" || err "report --json: schema violation"
"$PYTHON3" -c "
import json, sys
rows = json.load(open(sys.argv[1]))['rows']
num = [r for r in rows if isinstance(r['lo'], float) and isinstance(r['hi'], float)]
assert len(num) >= len(rows) // 2 and all(r['lo'] <= r['hi'] for r in num), rows
" "$work/rep" || err "report rows lack numeric lo <= hi"
grep -q "Thm 3.2: first order within 2%" "$work/rep" || err "report lacks the prediction row"
grep -q "Thm 3.2: attention k within 25% iid" "$work/rep" || err "report lacks the attention row"

# "-" as an output file: standard output
$ATTNCHECK condition --heads 1,2 --seq 8 --head-dim 2 --trials 3 --csv - > "$work/csvout.txt" 2>/dev/null
grep -q '^h,d,D,N,' "$work/csvout.txt" && grep -q '^2,2,4,8,' "$work/csvout.txt" || err "--csv - did not write the CSV to stdout"
[ ! -e ./- ] && [ ! -e "$work/-" ] || err "--csv - created a file named -"
$ATTNCHECK train --task fit-p --n 4 --steps 3 --quiet --log - > "$work/logout.txt" 2>/dev/null
grep -q '^step,lr,loss' "$work/logout.txt" || err "train --log - did not write the log to stdout"
exit $fail
