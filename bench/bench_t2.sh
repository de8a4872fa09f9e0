#!/bin/sh
# bench_t2.sh — Theorem 2 benchmark: the C forward pass of f_W and g_V
# against the same computation in NumPy, and certified separations per
# second, in one run.  Run by `make bench` (needs bench/bench_t2 built).
#
# Both sides use the same OpenBLAS with the same kernels (OPENBLAS_CORETYPE as
# chosen by attncheck, doc/mathematics.md §7) and the same thread count, set through
# OPENBLAS_NUM_THREADS = 1 and 2.  The C driver and the NumPy peer run back to
# back, REPS times (default 5), so that each repetition gives a paired ratio
# under the same machine load.  Reported per thread count: the median over
# the repetitions of each side's time (itself a median of 7 batches) and the
# median of the paired ratios NumPy/C with their range.  The machine may be
# shared: look at the spread, and re-run on a quiet machine for final numbers.
# The best-of table also gives each side's rate on the flops of the layer,
# 2 n h s (4 d + 2 n), which no grouping of the products lowers
# (doc/mathematics.md §4.11): against the machine's FMA peak this bounds the
# ratio (for g_V at d = 256, n = 64: 151 Mflop, 1.3 ms at 116 GFLOP/s on
# the 2 cores of the development machine, so NumPy's 2.5 ms allows < 2x).
set -eu
: "${PYTHON3:=/usr/bin/python3}"
: "${REPS:=5}"
bin=${BENCH_BIN:-./bench/bench_t2}
[ -x "$bin" ] || { echo "bench_t2.sh: $bin not built (make bench)" >&2; exit 1; }
here=$(dirname "$0")
work=$(mktemp -d "${TMPDIR:-/tmp}/bench_t2.XXXXXX")
trap 'rm -rf "$work"' EXIT

have_np=0
"$PYTHON3" -c 'import numpy' 2>/dev/null && have_np=1 ||
    echo "bench_t2.sh: numpy not available for $PYTHON3; C timings only" >&2
: >"$work/c.txt"
: >"$work/np.txt"
rep=1
while [ "$rep" -le "$REPS" ]; do
    for t in 1 2; do
        # certificates on the first repetition only (they are not compared)
        if [ "$rep" = 1 ]; then only=""; else only="--forward-only"; fi
        OPENBLAS_NUM_THREADS=$t OMP_NUM_THREADS=$t "$bin" "$work" $only >>"$work/c.txt"
        core=$(awk '$1 == "blas_core" { c = $2 } END { print c }' "$work/c.txt")
        case "$core" in Prescott|generic|"") ct="" ;; *) ct=$core ;; esac
        if [ $have_np = 1 ]; then
            env ${ct:+OPENBLAS_CORETYPE=$ct} OPENBLAS_NUM_THREADS=$t OMP_NUM_THREADS=$t \
                "$PYTHON3" "$here/bench_t2.py" "$work" | sed "s/\$/ $t/" >>"$work/np.txt"
        fi
    done
    rep=$((rep + 1))
done

awk '
function median(list,    n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++) { t = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
FNR == NR {
    if ($1 == "blas_core") core = $2
    else if ($1 == "config") {
        cfg[$2] = sprintf("d=%s h=%s dp=%s n=%s", $4, $6, $8, $10); if ($2 + 1 > ncfg) ncfg = $2 + 1
        # flops of one forward pass, 2 n h s (4 d + 2 n) with head size s = d/h (f_W) or dp (g_V)
        # (doc/mathematics.md §4.11: no grouping of the products needs fewer)
        fl["f" SUBSEP $2] = 2 * $10 * $4 * (4 * $4 + 2 * $10)
        fl["g" SUBSEP $2] = 2 * $10 * $6 * $8 * (4 * $4 + 2 * $10)
    }
    else if ($1 ~ /^forward_|^certify|^construct_certify/) {
        key = $1 SUBSEP $2 SUBSEP $3; c[key] = c[key] " " $4; th[$3] = 1
        if ($1 ~ /^forward_/) { cn[key]++; crep[key SUBSEP cn[key]] = $4 }
        if ($1 ~ /certify/) fails[$1 SUBSEP $2] += $5
    }
    next
}
$1 ~ /^np_forward_/ {
    key = $1 SUBSEP $2 SUBSEP $4; np[key] = np[key] " " $3; th[$4] = 1
    nn[key]++; nrep[key SUBSEP nn[key]] = $3
}
$1 ~ /^np_maxdiff_/ { diff[$1 SUBSEP $2] = $3 }
function best(arr, name, k,    t, m, b, bt) {
    b = ""; bt = ""
    for (t in th) if ((name SUBSEP k SUBSEP t) in arr) {
        m = median(substr(arr[name SUBSEP k SUBSEP t], 2))
        if (b == "" || m < b) { b = m; bt = t }
    }
    bestt = bt
    return b
}
END {
    printf "Theorem 2 benchmark (BLAS kernels %s).  Forward pass: C and NumPy run back to back at the\n", core
    printf "same BLAS thread count; each time is the median over the runs of a median of 7 batches;\n"
    printf "speedup = median of the paired per-run ratios NumPy/C (range in brackets).\n\n"
    printf "%-22s %-4s %3s %11s %11s %8s %13s %13s\n", "config", "", "thr", "C", "NumPy", "speedup",
           "(range, runs)", "|C-NumPy|/|Y|"
    bad = 0; ncmp = 0
    for (k = 0; k < ncfg; k++) for (l = 0; l < 2; l++) for (t = 1; t <= 2; t++) {
        L = l ? "g" : "f"
        ck = "forward_" L SUBSEP k SUBSEP t; nk = "np_forward_" L SUBSEP k SUBSEP t
        if (!(ck in c)) continue
        cf = median(substr(c[ck], 2))
        printf "%-22s %-4s %3d %8.1f us", (t == 1 ? cfg[k] : ""), (t == 1 ? (l ? "g_V" : "f_W") : ""), t, cf * 1e6
        if (nk in np) {
            nf = median(substr(np[nk], 2))
            R = cn[ck] < nn[nk] ? cn[ck] : nn[nk]; rl = ""; lo = ""; hi = ""
            for (r = 1; r <= R; r++) {
                q = nrep[nk SUBSEP r] / crep[ck SUBSEP r]; rl = rl " " q
                if (lo == "" || q < lo) lo = q
                if (hi == "" || q > hi) hi = q
            }
            ratio = median(substr(rl, 2))
            printf " %8.1f us %7.2fx  (%.2f-%.2f, %d) %13s\n", nf * 1e6, ratio, lo, hi, R,
                   diff["np_maxdiff_" L SUBSEP k]
            ncmp++; if (ratio <= 1) bad++
        } else printf " %11s %8s\n", "-", "-"
    }
    printf "\n%-22s %30s %34s\n", "config", "certificates/s (fixed X)", "construct + certify/s (fresh X)"
    for (k = 0; k < ncfg; k++) {
        a = best(c, "certify", k); at = bestt; b = best(c, "construct_certify", k); bt2 = bestt
        printf "%-22s %14.0f (%.3f ms) [%s] %18.0f (%.3f ms) [%s]%s\n", cfg[k], 1 / a, a * 1e3, at, 1 / b, b * 1e3, bt2,
            (fails["certify" SUBSEP k] + fails["construct_certify" SUBSEP k]) ? "  SOME NOT PROVED" : ""
    }
    printf "\nC forward faster than NumPy (median paired ratio > 1) in %d of %d comparisons (target: all)\n", ncmp - bad, ncmp
    # each side at its own best thread count (the best setting of the peer)
    printf "\n%-22s %-4s %16s %16s %8s %20s\n", "best of 1, 2 threads", "", "C", "NumPy", "ratio", "GFLOP/s C / NumPy"
    nbest = 0; nmet = 0
    for (k = 0; k < ncfg; k++) for (l = 0; l < 2; l++) {
        L = l ? "g" : "f"; cb = ""; nb = ""
        for (t = 1; t <= 2; t++) {
            ck = "forward_" L SUBSEP k SUBSEP t; nk = "np_forward_" L SUBSEP k SUBSEP t
            if (ck in c) { m = median(substr(c[ck], 2)); if (cb == "" || m < cb) { cb = m; cbt = t } }
            if (nk in np) { m = median(substr(np[nk], 2)); if (nb == "" || m < nb) { nb = m; nbt = t } }
        }
        if (cb != "" && nb != "") {
            printf "%-22s %-4s %8.1f us [%d] %8.1f us [%d] %7.2fx %9.1f / %-9.1f\n", (l ? "" : cfg[k]), (l ? "g_V" : "f_W"), cb * 1e6, cbt, nb * 1e6, nbt, nb / cb,
                   fl[L SUBSEP k] / cb / 1e9, fl[L SUBSEP k] / nb / 1e9
            nbest++; if (nb / cb >= 2) nmet++
        }
    }
    if (nbest) printf "NumPy/C >= 2x, best vs best, in %d of %d (target: all)\n", nmet, nbest
}' "$work/c.txt" "$work/np.txt"
