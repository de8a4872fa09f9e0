#!/bin/sh
# cli_student.sh — `attncheck separate --student` and the teacher of
# `attncheck train --task teacher` (doc/mathematics.md §4.8): every class of
# bad option (exit 64 / 66), the shape of the student table (JSON, CSV), the
# relative errors, worst inputs and certified bounds recomputed with NumPy
# from --out-dir (student_numpy.py), --plot and --csv (and nothing written
# or computed without gnuplot), the same numbers for any --threads, the
# teacher's default stack (V, the fixed-head g_V) against --teacher-stack W,
# and train's relative MSE recomputed with NumPy from a checkpoint.
# Exit status: 0 pass, 1 failure, 77 skipped (no python3/numpy), 99 setup error.
PY=${PYTHON3:-/usr/bin/python3}
exe="${ATTNCHECK:-./attncheck}"
test -x "$exe" || { echo "cli_student: $exe not built" >&2; exit 99; }
if ! "$PY" -c 'import numpy' >/dev/null 2>&1; then
    echo "cli_student: numpy is not installed for $PY, skipping" >&2
    exit 77
fi
script="${top_srcdir:-.}/tests/student_numpy.py"
test -f "$script" || script="$(dirname "$0")/student_numpy.py"
work=$(mktemp -d "${TMPDIR:-/tmp}/cli_student.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM HUP
fail=0
err() { echo "cli_student: $*" >&2; fail=1; }

# expect STATUS PATTERN ARGS...: separate --student ARGS exits STATUS and its
# standard error contains PATTERN
expect() {
    want=$1 pat=$2
    shift 2
    "$exe" separate --student "$@" >"$work/out" 2>"$work/err"
    got=$?
    [ "$got" = "$want" ] || { err "separate --student $*: exit $got, expected $want"; sed 's/^/    /' "$work/err" >&2; }
    grep -q -- "$pat" "$work/err" || err "separate --student $*: message lacks '$pat': $(cat "$work/err")"
}
expect 64 "do not divide d = 16" --student-heads 3
expect 64 "comma-separated" --student-heads 1,,2
expect 64 "comma-separated" --student-heads 0
expect 64 "ends with a comma" --student-heads 2,
expect 64 "does not apply to --student" --w-dir "$work"
expect 64 "does not apply to --student" --case 2
expect 64 "does not apply to --student" --embed
expect 64 ".svg, .png or .pdf" --plot "$work/a.txt"
expect 64 "out of range" --student-seeds 0
expect 64 "out of range" --n 1
expect 64 "exceeds --d" --dp 20
expect 64 "not a non-negative" --seed x
expect 66 "nonexistent" --v-dir "$work/nonexistent"

# the table: 3 standard students and the fixed one, 3 seeds each
args="--d 8 --h 4 --dp 4 --n 4 --student-heads 1,2,4 --student-steps 40 --student-seeds 3 --samples 6"
"$exe" separate --student $args --json --csv "$work/c.csv" --out-dir "$work/o" >"$work/j" 2>"$work/err" ||
    { err "separate --student --json failed"; cat "$work/err" >&2; }
"$exe" separate --student $args --json --threads 2 >"$work/j2" 2>"$work/err" ||
    { err "separate --student --threads 2 failed"; cat "$work/err" >&2; }
"$PY" "$script" table "$work/j" "$work/c.csv" "$work/o" "$work/j2" || err "student table: see above"
"$exe" separate --student $args >"$work/t" 2>"$work/err" || err "separate --student (text) failed"
for pat in "head count 1 logit class" "1:yes 2:yes 4:no 8:no" "^standard     4    2" "^fixed        4    4" "agrees"; do
    grep -q -- "$pat" "$work/t" || err "text table lacks '$pat'"
done

# --plot and --csv: the curves of the run (2 students x 1 seed x 20 points,
# one per step of 20);
# without gnuplot the command stops before any training and leaves no file
small="--d 8 --h 4 --dp 4 --n 4 --student-heads 2 --student-steps 20 --student-seeds 1 --samples 2"
if command -v gnuplot >/dev/null 2>&1; then
    "$exe" separate --student $small --plot "$work/s.svg" --csv "$work/s.csv" >"$work/t2" 2>"$work/err" ||
        { err "separate --student --plot failed"; cat "$work/err" >&2; }
    grep -q "<svg" "$work/s.svg" 2>/dev/null || err "--plot wrote no SVG"
    [ "$(wc -l < "$work/s.csv")" = 41 ] || err "--csv: $(wc -l < "$work/s.csv") lines, expected 1 + 2 x 20"
    grep -q "^fixed,4,4,1,20," "$work/s.csv" || err "--csv lacks the fixed student's last point"
fi
ATTNCHECK_GNUPLOT=/nonexistent/gnuplot "$exe" separate --student $small --plot "$work/n.svg" \
    --csv "$work/n.csv" --out-dir "$work/n" >/dev/null 2>"$work/err"
[ $? = 73 ] || err "--plot without gnuplot: exit status is not 73"
grep -q "gnuplot not found.*nothing was computed" "$work/err" || err "--plot without gnuplot: $(cat "$work/err")"
[ ! -e "$work/n.svg" ] && [ ! -e "$work/n.csv" ] && [ ! -e "$work/n" ] || err "--plot without gnuplot left files"

# progress on a terminal (stderr), none with --json or off a terminal
if command -v script >/dev/null 2>&1; then
    script -qec "'$exe' separate --student $small >/dev/null" /dev/null >"$work/tty" 2>&1
    grep -q "students 2/2 trained" "$work/tty" || err "no progress on a terminal: $(od -c "$work/tty" | head -3)"
    script -qec "'$exe' separate --student $small --json >/dev/null" /dev/null >"$work/tty" 2>&1
    grep -q "trained" "$work/tty" && err "progress with --json"
fi
"$exe" separate --student $small >/dev/null 2>"$work/err"
[ -s "$work/err" ] && err "progress off a terminal: $(cat "$work/err")"

# a given g_V (--v-dir): the teacher of --out-dir, and the same table
"$exe" separate --student --v-dir "$work/o" --n 4 --student-heads 1 --student-steps 3 --student-seeds 1 --samples 2 --json >"$work/j3" 2>"$work/err" ||
    { err "separate --student --v-dir failed"; cat "$work/err" >&2; }
grep -q '"source": *"loaded from' "$work/j3" || err "--v-dir: source not reported"
expect 64 "contradict" --v-dir "$work/o" --d 4
mkdir "$work/badv" && printf 'not npy' >"$work/badv/Vq.npy"
expect 65 "badv/Vq.npy" --v-dir "$work/badv"

# train --task teacher on a directory written by separate: g_V by default
"$exe" separate --optimize 0 --out-dir "$work/sep" >/dev/null 2>&1 || err "separate --out-dir failed"
"$exe" train --task teacher --teacher "$work/sep" --steps 2 --json >"$work/tv" 2>"$work/err" ||
    { err "train --task teacher failed"; cat "$work/err" >&2; }
grep -q '(V stack): 4 heads of size 8 on d = 16 (fixed)' "$work/tv" || err "teacher default is not g_V: $(grep data "$work/tv")"
grep -q '"eval_rel_mse"' "$work/tv" || err "train --task teacher reports no relative MSE"
"$exe" train --task teacher --teacher "$work/sep" --teacher-stack W --steps 2 --json >"$work/tw" 2>&1 ||
    err "train --teacher-stack W failed"
grep -q '(W stack): 4 heads of size 4 on d = 16 (standard)' "$work/tw" || err "--teacher-stack W: $(grep data "$work/tw")"
"$exe" train --task teacher --teacher "$work/sep" --teacher-stack X --steps 2 >/dev/null 2>&1
[ $? = 64 ] || err "--teacher-stack X: exit status is not 64"

# train's relative MSE against NumPy on input/target pairs and the checkpoint
"$PY" "$script" pairs "$work/pairs" || err "could not write pairs"
"$exe" train --task teacher --teacher "$work/pairs" --steps 5 --holdout 0.25 --save "$work/ck" --json >"$work/tp" 2>"$work/err" ||
    { err "train on pairs failed"; cat "$work/err" >&2; }
# every --json above, against its command's schema (attncheck(1), JSON)
printf 'separate %s\nseparate %s\nseparate %s\ntrain %s\ntrain %s\n' "$work/j" "$work/j2" "$work/j3" \
    "$work/tv" "$work/tp" > "$work/list"
"$PY" "$top_srcdir/tests/json_schema.py" --list "$work/list" || err "--json: schema violation"
"$PY" "$script" relmse "$work/tp" "$work/pairs" "$work/ck" || err "train's relative MSE: see above"
exit $fail
