#!/bin/sh
# bench_t1.sh — Theorem 1, certified C vs plain C vs NumPy, in one run, for
# each case "n d reps" of BENCH_T1_CASES (default: n = d = 1024, the tall
# d = 4096, n = 2, and n = d = 4096 once).  Both sides use the same OpenBLAS
# kernels and thread count.  For every case after the first, the whole
# `attncheck rep-theorem` and one NumPy run are also timed with their peak
# memory (/usr/bin/time), back to back; there dk = d (the default), the
# in-process sides use dk = n.  The targets printed are:
# certified / plain C <= 1.5 and NumPy / plain C >= 2 at n = 1024; at
# n = 4096 the whole command <= 2x NumPy's time and <= 12 n^2 doubles.
# Usage: bench/bench_t1.sh [n [reps [d]]]   (one case instead of the list)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=${BENCH_BIN:-./bench/bench_t1}
ac=${ATTNCHECK:-./attncheck}
py=${PYTHON3:-/usr/bin/python3}
core=$("$ac" --version 2>/dev/null | sed -n 's/^BLAS kernels: \([^ ]*\).*/\1/p')
# NumPy gets the same kernels attncheck runs with
[ -n "${OPENBLAS_CORETYPE:-}" ] || { [ -n "$core" ] && export OPENBLAS_CORETYPE="$core"; }
if [ $# -gt 0 ]; then
    cases="$1 ${3:-$1} ${2:-5}"
else
    cases=${BENCH_T1_CASES:-"1024 1024 5;2 4096 5;4096 4096 1"}
fi
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
first=1
echo "$cases" | tr ';' '\n' | while read -r n d reps; do
    [ -n "$n" ] || continue
    echo "-- n = $n, d = $d, reps = $reps"
    c=$("$bin" "$n" "$reps" 1 "$d")
    p=$("$py" "$here/bench_t1.py" "$n" "$reps" 1 "$d")
    echo "$c"; echo "$p"
    cert=$(echo "$c" | awk '/^certified /{print $2}')
    plain=$(echo "$c" | awk '/^plain /{print $2}')
    np_=$(echo "$p" | awk '/^numpy /{print $2}')
    ccpu=$(echo "$c" | awk '/^certified_cpu /{print $2}')
    pcpu=$(echo "$c" | awk '/^plain_cpu /{print $2}')
    ncpu=$(echo "$p" | awk '/^numpy_cpu /{print $2}')
    # the goals: certified <= 1.5x plain C, plain C >= 2x faster than
    # NumPy (wall medians; the CPU-time ratios beside them are the steadier
    # numbers on a loaded machine)
    awk -v a="$cert" -v b="$plain" -v c="$np_" -v ac="$ccpu" -v bc="$pcpu" -v cc="$ncpu" 'BEGIN {
        printf "certified / plain C = %.2f   (target <= 1.5; CPU time %.2f)\n", a / b, ac / bc
        printf "NumPy / plain C     = %.2f   (target >= 2; CPU time %.2f)\n", c / b, cc / bc
        printf "certified / NumPy   = %.2f\n", a / c
    }'
    if [ $first = 0 ] && [ -x /usr/bin/time ]; then
        # whole command vs NumPy: wall seconds and peak RSS (MB), back to back
        a=$(/usr/bin/time -f "%e %M" "$ac" rep-theorem --n "$n" --d "$d" 2>&1 >/dev/null | tail -1)
        b=$(/usr/bin/time -f "%e %M" "$py" "$here/bench_t1.py" "$n" 1 1 "$d" 2>&1 >/dev/null | tail -1)
        echo "$a" "$b" | awk -v n="$n" -v d="$d" '{
            if (n == d)
                printf "attncheck rep-theorem: %.2f s, %.0f MB (%.1f n^2 doubles; target <= 12)\n", $1, $2 / 1024, $2 * 1024 / (8 * n * n)
            else
                printf "attncheck rep-theorem: %.2f s, %.0f MB\n", $1, $2 / 1024
            printf "NumPy (1 run):         %.2f s, %.0f MB\n", $3, $4 / 1024
            printf "command / NumPy time  = %.2f   (target <= 2)\n", $1 / $3
        }'
    fi
    first=0
done
