# lib.sh — shared by the experiment scripts of examples/experiments/ (sourced).
#
# Environment:
#   ATTNCHECK  the program (default: ./attncheck, else attncheck in PATH)
#   OUT        output directory (default: experiments-out/NAME)
#   JOBS       training runs in parallel, one thread each (default 2)
#   SMOKE=1    tiny sizes (seconds): for `make check`, not for conclusions
set -eu
if [ -z "${ATTNCHECK:-}" ]; then
    if [ -x ./attncheck ]; then ATTNCHECK=./attncheck; else ATTNCHECK=attncheck; fi
fi
case "$ATTNCHECK" in /*) ;; */*) ATTNCHECK="$(pwd)/$ATTNCHECK" ;; esac
: "${JOBS:=2}"
: "${SMOKE:=0}"
export OPENBLAS_CORETYPE="${OPENBLAS_CORETYPE:-Haswell}" OMP_NUM_THREADS=1

# json_num KEY FILE: the first top-level number "KEY": value of an
# `attncheck ... --json` output.
json_num() { sed -n "s/^  \"$1\": \\([-0-9.eE+naif]*\\),\\{0,1\\}\$/\\1/p" "$2" | head -n 1; }

# mean_sd: reads one number per line, prints "mean sd n" (sd with n - 1).
mean_sd() {
    awk '{ s += $1; q += $1 * $1; n++ }
         END { m = s / n; v = n > 1 ? (q - n * m * m) / (n - 1) : 0; if (v < 0) v = 0;
               printf "%.6g %.6g %d\n", m, sqrt(v), n }'
}

# run_jobs FILE: runs each line of FILE (a shell command) with JOBS in parallel.
run_jobs() { tr '\n' '\0' < "$1" | xargs -0 -P "$JOBS" -I{} sh -c '{}'; }

now() { date +%s.%N; }
