#!/bin/sh
# bench_smoke.sh — `make bench` at tiny sizes (seconds): every benchmark
# driver is built by `make check` (so an API change cannot break it
# unseen) and runs, and bench_t1.sh runs end to end against its NumPy peer.
# Timings are printed by the drivers but never checked here.
# Exit status: 0 pass, 1 failure, 99 setup error.
: "${top_srcdir:=.}"
: "${PYTHON3:=/usr/bin/python3}"
fail=0
err() { printf 'bench_smoke: %s\n' "$*" >&2; fail=1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/bench_smoke.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM HUP
# has FILE REGEX WHAT: the driver's output has a line matching REGEX
has() { grep -Eq "$2" "$1" || { err "$3: no line matching '$2'"; cat "$1" >&2; }; }

./bench/bench_t1 16 1 1 16 > "$work/t1" 2>&1 || err "bench_t1 failed"
has "$work/t1" '^certified [0-9.]+' bench_t1
has "$work/t1" '^plain [0-9.]+' bench_t1
has "$work/t1" '^plain_max_error ' bench_t1

./bench/condition 16 8 2 1 1,2 > "$work/cond" 2>&1 || err "bench/condition failed"
has "$work/cond" '^median [0-9.]+' bench/condition

./bench/train --vocab 16 --seq 8 --width 16 --layers 1 --heads 2 --batch 2 --steps 2 \
    --warmup 1 > "$work/train" 2>&1 || err "bench/train failed"
has "$work/train" 'tokens_per_s [0-9]+' bench/train

# st_load: a tiny safetensors file (one F32 tensor of 2 x 3)
printf '\074\0\0\0\0\0\0\0{"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}}   ' > "$work/w.safetensors"
head -c 24 /dev/zero >> "$work/w.safetensors"
./bench/st_load "$work/w.safetensors" 1 > "$work/st" 2>&1 || err "bench/st_load failed"
has "$work/st" '^convert [0-9.]+' bench/st_load
has "$work/st" '^elements 6 ' bench/st_load

if "$PYTHON3" -c 'import numpy' 2>/dev/null; then
    ATTNCHECK=./attncheck BENCH_BIN=./bench/bench_t1 PYTHON3="$PYTHON3" \
        sh "$top_srcdir/bench/bench_t1.sh" 16 1 > "$work/t1sh" 2>&1 || err "bench_t1.sh failed"
    has "$work/t1sh" '^numpy [0-9.]+' bench_t1.sh
    has "$work/t1sh" 'certified / plain C' bench_t1.sh
    ATTNCHECK=./attncheck PYTHON3="$PYTHON3" \
        sh "$top_srcdir/bench/bench_decide.sh" 16 > "$work/dec" 2>&1 || err "bench_decide.sh failed"
    has "$work/dec" '^  exact .*decided by ' bench_decide.sh
    has "$work/dec" '^numpy plain rho [0-9.]+' bench_decide.sh
    BENCH_BIN=./bench/st_load PYTHON3="$PYTHON3" \
        sh "$top_srcdir/bench/st_load.sh" 4096 1 > "$work/stsh" 2>&1 || err "st_load.sh failed"
    has "$work/stsh" 'NumPy astype / attncheck' st_load.sh
else
    echo "bench_smoke: no NumPy, bench_t1.sh not run" >&2
fi
[ $fail = 0 ] && echo "bench_smoke: drivers and bench_t1.sh ran"
exit $fail
