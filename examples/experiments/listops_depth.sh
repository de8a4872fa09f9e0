#!/bin/sh
# listops_depth.sh — paper 2 (Saratchandran et al. 2025), Table 3 at small
# scale: ListOps (Long Range Arena, generated) with (layers, heads) = (2, 2)
# against (1, 4) and neighbours (1, 2), (1, 8), at matched parameter
# counts.
#
# Every model has width C and heads of the fixed size S = C/2 (so (2, 2) is
# the standard two-layer model); the feed-forward width is chosen per model
# so that the parameter counts agree within 1% (printed).  Padding is
# masked in attention and pooling (the CLS token is pooled).  Accuracy on
# EVAL_BATCHES x BATCH held-out examples per run (4800 by default: the 95%
# interval of one accuracy near 0.4 is +-1.4 points), mean and standard
# deviation over the seeds.
#
# The paper's claim: (1, 4) matches or beats (2, 2) at the same parameter
# count (69.9 vs 69.8 on LRA ListOps, Nystromformer).
#
# Writes $OUT/runs.csv, $OUT/summary.csv, $OUT/listops_depth.png and one
# checkpoint per run under $OUT/ckpt/ (used by trained_kappa.sh).
# Sizes (environment): WIDTH (32), SEQ (64), BATCH (32), STEPS (400),
# LR (2e-3), SEEDS ("1 2 3"), EVAL_BATCHES (150), CONFIGS (layers:heads:ffn-mult;
# default "2:2:4 1:4:8 1:2:10 1:8:4", matched within 1% at width 32).
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
: "${OUT:=experiments-out/listops_depth}"
if [ "$SMOKE" = 1 ]; then
    : "${WIDTH:=16}" "${SEQ:=16}" "${BATCH:=4}" "${STEPS:=4}" "${SEEDS:=1 2}" "${EVAL_BATCHES:=2}"
    : "${CONFIGS:=2:2:4 1:4:8}"
fi
: "${WIDTH:=32}" "${SEQ:=64}" "${BATCH:=32}" "${STEPS:=400}" "${LR:=2e-3}" "${SEEDS:=1 2 3}"
: "${EVAL_BATCHES:=150}" "${CONFIGS:=2:2:4 1:4:8 1:2:10 1:8:4}"
S=$((WIDTH / 2))
mkdir -p "$OUT/ckpt" "$OUT/log"
t0=$(now)
jobs="$OUT/jobs.txt"
: > "$jobs"
for seed in $SEEDS; do
    for cfg in $CONFIGS; do
        IFS=: read -r L H M <<CFG
$cfg
CFG
        name="L${L}-h${H}-s$seed"
        grep -q '"eval_accuracy"' "$OUT/log/$name.json" 2>/dev/null && continue
        echo "nice $ATTNCHECK train --task listops --layers $L --heads $H --attention fixed --head-dim $S --width $WIDTH --ffn-mult $M --seq $SEQ --batch $BATCH --steps $STEPS --lr $LR --eval-every $STEPS --eval-batches $EVAL_BATCHES --seed $seed --threads 1 --quiet --json --save '$OUT/ckpt/$name' > '$OUT/log/$name.json'" >> "$jobs"
    done
done
run_jobs "$jobs"
echo "layers,heads,head_dim,ffn,seed,params,eval_examples,accuracy,ci95,eval_loss,seconds" > "$OUT/runs.csv"
for seed in $SEEDS; do
    for cfg in $CONFIGS; do
        IFS=: read -r L H M <<CFG
$cfg
CFG
        f="$OUT/log/L${L}-h${H}-s$seed.json"
        acc=$(json_num eval_accuracy "$f")
        n=$((EVAL_BATCHES * BATCH))
        ci=$(awk -v p="$acc" -v n="$n" 'BEGIN { printf "%.4f", 1.96 * sqrt(p * (1 - p) / n) }')
        echo "$L,$H,$S,$((M * WIDTH)),$seed,$(json_num params "$f"),$n,$acc,$ci,$(json_num eval_loss "$f"),$(json_num seconds "$f")" >> "$OUT/runs.csv"
    done
done
echo "config,layers,heads,params,accuracy_mean,accuracy_sd,seeds,ci95_one_run" > "$OUT/summary.csv"
i=0
for cfg in $CONFIGS; do
    IFS=: read -r L H M <<CFG
$cfg
CFG
    i=$((i + 1))
    stats=$(awk -F, -v l="$L" -v h="$H" '$1 == l && $2 == h { print $8 }' "$OUT/runs.csv" | mean_sd)
    rest=$(awk -F, -v l="$L" -v h="$H" '$1 == l && $2 == h { p = $6; c += $9; n++ } END { printf "%s %.4f", p, c / n }' "$OUT/runs.csv")
    set -- $stats $rest
    echo "$i,$L,$H,$4,$1,$2,$3,$5" >> "$OUT/summary.csv"
done
labels=$(awk -F, 'NR > 1 { printf "%s\"(%s,%s)\" %s", sep, $2, $3, $1; sep = ", " }' "$OUT/summary.csv")
gnuplot <<GP
set terminal pngcairo size 800,520
set output '$OUT/listops_depth.png'
set datafile separator ','
set xtics ($labels)
set xrange [0.5:$((i)).5]
set xlabel '(layers, heads), heads of size $S, width $WIDTH, parameters matched (FFN width)'
set ylabel 'held-out accuracy'
set title 'Paper 2, Table 3 at small scale: ListOps, $STEPS steps, $((EVAL_BATCHES * BATCH)) eval examples per run'
set key top left
set grid ytics
plot '$OUT/runs.csv' using (0):(NaN) notitle, \
     '$OUT/summary.csv' using 1:5:6 with yerrorbars pt 7 ps 1.5 lw 2 title 'mean +- sd over seeds', \
     '$OUT/summary.csv' using 1:5:8 with yerrorbars pt 0 lw 1 lc rgb '#999999' title '95% interval of one run (binomial)'
GP
t1=$(now)
awk -v a="$t0" -v b="$t1" 'BEGIN { printf "listops_depth: wall time %.1f s\n", b - a }' | tee "$OUT/wall.txt"
cat "$OUT/summary.csv"
