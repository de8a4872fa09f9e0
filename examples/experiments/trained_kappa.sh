#!/bin/sh
# trained_kappa.sh — paper 2 (Saratchandran et al. 2025), Fig. 2 at small
# scale: the condition number of the head outputs [A_1 ... A_h] against the
# number of heads, on the models trained by heads_lm.sh and listops_depth.sh
# (run those first), with `attncheck condition --model`: per checkpoint and
# layer the median kappa over held-out sequences, beside the same model at
# its initial weights, the Gaussian prediction for the same N and D, and
# attention heads with Gaussian weights of the same shapes.
#
# The paper's claim (Theorem 3.2, Fig. 2 for trained ViTs): more heads,
# lower kappa.
#
# Writes $OUT/runs.csv (one row per checkpoint and layer), $OUT/summary.csv
# (geometric mean, smallest and largest over the seeds) and
# $OUT/trained_kappa.png.
# Environment: LM (experiments-out/heads_lm), LO (experiments-out/listops_depth),
# BATCHES (4), TRIALS (10).
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
: "${OUT:=experiments-out/trained_kappa}" "${LM:=experiments-out/heads_lm}"
: "${LO:=experiments-out/listops_depth}" "${BATCHES:=4}" "${TRIALS:=10}"
[ "$SMOKE" = 1 ] && BATCHES=1 TRIALS=2
mkdir -p "$OUT/csv"
t0=$(now)
jobs="$OUT/jobs.txt"
: > "$jobs"
for exp in heads_lm listops_depth; do
    if [ $exp = heads_lm ]; then dir=$LM; else dir=$LO; fi
    for ck in "$dir"/ckpt/*; do
        [ -f "$ck/config.json" ] || continue
        name="$exp--$(basename "$ck")"
        [ -s "$OUT/csv/$name.csv" ] && continue # done (rerunning finishes the others)
        # exit status 2 = measured, nothing certified
        echo "nice $ATTNCHECK condition --model '$ck' --batches $BATCHES --trials $TRIALS --threads 1 --csv '$OUT/csv/$name.csv' > /dev/null; [ \$? = 2 ]" >> "$jobs"
    done
done
run_jobs "$jobs"
echo "experiment,kind,layers,heads,head_dim,D,seed,layer,N_median,kappa_median,kappa_q05,kappa_q95,init_median,prediction_median,gauss_attention_median" > "$OUT/runs.csv"
for f in "$OUT"/csv/*.csv; do
    b=$(basename "$f" .csv)
    exp=${b%%--*} run=${b#*--}
    # run names: KIND-hH-sS (heads_lm) or LL-hH-sS (listops_depth)
    kind=${run%%-*} seed=${run##*-s}
    case $kind in L*) layers=${kind#L}; kind=fixed ;; *) layers=1 ;; esac
    awk -F, -v e="$exp" -v k="$kind" -v L="$layers" -v s="$seed" 'NR > 1 {
        print e "," k "," L "," $2 "," $3 "," $4 "," s "," $1 "," $6 "," $9 "," $10 "," $11 "," $27 "," $21 "," $22 }' "$f" >> "$OUT/runs.csv"
done
# kappa spans orders of magnitude: geometric means over the seeds, and the
# smallest and largest seed
echo "experiment,kind,layers,heads,head_dim,D,layer,N_median,kappa_median_geomean,kappa_median_min,kappa_median_max,init_median_geomean,prediction_median,gauss_attention_median,seeds" > "$OUT/summary.csv"
awk -F, 'NR > 1 { k = $1 "," $2 "," $3 "," $4 "," $5 "," $6 "," $8; n[k]++; s[k] += log($10)
                   if (!(k in lo) || $10 < lo[k]) lo[k] = $10; if (!(k in hi) || $10 > hi[k]) hi[k] = $10
                   i[k] += log($13); N[k] = $9; p[k] = $14; g[k] += log($15) }
         END { for (k in n) printf "%s,%s,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%d\n", k, N[k], exp(s[k] / n[k]),
                                   lo[k], hi[k], exp(i[k] / n[k]), p[k], exp(g[k] / n[k]), n[k] }' "$OUT/runs.csv" |
    sort -t, -k1,1 -k2,2 -k3,3n -k4,4n -k7,7n >> "$OUT/summary.csv"
sel() { awk -F, -v e="$1" -v k="$2" -v L="$3" -v l="$4" 'NR > 1 && $1 == e && $2 == k && $3 == L && $7 == l' "$OUT/summary.csv" | sort -t, -k4,4n; }
sel heads_lm standard 1 0 > "$OUT/lm_standard.dat"
sel heads_lm fixed 1 0 > "$OUT/lm_fixed.dat"
sel listops_depth fixed 1 0 > "$OUT/lo_L1.dat"
sel listops_depth fixed 2 0 > "$OUT/lo_L2_layer0.dat"
sel listops_depth fixed 2 1 > "$OUT/lo_L2_layer1.dat"
gnuplot <<GP
set terminal pngcairo size 1200,520
set output '$OUT/trained_kappa.png'
set datafile separator ','
set multiplot layout 1,2 title 'Paper 2, Fig. 2 at small scale: median {/Symbol k}([A_1 ... A_h]) over held-out sequences; geometric mean of 3 seeds, bars: smallest to largest seed'
set logscale xy
set xlabel 'heads h'
set ylabel 'condition number {/Symbol k}'
set grid
set key below maxrows 4 font ',9'
set title 'character LM (heads\\_lm.sh), N = seq = 64, 1 layer'
set xrange [0.8:20]
set xtics (1, 2, 4, 8, 16)
plot '$OUT/lm_standard.dat' using 4:9:10:11 with yerrorlines lw 2 lc rgb '#08519c' title 'standard C/h: trained', \
     '$OUT/lm_standard.dat' using 4:12 with linespoints dt 2 lc rgb '#08519c' title 'standard: initial weights', \
     '$OUT/lm_standard.dat' using 4:13 with linespoints pt 2 lc rgb '#2ca02c' title 'standard: Gaussian prediction (D = C)', \
     '$OUT/lm_fixed.dat' using 4:9:10:11 with yerrorlines lw 2 lc rgb '#d62728' title 'fixed dp: trained', \
     '$OUT/lm_fixed.dat' using 4:12 with linespoints dt 2 lc rgb '#d62728' title 'fixed: initial weights', \
     '$OUT/lm_fixed.dat' using 4:13 with linespoints pt 2 lc rgb '#98df8a' title 'fixed: Gaussian prediction (D = h dp)', \
     '$OUT/lm_fixed.dat' using 4:14 with linespoints pt 4 lc rgb '#7f7f7f' title 'fixed: Gaussian weights'
set title 'ListOps (listops\\_depth.sh), heads of size C/2, N = real tokens'
set xrange [1.6:10]
set xtics (2, 4, 8)
plot '$OUT/lo_L1.dat' using 4:9:10:11 with yerrorlines lw 2 lc rgb '#08519c' title '1 layer: trained', \
     '$OUT/lo_L1.dat' using 4:12 with linespoints dt 2 lc rgb '#08519c' title '1 layer: initial weights', \
     '$OUT/lo_L2_layer0.dat' using 4:9:10:11 with yerrorlines lw 2 lc rgb '#d62728' title '2 layers, layer 0: trained', \
     '$OUT/lo_L2_layer1.dat' using 4:9:10:11 with yerrorlines lw 2 lc rgb '#ff7f0e' title '2 layers, layer 1: trained', \
     '$OUT/lo_L1.dat' using 4:13 with linespoints pt 2 lc rgb '#2ca02c' title 'Gaussian prediction (median N)', \
     '$OUT/lo_L1.dat' using 4:14 with linespoints pt 4 lc rgb '#7f7f7f' title 'Gaussian weights'
unset multiplot
GP
t1=$(now)
awk -v a="$t0" -v b="$t1" 'BEGIN { printf "trained_kappa: wall time %.1f s\n", b - a }' | tee "$OUT/wall.txt"
cat "$OUT/summary.csv"
