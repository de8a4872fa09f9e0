#!/bin/sh
# progress_width.sh — the progress lines of train and condition fit the
# terminal: run on a pseudo-terminal (script(1)) whose width is set by
# `stty cols` or, when the terminal reports none, by $COLUMNS; no line
# redrawn with '\r' may be as long as the row (it would wrap, and '\r' then
# redraws only its last part).  condition's line carries an ETA.
set -u
: "${ATTNCHECK:=./attncheck}"
: "${PYTHON3:=/usr/bin/python3}"
command -v script >/dev/null 2>&1 || { echo "progress_width: no script(1)" >&2; exit 77; }
fail=0
work=$(mktemp -d "${TMPDIR:-/tmp}/progress_width.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM HUP
err() { echo "progress_width: $*" >&2; fail=1; }

# on_pty COLS HOW CMD...: run CMD on a pseudo-terminal of COLS columns (HOW:
# stty or env), its output in $work/ts
on_pty() {
    cols=$1 how=$2; shift 2
    if [ "$how" = stty ]; then
        script -qec "stty cols $cols; $*" "$work/ts" >/dev/null 2>&1 </dev/null
    else
        COLUMNS=$cols script -qec "stty cols 0 2>/dev/null; $*" "$work/ts" >/dev/null 2>&1 </dev/null
    fi
}
# fits COLS WHAT [NEED]: every progress segment of $work/ts is shorter than
# COLS; at least 3 were drawn; NEED, when given, is in the last one.  The
# count does not depend on the machine's speed: train redraws its bar after
# every evaluation line and at the end (evaluations at steps 10, 20, 30
# below), condition its line when each h of the list completes (4 below);
# the redraws every 0.1 s in between only add to these.
fits() {
    "$PYTHON3" - "$work/ts" "$1" "${3:-}" <<'PY' || err "$2: progress lines do not fit $1 columns"
import re, sys
cols, need = int(sys.argv[2]), sys.argv[3]
t = open(sys.argv[1], 'rb').read().decode('utf-8', 'replace')
t = t.split('\n', 1)[1] if t.startswith('Script started') else t
# a redrawn progress line is '\r', its text, then ESC [K (clear the rest)
prog = [s for s in re.findall(r'\r([^\r\n\x1b]+)\x1b\[K', t) if s.strip()]
assert len(prog) >= 3, (len(prog), t[:300])
long_ = [s for s in prog if len(s) >= cols]
assert not long_, (cols, long_[:3])
if need:
    assert need in prog[-1], (need, prog[-3:])
PY
}
tr="$ATTNCHECK train --task listops --steps 30 --eval-every 10 --batch 1 --threads 1"
for c in "stty 40" "stty 80" "env 60"; do
    set -- $c
    on_pty $2 $1 "$tr" || err "train on a pty ($1 $2) failed"
    fits $2 "train ($1, $2 columns)"
done
# the bar is there when there is room, and not wider than 30
on_pty 132 stty "$tr"
grep -q '\[#*\.*\]' "$work/ts" || err "train: no bar at 132 columns"
grep -qE '\[[#.]{31,}\]' "$work/ts" && err "train: bar wider than 30"
cond="$ATTNCHECK condition --heads 1,2,4,8 --seq 64 --head-dim 32 --trials 60 --threads 1"
on_pty 50 stty "$cond"
fits 50 "condition (50 columns)"
on_pty 120 stty "$cond"
fits 120 "condition (120 columns)" "ETA "
# (m:ss once half a second has passed, "--:--" before: no timing is assumed)
grep -qE 'ETA ([0-9]+:[0-9][0-9]|--:--)' "$work/ts" || err "condition: no ETA"
exit $fail
