#!/bin/sh
# plots.sh — the pictures of train, report and condition (--plot): each is a
# valid SVG/PNG/PDF drawn from the run's own numbers, the gnuplot script
# holds no string of the user's (file names are the staged paths the
# program names), a failing or absent gnuplot leaves no file, and
# condition's x axis has a tic at every h (also h = 3, 6, 12) and keeps its
# label clear of the key.
set -u
: "${ATTNCHECK:=./attncheck}"
: "${PYTHON3:=/usr/bin/python3}"
fail=0
command -v gnuplot >/dev/null 2>&1 || [ -n "${ATTNCHECK_GNUPLOT:-}" ] || { echo "plots: no gnuplot" >&2; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/plots.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM HUP
err() { echo "plots: $*" >&2; fail=1; }

# a gnuplot that keeps a copy of its script in $work/script.gp
real=$(command -v gnuplot)
[ -n "${ATTNCHECK_GNUPLOT:-}" ] && real=$ATTNCHECK_GNUPLOT
printf '#!/bin/sh\ntee "%s/script.gp" | "%s"\n' "$work" "$real" >"$work/gp"
printf '#!/bin/sh\ncat >/dev/null\nexit 3\n' >"$work/badgp"
chmod +x "$work/gp" "$work/badgp"
GP=$work/gp

# valid FILE: an SVG that parses as XML with an <svg> root, a PNG with its
# signature and a nonzero size, a PDF with its header and trailer
valid() {
    "$PYTHON3" - "$1" <<'PY' || err "$1 is not a valid picture"
import struct, sys, xml.dom.minidom
p = sys.argv[1]
b = open(p, 'rb').read()
if p.endswith('.svg'):
    d = xml.dom.minidom.parseString(b)
    assert d.documentElement.tagName == 'svg'
    assert len(d.getElementsByTagName('path')) > 10
elif p.endswith('.png'):
    assert b[:8] == b'\x89PNG\r\n\x1a\n' and b[12:16] == b'IHDR'
    w, h = struct.unpack('>II', b[16:24])
    assert w >= 600 and h >= 400, (w, h)
else:
    assert b[:5] == b'%PDF-' and b.rstrip().endswith(b'%%EOF')
PY
}
# user_free NAME...: no argument string appears anywhere in the script, and
# the script names no output file at all (gnuplot writes to its standard
# output, the file the program staged: plot.h)
user_free() {
    [ -s "$work/script.gp" ] || { err "no gnuplot script captured"; return; }
    for s in "$@"; do
        grep -qF -- "$s" "$work/script.gp" && err "the script holds the user's '$s'"
    done
    grep -q "^set output '" "$work/script.gp" && err "the script names an output file: $(grep '^set output' "$work/script.gp")"
    rm -f "$work/script.gp"
}
# nothing_left DIR: no file and no staged temporary in DIR
nothing_left() {
    [ -z "$(ls -A "$1")" ] || err "$1 is not empty after a failure: $(ls -A "$1")"
}

# ---- train -------------------------------------------------------------------
tr="--task fit-p --n 5 --d 10 --optimizer adamw --steps 300 --eval-every 30 --quiet"
for ext in svg png pdf; do
    f="$work/it's a run.$ext"
    ATTNCHECK_GNUPLOT=$GP "$ATTNCHECK" train $tr --plot "$f" --json >"$work/train.json" ||
        err "train --plot $ext failed"
    [ -f "$f" ] && valid "$f"
    user_free "$f" "it's a run"
done
# the curves are the run's evaluations: one data row per evaluation, the
# evaluation loss and max deviation as --json reports them
ATTNCHECK_GNUPLOT=$GP "$ATTNCHECK" train $tr --plot "$work/t.svg" --json >"$work/train.json"
"$PYTHON3" - "$work/train.json" "$work/script.gp" <<'PY' || err "train plot data differ from the run's evaluations"
import json, sys, math
j = json.load(open(sys.argv[1]))
s = open(sys.argv[2]).read()
rows = s.split('$data << EOD\n')[1].split('EOD\n')[0].split('\n')[:-1]
ev = j['evals']
assert len(rows) == len(ev) == 10, (len(rows), len(ev))
for r, e in zip(rows, ev):
    v = r.split()
    assert int(v[0]) == e['step']
    for got, want in ((float(v[2]), e['loss']), (float(v[4]), e['maxdev'])):
        assert math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-300), (got, want)
assert "set multiplot" in s and "tolerance of the certified claim" in s
PY
# a task with accuracy: the lower panel shows it
ATTNCHECK_GNUPLOT=$GP "$ATTNCHECK" train --task listops --steps 4 --eval-every 2 --batch 2 --quiet \
    --plot "$work/l.png" >/dev/null || err "train --task listops --plot failed"
[ -f "$work/l.png" ] && valid "$work/l.png"
grep -q "'accuracy'" "$work/script.gp" 2>/dev/null || err "listops plot has no accuracy curve"
rm -f "$work/script.gp"
# usage and failures
"$ATTNCHECK" train $tr --plot "$work/t.txt" >/dev/null 2>&1; [ $? -eq 64 ] || err "train --plot .txt: not 64"
mkdir "$work/empty"
ATTNCHECK_GNUPLOT=/nonexistent/gnuplot "$ATTNCHECK" train $tr --plot "$work/empty/t.svg" >/dev/null 2>"$work/err"
[ $? -eq 73 ] || err "train without gnuplot: not 73"
grep -q "gnuplot not found" "$work/err" || err "train without gnuplot: unclear message"
nothing_left "$work/empty"
ATTNCHECK_GNUPLOT=$work/badgp "$ATTNCHECK" train $tr --plot "$work/empty/t.svg" >/dev/null 2>&1
[ $? -eq 73 ] || err "train with a failing gnuplot: not 73"
nothing_left "$work/empty"

# ---- report ------------------------------------------------------------------
ATTNCHECK_GNUPLOT=$GP "$ATTNCHECK" report --quick --json --plot "$work/r.png" >"$work/report.json"
[ $? -le 2 ] || err "report --plot failed"
[ -f "$work/r.png" ] && valid "$work/r.png"
# one mark per row: the verdicts, the predicted verdicts and the bounds of
# the data are the rows' own
"$PYTHON3" - "$work/report.json" "$work/script.gp" <<'PY' || err "report plot data differ from the rows"
import json, sys, math, re
j = json.load(open(sys.argv[1]))
s = open(sys.argv[2]).read()
rows = s.split('$data << EOD\n')[1].split('EOD\n')[0].split('\n')[:-1]
col = {'PROVED': 0, 'REFUTED': 1, 'UNDECIDED': 2}
assert len(rows) == len(j['rows']) >= 10
nb = 0
for r, row in zip(rows, j['rows']):
    v = r.split()
    assert int(v[1]) == col[row['expected']] and int(v[2]) == col[row['verdict']], (r, row)
    colour = (0xff7f0e if 'error' in row or row['verdict'] == 'UNDECIDED'
              else 0x2ca02c if row['verdict'] == row['expected'] else 0xd62728)
    assert int(v[3]) == colour, (r, row)
    m = re.findall(r'(<=|>=)\s*([-+0-9.eE]+)', row['bound'])
    if m and float(m[-1][1]) > 0 and 'error' not in row:
        rel, val = m[-1]
        assert int(v[5]) == (1 if rel == '<=' else -1), (r, row)
        assert math.isclose(float(v[4]), float(val), rel_tol=1e-9), (r, row)
        nb += 1
    else:
        assert v[4] == 'NaN' and int(v[5]) == 0, (r, row)
assert nb >= 5, nb
PY
user_free "$work/r.png"
"$ATTNCHECK" report --quick --plot "$work/r.jpg" >/dev/null 2>&1; [ $? -eq 64 ] || err "report --plot .jpg: not 64"
ATTNCHECK_GNUPLOT=$work/badgp "$ATTNCHECK" report --quick --plot "$work/empty/r.svg" >/dev/null 2>&1
[ $? -eq 73 ] || err "report with a failing gnuplot: not 73"
nothing_left "$work/empty"

# ---- condition: the x axis ---------------------------------------------------
ATTNCHECK_GNUPLOT=$GP "$ATTNCHECK" condition --heads 12,1,2,3,4,6,8,16 --seq 16 --head-dim 8 \
    --trials 4 --plot "$work/c.svg" >/dev/null
[ $? -le 2 ] || err "condition --plot failed"
[ -f "$work/c.svg" ] && valid "$work/c.svg"
tics=$(sed -n 's/^set xtics (\(.*\))$/\1/p' "$work/script.gp")
for h in 1 2 3 4 6 8 12 16; do
    echo "$tics" | grep -q "'$h' $h\\b" || err "condition plot: no x tic at h = $h ($tics)"
done
grep -q '^set bmargin' "$work/script.gp" || err "condition plot: no room kept for the x label"
# the data rows in increasing h, whatever the order of --heads
hs=$(sed -n '/^\$data << EOD$/,/^EOD$/p' "$work/script.gp" | awk 'NF > 1 && $1 != "$data" { printf "%s ", $1 }')
[ "$hs" = "1 2 3 4 6 8 12 16 " ] || err "condition plot: data rows not in increasing h: $hs"
# the tic labels and the x label are drawn (text of the SVG)
"$PYTHON3" - "$work/c.svg" <<'PY' || err "condition SVG lacks tic labels or the x label"
import sys, xml.dom.minidom
d = xml.dom.minidom.parse(sys.argv[1])
def text(e):
    return ''.join(n.data if n.nodeType == n.TEXT_NODE else text(n) for n in e.childNodes)
t = [text(e).strip() for e in d.getElementsByTagName('text')]
for want in ('3', '6', '12', 'heads h'):
    assert want in t, (want, t)
PY
user_free "$work/c.svg"
exit $fail
