#!/bin/sh
# condition.sh — Theorem 3.2, the headline workload of `attncheck condition`
# against the issue's NumPy script, in one run:
#   --seq 128 --head-dim 64 --heads 1,2,4,8,16,32,64 --trials 100
# NumPy runs with the same OpenBLAS kernels as attncheck and with 1 and 2
# OpenBLAS threads; its best time is the peer.  attncheck is timed as a
# library call (bench/condition, median of REPS runs) and as the whole
# `attncheck condition` command (process start to exit, median of REPS).
# The sweep's achieved GFLOP/s (nominal flops of the double kernels / wall
# time) is printed beside the single-threaded dgemm peak measured in the
# same run (bench/condition --peak), and the command's CPU time (user +
# sys) beside its wall time, since wall times are noisy on a shared machine.
# Goal (row B1): the whole command >= 12x faster than NumPy's
# best setting.
# Usage: bench/condition.sh [REPS] [NUMPY_REPS]      (default 5 and 1)
# The machine is shared: report medians, and expect noise.
set -eu
reps=${1:-5}; nreps=${2:-1}
N=128; d=64; T=100; heads=1,2,4,8,16,32,64
here=$(cd "$(dirname "$0")" && pwd)
bin=${BENCH_BIN:-./bench/condition}
exe=${ATTNCHECK:-./attncheck}
# In the build tree ./attncheck is libtool's development wrapper (a bash
# script, ~15 ms per start that an installed attncheck does not have): time
# the program it runs, with the library path the wrapper would set.
if head -c 2048 "$exe" 2>/dev/null | grep -q 'temporary wrapper script for'; then
    real="$(dirname "$exe")/.libs/$(basename "$exe")"
    if [ -x "$real" ]; then
        exe=$real
        LD_LIBRARY_PATH="$(cd "$(dirname "$exe")/../src/.libs" 2>/dev/null && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        export LD_LIBRARY_PATH
    fi
fi
py=${PYTHON3:-/usr/bin/python3}
core=$("$exe" --version 2>/dev/null | sed -n 's/^BLAS kernels: \([^ ]*\).*/\1/p')
[ -n "${OPENBLAS_CORETYPE:-}" ] || { [ -n "$core" ] && export OPENBLAS_CORETYPE="$core"; }

echo "workload: N = $N, d = $d, heads $heads, $T trials per h (BLAS kernels ${OPENBLAS_CORETYPE:-default})"
echo "load at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
peak=$("$bin" --peak | awk '{print $2}')
echo "dgemm peak (1 thread, 512^3, best of 5): $peak GFLOP/s"
lib=$("$bin" $N $d $T "$reps" $heads)
echo "$lib" | sed 's/^/  library  /'

cmdt=""
cpu=""
i=0
while [ $i -lt "$reps" ]; do
    t=$("$py" -c 'import resource, subprocess, sys, time
t0 = time.perf_counter()
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=False)
w = time.perf_counter() - t0
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.4f %.4f" % (w, r.ru_utime + r.ru_stime))' "$exe" condition --seq $N --head-dim $d --heads $heads --trials $T)
    cmdt="$cmdt ${t% *}"
    cpu="$cpu ${t#* }"
    i=$((i + 1))
done
cmdmed=$(echo $cmdt | tr ' ' '\n' | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')
cpumed=$(echo $cpu | tr ' ' '\n' | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')
echo "  command  runs:$cmdt s; median $cmdmed s ($exe condition, whole process)"
echo "  command  CPU time (user + sys):$cpu s; median $cpumed s"

np1=$(OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 "$py" "$here/condition_numpy.py" $N $d $T "$nreps" $heads)
echo "$np1" | sed 's/^/  numpy(1) /'
np2=$(OPENBLAS_NUM_THREADS=2 OMP_NUM_THREADS=2 "$py" "$here/condition_numpy.py" $N $d $T "$nreps" $heads)
echo "$np2" | sed 's/^/  numpy(2) /'

echo "$lib" | awk -v c="$cmdmed" -v pk="$peak" \
    -v n1="$(echo "$np1" | awk '/^median/ {print $2}')" \
    -v n2="$(echo "$np2" | awk '/^median/ {print $2}')" '
/^median/ {
    w = $2; s = $4; r = $6; v = $8; m = $10; g = $12; th = $16
    best = (n1 < n2) ? n1 : n2; bt = (n1 < n2) ? 1 : 2
    tot = s + r + v + m
    printf "\nNumPy, best setting (%d OpenBLAS thread%s): %.3f s\n", bt, bt == 1 ? "" : "s", best
    printf "attncheck (%d threads): library %.3f s, command %.3f s\n", th, w, c
    printf "ratio NumPy / attncheck command = %.1fx   (goal >= 12x)\n", best / c
    printf "ratio NumPy / attncheck library = %.1fx\n", best / w
    printf "achieved: %.2f GFLOP nominal in %.3f s = %.1f GFLOP/s on %d threads (%.1f per thread; dgemm peak %.1f per thread)\n", g, w, g / w, th, g / w / th, pk
    printf "where the time goes (thread-seconds): sampling %.3f (%.0f%%), reduction %.3f (%.0f%%), SVD/eigen %.3f (%.0f%%), MPFR %.3f\n", \
        s, 100 * s / tot, r, 100 * r / tot, v, 100 * v / tot, m
}'
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
