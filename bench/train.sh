#!/bin/sh
# bench/train.sh — tokens per second of one training step (forward, backward,
# clipping, AdamW; float64) of attncheck against the same model in PyTorch,
# in one run, with peak memory.
#
#   bench/train.sh [REPEATS]          (default 3; the median is reported)
#
# Configurations:
#   B2        vocab 64, seq 64, width 64, 2 pre-LN layers, 4 standard heads,
#             FFN 4x, batch 32, causal LM
#   B2-fixed  the same with 4 fixed heads of size dp = 64
#   large     vocab 256, seq 128, width 256, 4 layers, 8 heads, batch 16
# attncheck runs with 1 and 2 threads (OpenMP; its BLAS calls are
# single-threaded inside).  PyTorch runs with OPENBLAS_CORETYPE set to the
# kernels this CPU supports (OpenBLAS misdetects some CPUs) in three settings:
# torch.set_num_threads(1) with OPENBLAS_NUM_THREADS=1 (one core), the same
# with OpenBLAS's default threads (torch's "one thread" still runs its matrix
# products on every core), and torch.set_num_threads(2).  The ratio compares
# the best setting of each side; "1-core ratio" compares one core each.
# Peak memory is the maximum resident set size (/usr/bin/time) of the best
# setting's run.  GF/s: the matrix-product flops of a step (bench/train.c:
# dense attention, backward twice the forward) per second at attncheck's
# best setting, beside the single-threaded dgemm peak (512^3, best of 5)
# measured at the start and at the end of the same run (by the wall clock,
# and by CPU time, which a loaded machine inflates less).
# Environment: BENCH_BIN (the C driver, default ./bench/train),
# PYTHON3 (default /usr/bin/python3).
set -u
here=$(cd "$(dirname "$0")" && pwd)
C=${BENCH_BIN:-./bench/train}
PY=${PYTHON3:-/usr/bin/python3}
R=${1:-3}
[ -x "$C" ] || { echo "train.sh: $C not found (make bench builds it)" >&2; exit 1; }
peer=1
"$PY" -c 'import torch' 2>/dev/null || { echo "train.sh: no torch for $PY: attncheck only" >&2; peer=0; }
core=
if grep -q avx512f /proc/cpuinfo 2>/dev/null; then core=SkylakeX
elif grep -q avx2 /proc/cpuinfo 2>/dev/null; then core=Haswell; fi
timer=
[ -x /usr/bin/time ] && timer=/usr/bin/time
tmp=$(mktemp -d "${TMPDIR:-/tmp}/train_bench.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# run ARGS...: one run; prints "TOKENS_PER_S MAXRSS_KB"
run() {
    if [ -n "$timer" ]; then
        $timer -f '%M' -o "$tmp/rss" "$@" > "$tmp/out" 2> "$tmp/err" || { cat "$tmp/err" >&2; return 1; }
        rss=$(tail -1 "$tmp/rss")
    else
        "$@" > "$tmp/out" 2> "$tmp/err" || { cat "$tmp/err" >&2; return 1; }
        rss=0
    fi
    awk '$1 == "attncheck" && $3 > 0 {print $13 / $3}' "$tmp/out" > "$tmp/fpt"
    echo "$(awk '{print $3}' "$tmp/out") $rss"
}
# median of R runs: prints "MEDIAN_TPS RSS_KB"
median() {
    : > "$tmp/m"
    i=0
    while [ $i -lt "$R" ]; do
        run "$@" >> "$tmp/m" || return 1
        i=$((i + 1))
    done
    sort -n "$tmp/m" | awk '{t[NR] = $1; r[NR] = $2} END {m = int((NR + 1) / 2); print t[m], r[m]}'
}

peak() { "$C" --peak | awk '{printf "%s GFLOP/s (wall clock; by CPU time %s)", $2, ($4 == "" ? "-" : $4)}'; }
echo "dgemm peak (1 thread, 512^3, best of 5) at the start: $(peak); load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "attncheck train benchmark: median of $R runs per setting; $(nproc) cores; OpenBLAS core for PyTorch: ${core:-default}"
echo "(timings on a shared machine are noisy; tokens/s = batch x seq / step time)"
printf '%-9s %9s %9s %9s %9s %9s %7s %7s %7s %7s %7s\n' "" "C" "C" "torch" "torch" "torch" "best" "1-core" "C" "torch" "C"
printf '%-9s %9s %9s %9s %9s %9s %7s %7s %7s %7s %7s\n' config "1 thr" "2 thr" "1 core" "1 thr" "2 thr" ratio ratio MiB MiB GF/s
best() { # VALUE RSS pairs -> the pair with the largest value
    awk 'BEGIN {b = -1} {for (i = 1; i < NF; i += 2) if ($i > b) {b = $i; m = $(i + 1)}} END {print b, m}'
}
for cfg in B2 B2-fixed large; do
    case $cfg in
        B2) args="--vocab 64 --seq 64 --width 64 --layers 2 --heads 4 --batch 32"; steps=30 ;;
        B2-fixed) args="--vocab 64 --seq 64 --width 64 --layers 2 --heads 4 --attention fixed --head-dim 64 --batch 32"; steps=20 ;;
        large) args="--vocab 256 --seq 128 --width 256 --layers 4 --heads 8 --batch 16"; steps=6 ;;
    esac
    c1=$(median "$C" $args --steps $steps --threads 1)
    c2=$(median "$C" $args --steps $steps --threads 2)
    set -- $(echo "$c1 $c2" | best); bc=$1; bcm=$2
    gf=$(awk -v t="$bc" '{printf "%.1f", $1 * t; exit}' "$tmp/fpt")
    t0="- 0"; t1="- 0"; t2="- 0"; ratio=-; ratio1=-; btm=0
    if [ $peer = 1 ]; then
        t0=$(median env ${core:+OPENBLAS_CORETYPE=$core} OPENBLAS_NUM_THREADS=1 "$PY" "$here/train_torch.py" $args --steps $steps --threads 1)
        t1=$(median env ${core:+OPENBLAS_CORETYPE=$core} "$PY" "$here/train_torch.py" $args --steps $steps --threads 1)
        t2=$(median env ${core:+OPENBLAS_CORETYPE=$core} "$PY" "$here/train_torch.py" $args --steps $steps --threads 2)
        set -- $(echo "$t0 $t1 $t2" | best); bt=$1; btm=$2
        ratio=$(awk -v a="$bc" -v b="$bt" 'BEGIN {printf "%.2fx", a / b}')
        ratio1=$(awk -v a="${c1% *}" -v b="${t0% *}" 'BEGIN {printf "%.2fx", a / b}')
    fi
    printf '%-9s %9s %9s %9s %9s %9s %7s %7s %7.0f %7.0f %7s\n' "$cfg" "${c1% *}" "${c2% *}" "${t0% *}" \
        "${t1% *}" "${t2% *}" "$ratio" "$ratio1" "$(awk -v k="$bcm" 'BEGIN {print k / 1024}')" \
        "$(awk -v k="$btm" 'BEGIN {print k / 1024}')" "$gf"
done
echo "dgemm peak at the end: $(peak); load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "tokens/s; best ratio = best attncheck setting / best PyTorch setting; 1-core ratio = attncheck"
echo "1 thread / PyTorch on one core; MiB = peak RSS of the best settings"
