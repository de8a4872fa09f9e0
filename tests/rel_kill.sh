#!/bin/sh
# rel_kill.sh — kill injection: every rename, exchange, unlink, rmdir and
# fsync of an --out-dir commit and of a checkpoint save is, in turn, replaced
# by SIGKILL (strace's fault injection, inject=SYSCALL:signal=KILL:when=K),
# and after each killed run a reader must find either the old complete set
# or the new complete set, never a mix.  Prints the number of injected kills
# and of mixed sets seen (must be 0).  Skipped (77) without strace or ptrace.
set -u
: "${ATTNCHECK:=./attncheck}"
: "${PYTHON3:=/usr/bin/python3}"
A=$ATTNCHECK
command -v strace >/dev/null 2>&1 || { echo "rel_kill: no strace; skipped"; exit 77; }
strace -qq -o /dev/null true 2>/dev/null || { echo "rel_kill: ptrace not permitted; skipped"; exit 77; }
# LeakSanitizer cannot run under ptrace (make check-sanitize)
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
export ASAN_OPTIONS
work=$(mktemp -d "${TMPDIR:-/tmp}/rel_kill.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM HUP
fail=0 kills=0 mixed=0 runs=0
err() { echo "rel_kill: $*" >&2; fail=1; }
# make check: the renames and the removal after the swap; REL_KILL_FULL=1
# (make check-kill): also unlink, rmdir and fsync
SYSCALLS="rename renameat2 unlinkat"
[ -n "${REL_KILL_FULL:-}" ] && SYSCALLS="rename renameat2 unlink unlinkat rmdir fsync"

# killrun SYSCALL K CMD...: run CMD with the K-th SYSCALL replaced by SIGKILL;
# returns 0 if the run was killed
killrun() {
    sc=$1 k=$2; shift 2
    runs=$((runs + 1))
    strace -f -qq -o /dev/null -e trace="$sc" -e inject="$sc":signal=KILL:when="$k" "$@" \
        >/dev/null 2>"$work/err"
    st=$?
    if [ "$st" -eq 137 ]; then kills=$((kills + 1)); return 0; fi
    [ "$st" -le 2 ] || err "$* (no kill): status $st: $(cat "$work/err")"
    return 1
}

# ---- --out-dir: old set n = 4, new set n = 6 -------------------------------
# a set is complete and unmixed when every file is there and every shape
# agrees with certificate.json's n
outdir_ok() {
    "$PYTHON3" - "$1" <<'PY'
import sys, json, struct, os
d = sys.argv[1]
def shape(f):
    b = open(os.path.join(d, f), 'rb').read(256)
    return eval(b[10:10 + struct.unpack('<H', b[8:10])[0]].decode())['shape']
try:
    c = json.load(open(os.path.join(d, 'certificate.json')))
    n = shape('X.npy')[1]
    ok = n in (4, 6) and shape('P.npy') == (n, n) and shape('Wq.npy')[0] == n \
        and shape('Wk.npy')[0] == n and json.dumps(c).count('"n": %d' % n) > 0
except Exception as e:
    ok = False
sys.exit(0 if ok else 1)
PY
}
"$PYTHON3" -c 'import json' 2>/dev/null || { echo "rel_kill: no python3; skipped"; exit 77; }
"$A" rep-theorem --n 4 --seed 1 --out-dir "$work/out" >/dev/null || err "could not write the old set"
outdir_ok "$work/out" || { err "the reader rejects a complete set (the test is broken)"; exit 1; }
for sc in $SYSCALLS; do
    k=1
    while [ $k -le 40 ] && killrun "$sc" "$k" "$A" rep-theorem --n 6 --seed 2 --out-dir "$work/out"; do
        outdir_ok "$work/out" || { mixed=$((mixed + 1)); err "--out-dir: a mixed set after a kill at $sc #$k: $(ls -A "$work/out")"; }
        k=$((k + 1))
    done
    outdir_ok "$work/out" || { mixed=$((mixed + 1)); err "--out-dir: a mixed set after the run of $sc"; }
    # back to the old set for the next system call
    "$A" rep-theorem --n 4 --seed 1 --out-dir "$work/out" >/dev/null || err "could not rewrite the old set"
done
[ -z "$(ls -A "$work" | grep '^\.out\.')" ] || err "stale staging left after a complete run: $(ls -A "$work")"

# ---- a write that fails in the staging directory: the message names the
# user's path (DIR/FILE), never the staging directory; DIR is not created
named=0
for k in 1 2 3 4 5 6 7 8; do
    strace -f -qq -o /dev/null -e trace=write -e inject=write:error=ENOSPC:when=$k \
        "$A" rep-theorem --n 6 --out-dir "$work/wout" >/dev/null 2>"$work/err"
    if grep -q 'tmp-' "$work/err"; then err "a write error names the staging path: $(cat "$work/err")"; fi
    if grep -q "wout/[A-Za-z]*\.\(npy\|json\): cannot write" "$work/err"; then named=$((named + 1)); fi
    if grep -q 'cannot write' "$work/err" && [ -e "$work/wout" ]; then err "a failed run created --out-dir: $(cat "$work/err")"; fi
    rm -rf "$work/wout"
done
[ "$named" -gt 0 ] || err "no injected write error was reported with the user's path"
named=0
for k in 2 3 4 5 6 7 8 9; do
    strace -f -qq -o /dev/null -e trace=write -e inject=write:error=ENOSPC:when=$k \
        "$A" train --task fit-p --n 4 --steps 2 --quiet --save "$work/wck" >/dev/null 2>"$work/err"
    if grep -q 'tmp-' "$work/err"; then err "a checkpoint write error names the staging path: $(cat "$work/err")"; fi
    if grep -q "wck/[A-Za-z.]*: cannot write" "$work/err"; then named=$((named + 1)); fi
    rm -rf "$work/wck"
done
[ "$named" -gt 0 ] || err "no injected checkpoint write error was reported with the user's path"

# ---- checkpoints: saves at steps 2, 4, 6 over an old checkpoint ----------
# a checkpoint is complete when it loads (every tensor's checksum is the one
# config.json lists): --resume with one more step exits 0, 1 or 2
ck_ok() {
    "$A" train --resume "$1" --steps 7 --quiet >/dev/null 2>"$work/rerr"
    [ $? -le 2 ]
}
"$A" train --task fit-p --optimizer adamw --n 4 --steps 6 --save-every 2 --save "$work/ck" --quiet >/dev/null 2>&1
ck_ok "$work/ck" || { err "the reader rejects a complete checkpoint: $(cat "$work/rerr")"; exit 1; }
for sc in $SYSCALLS; do
    k=1
    while [ $k -le 60 ] && killrun "$sc" "$k" "$A" train --task fit-p --optimizer adamw --n 4 --steps 6 --save-every 2 \
            --save "$work/ck" --quiet; do
        ck_ok "$work/ck" || { mixed=$((mixed + 1)); err "checkpoint: unloadable after a kill at $sc #$k: $(cat "$work/rerr")"; }
        k=$((k + 1))
    done
done

[ -z "$(ls -A "$work" | grep '^\.ck\.')" ] || err "stale checkpoint staging left after a complete run: $(ls -A "$work")"

echo "rel_kill: $runs runs, $kills injected kills, $mixed mixed sets"
[ "$kills" -gt 0 ] || err "no kill was injected (strace's injection did not work)"
exit $fail
