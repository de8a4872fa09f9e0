#!/bin/sh
# rel_integrity.sh — output integrity and bad input at the edges: no file name
# reaches gnuplot's script (--plot), a failed write on stdout is exit 73 and
# commits no output directory, --out-dir is replaced as one set (never a mix,
# never a directory of the user's), stale staging is removed, checkpoint
# directories follow the umask, every hostile value of a checkpoint is file
# data (65, naming the file and the key), and sizes beyond the memory are
# refused before any work.
set -u
: "${ATTNCHECK:=./attncheck}"
fail=0
work=$(mktemp -d "${TMPDIR:-/tmp}/rel_integrity.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM HUP
err() { echo "rel_integrity: $*" >&2; fail=1; }
A=$ATTNCHECK

# run WANT ARGS...: the exit status must be WANT; stderr in $work/err
run() {
    want=$1; shift
    "$A" "$@" >"$work/out" 2>"$work/err"
    got=$?
    [ "$got" -eq "$want" ] || { err "$*: status $got, expected $want: $(head -2 "$work/err")"; return 1; }
    if [ "$want" -ge 64 ] && [ "$(wc -l < "$work/err")" -gt 2 ]; then
        err "$*: more than one line of error: $(cat "$work/err")"
    fi
    return 0
}

# ---- 1. --plot: no user string in the gnuplot script ------------------------
if "$A" condition --help | grep -q -- --plot && command -v gnuplot >/dev/null 2>&1; then
    mkdir "$work/plot" && cd "$work/plot" || exit 99
    nl='
'
    for name in "x${nl}!touch PWNED${nl}.svg" "x${nl}system('touch PWNED2')${nl}.svg" \
                "q'uote.svg" "q''uote'.png" 'back\slash.svg' 'bang!.pdf' '$(touch PWNED3).svg' \
                "$(printf 'na\377me.svg')" "$(printf 'ctl\001\033[1m.svg')" "$(printf 'tab\there.svg')"; do
        "$A" condition --heads 1,2 --trials 4 --seq 8 --head-dim 4 --plot "$name" \
            >/dev/null 2>"$work/err"
        st=$?
        [ "$st" -eq 2 ] || err "--plot '$name': status $st: $(cat "$work/err")"
        [ -s "$name" ] || err "--plot '$name': no plot written under that name"
    done
    for f in PWNED PWNED2 PWNED3; do
        [ ! -e "$f" ] || err "--plot: a file name ran as a command (it created $f)"
    done
    [ -z "$(find . -name '.*' -type f)" ] || err "--plot left staging files: $(find . -name '.*' -type f)"
    ATTNCHECK_GNUPLOT=/bin/true "$A" condition --heads 1,2 --trials 4 --seq 8 --head-dim 4 \
        --plot empty.svg >/dev/null 2>&1; st=$?
    [ "$st" -eq 73 ] && [ ! -e empty.svg ] || err "--plot with a gnuplot that wrote nothing: status $st"
    head -c 5 "q'uote.svg" | grep -q '<?xm' || err "--plot q'uote.svg is not an SVG"
    head -c 4 'bang!.pdf' | grep -q '%PDF' || err "--plot bang!.pdf is not a PDF"
    cd "$work" || exit 99
fi

# ---- 2. stdout write errors -------------------------------------------------
if [ -w /dev/full ]; then
    for c in "rep-theorem --n 8" "separate --optimize 0" "condition --heads 1,2 --trials 4 --seq 8 --head-dim 4" \
             "train --task fit-p --n 4 --steps 3 --quiet" "report --quick"; do
        for j in "" "--json"; do
            # shellcheck disable=SC2086
            "$A" $c $j >/dev/full 2>"$work/err"
            st=$?
            [ "$st" -eq 73 ] || err "$c $j > /dev/full: status $st, expected 73"
            grep -q "stdout" "$work/err" || err "$c $j > /dev/full: the message does not name stdout: $(cat "$work/err")"
            [ "$(wc -l < "$work/err")" -eq 1 ] || err "$c $j > /dev/full: not one line: $(cat "$work/err")"
        done
    done
    "$A" rep-theorem --n 8 --json --out-dir "$work/full" >/dev/full 2>/dev/null
    [ ! -e "$work/full" ] || err "rep-theorem > /dev/full committed its --out-dir"
    "$A" separate --optimize 0 --out-dir "$work/full2" >/dev/full 2>/dev/null
    [ ! -e "$work/full2" ] || err "separate > /dev/full committed its --out-dir"
    "$A" --help >/dev/full 2>/dev/null; st=$?
    [ "$st" -eq 73 ] || err "attncheck --help > /dev/full: status $st"
fi

# ---- 3. --out-dir is replaced as one set -----------------------------------
run 0 rep-theorem --n 4 --seed 1 --out-dir "$work/o" || :
cp "$work/o/X.npy" "$work/X1.npy"
# a failing run (its output cannot be written) changes nothing
"$A" rep-theorem --n 5 --seed 2 --out-dir "$work/o" >/dev/full 2>&1
cmp -s "$work/o/X.npy" "$work/X1.npy" || err "a later run changed X.npy"
run 0 rep-theorem --n 6 --seed 3 --out-dir "$work/o" || :
grep -q '"n": 6\|6 x 6\|n = 6' "$work/o/certificate.json" || err "--out-dir o was not replaced by the n = 6 run"
cmp -s "$work/o/X.npy" "$work/X1.npy" && err "--out-dir: X.npy of the first run survived the second"
"$PYTHON3" -c "import sys" 2>/dev/null && "$PYTHON3" - "$work/o" <<'PY' || err "--out-dir o is a mixed set"
import sys, json, struct
d = sys.argv[1]
def shape(f):
    b = open(f, 'rb').read(256)
    h = b[10:10 + struct.unpack('<H', b[8:10])[0]].decode()
    return eval(h)['shape']
assert shape(d + '/X.npy')[1] == 6 and shape(d + '/P.npy') == (6, 6) and shape(d + '/Wq.npy')[0] == 6
PY
# an existing certificate.json that is a directory: refused before any file lands
mkdir -p "$work/o2/certificate.json"
run 73 rep-theorem --n 4 --out-dir "$work/o2" || :
[ -z "$(ls -A "$work/o2" | grep -v '^certificate.json$')" ] || err "files landed in o2: $(ls -A "$work/o2")"
# a directory of the user's is never replaced
mkdir "$work/mine" && echo keep > "$work/mine/notes.txt"
run 73 rep-theorem --n 4 --out-dir "$work/mine" || :
grep -q "mine" "$work/err" && grep -q "notes.txt" "$work/err" || err "the refusal does not name the directory and the file: $(cat "$work/err")"
[ "$(cat "$work/mine/notes.txt")" = keep ] || err "the user's file was touched"
# errors name the user's path, never the staging path
mkdir "$work/o3"
run 0 rep-theorem --n 4 --out-dir "$work/o3" || :
grep -q 'tmp-' "$work/err" && err "a message names the staging path: $(cat "$work/err")"
# no staging left, and no empty out-dir on failure
[ -z "$(ls -A "$work" | grep '\.tmp-\|\.old-\|attncheck-')" ] || err "staging left: $(ls -A "$work")"
run 65 rep-theorem --x "$work/mine/notes.txt" --out-dir "$work/never" || :
[ ! -e "$work/never" ] || err "a failed run left an empty --out-dir behind"

# ---- 4. stale staging, umask -----------------------------------------------
mkdir "$work/.o.tmp-AbC123" "$work/.o.old-XyZ789" "$work/.other.tmp-AbC123"
echo x > "$work/.o.tmp-AbC123/Wq.npy"
run 0 rep-theorem --n 4 --out-dir "$work/o" || :
[ ! -e "$work/.o.tmp-AbC123" ] && [ ! -e "$work/.o.old-XyZ789" ] || err "stale staging of o not removed: $(ls -A "$work")"
[ -d "$work/.other.tmp-AbC123" ] || err "staging of another name was removed"
( umask 022; "$A" train --task fit-p --n 4 --steps 2 --quiet --save "$work/ck" >/dev/null 2>&1 )
[ "$(stat -c %a "$work/ck")" = 755 ] || err "checkpoint directory mode $(stat -c %a "$work/ck") under umask 022"
( umask 027; "$A" rep-theorem --n 4 --out-dir "$work/o027" >/dev/null 2>&1 )
[ "$(stat -c %a "$work/o027")" = 750 ] || err "--out-dir mode $(stat -c %a "$work/o027") under umask 027"

# the log of a failed run says so; a complete run's does not
if [ -w /dev/full ]; then
    "$A" train --task fit-p --n 4 --steps 3 --quiet --log "$work/f.csv" >/dev/full 2>/dev/null
    tail -1 "$work/f.csv" | grep -q '^# incomplete' || err "the --log of a failed run looks complete: $(tail -1 "$work/f.csv")"
    "$A" train --task fit-p --n 4 --steps 3 --json --log "$work/f.jsonl" >/dev/full 2>/dev/null
    tail -1 "$work/f.jsonl" | grep -q '"incomplete": true' || err "the JSON-lines --log of a failed run looks complete"
fi
"$A" train --task fit-p --n 4 --steps 3 --quiet --log "$work/ok.csv" >/dev/null 2>&1
grep -q incomplete "$work/ok.csv" && err "the --log of a complete run is marked incomplete"

# ---- 6. a corrupt checkpoint is file data ----------------------------------
if "$PYTHON3" -c "import json" 2>/dev/null; then
    head -c 3000 "$top_srcdir/README" > "$work/t.txt"
    "$A" train --task text --text "$work/t.txt" --steps 2 --width 8 --heads 2 --layers 1 --seq 8 \
        --batch 2 --quiet --save "$work/tk" >/dev/null 2>&1 || err "could not make a text checkpoint"
    for m in "data.holdout=1e308" "train.lr=0" "model.heads=0" "data.text=''" "train.eps='nan'" \
             "train.batch=4294967296" "model.layers=100000000" "model.heads=3" "train.beta1=-1" \
             "train.warmup=99" "model.width=0" "data.text='/dev/zero'" "train.clip='inf'"; do
        rm -rf "$work/bad"; cp -r "$work/tk" "$work/bad"
        "$PYTHON3" - "$work/bad/config.json" "$m" <<'PY'
import json, sys
k, v = sys.argv[2].split('=', 1); s, k = k.split('.')
c = json.load(open(sys.argv[1])); c[s][k] = eval(v); json.dump(c, open(sys.argv[1], 'w'))
PY
        key=${m%%=*}; key=${key#*.}
        "$A" train --resume "$work/bad" --steps 3 --quiet >/dev/null 2>"$work/err"; st=$?
        [ "$st" -eq 65 ] || err "checkpoint with $m: status $st, expected 65: $(cat "$work/err")"
        case $m in
        *dev/zero*) grep -q "/dev/zero: not a regular file" "$work/err" || err "checkpoint naming /dev/zero: $(cat "$work/err")" ;;
        *) grep -q "bad/config.json: .*$key" "$work/err" || err "checkpoint with $m: the message does not name the file and \"$key\": $(cat "$work/err")" ;;
        esac
        grep -q -- '--' "$work/err" && err "checkpoint with $m: the message names an option: $(cat "$work/err")"
    done
fi

# ---- 5. resource limits ----------------------------------------------------
run 65 train --task text --text /dev/zero --steps 2 || :
grep -q "/dev/zero" "$work/err" || err "/dev/zero: the message does not name it"
# an address-space limit (ulimit -v) below the estimate: refused with it
# (not for a build that cannot start under such a limit: ASan reserves
# terabytes of address space)
if ! ( ulimit -v 1500000 2>/dev/null && "$A" --version >/dev/null 2>&1 ); then
    echo "rel_integrity: this build cannot run under ulimit -v; the limit test is skipped"
else
for c in "rep-theorem --n 4000" "separate --d 2048 --h 2 --dp 1024 --n 2" \
         "train --task listops --width 2048 --layers 8" "train --task fit-p --n 4096"; do
    # shellcheck disable=SC2086
    ( ulimit -v 1500000 2>/dev/null || exit 0; "$A" $c >/dev/null 2>"$work/err"; echo $? > "$work/st" )
    [ -f "$work/st" ] || continue
    st=$(cat "$work/st"); rm -f "$work/st"
    [ "$st" -eq 64 ] || err "$c under ulimit -v: status $st, expected 64: $(cat "$work/err")"
    grep -q "GiB" "$work/err" || err "$c under ulimit -v: no estimate in the message: $(cat "$work/err")"
done
fi

exit $fail
