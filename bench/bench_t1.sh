#!/bin/sh
# bench_t1.sh — Theorem 1 at n = d = 1024: certified C vs plain C vs NumPy,
# in one run.  Both sides use the same OpenBLAS kernels and thread count.
# Usage: bench/bench_t1.sh [n] [reps]
set -eu
n=${1:-1024}; reps=${2:-5}
here=$(cd "$(dirname "$0")" && pwd)
bin=${BENCH_BIN:-./bench/bench_t1}
py=${PYTHON3:-/usr/bin/python3}
core=$("${ATTNCHECK:-./attncheck}" --version 2>/dev/null | sed -n 's/^BLAS kernels: \([^ ]*\).*/\1/p')
# NumPy gets the same kernels attncheck runs with
[ -n "${OPENBLAS_CORETYPE:-}" ] || { [ -n "$core" ] && export OPENBLAS_CORETYPE="$core"; }
c=$("$bin" "$n" "$reps")
p=$("$py" "$here/bench_t1.py" "$n" "$reps")
echo "$c"; echo "$p"
cert=$(echo "$c" | awk '/^certified /{print $2}')
plain=$(echo "$c" | awk '/^plain /{print $2}')
np_=$(echo "$p" | awk '/^numpy /{print $2}')
awk -v a="$cert" -v b="$plain" -v c="$np_" 'BEGIN {
    printf "certified / plain C = %.2f   (target <= 3)\n", a / b
    printf "NumPy / plain C     = %.2f   (target > 1)\n", c / b
}'
