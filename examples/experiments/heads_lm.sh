#!/bin/sh
# heads_lm.sh — paper 1 (Bhojanapalli et al. 2020), Fig. 1/3 at small scale:
# held-out loss of a character LM against the number of heads h at fixed
# width C, with the standard head size C/h and with a fixed head size dp.
#
# The paper's claim: with the standard head size the loss gets worse as h
# grows (the head size C/h falls below the sequence length: the low-rank
# bottleneck of its Theorem 1), with a fixed head size it does not.
#
# Writes $OUT/runs.csv (one row per training run), $OUT/summary.csv (mean and
# standard deviation over the seeds), $OUT/heads_lm.png, and one checkpoint
# per run under $OUT/ckpt/ (used by trained_kappa.sh).
# Sizes (environment): WIDTH (64), DP (32), HEADS ("1 2 4 8 16"), LAYERS (1),
# SEQ (64), BATCH (16), STEPS (600), LR (3e-3), SEEDS ("1 2 3"), EVAL (16
# batches), TEXT (data/gpl-3.txt beside this script).
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
: "${OUT:=experiments-out/heads_lm}"
if [ "$SMOKE" = 1 ]; then
    : "${WIDTH:=16}" "${DP:=8}" "${HEADS:=1 2 4}" "${STEPS:=6}" "${SEEDS:=1 2}" "${SEQ:=16}"
    : "${BATCH:=4}" "${EVAL:=2}"
fi
: "${WIDTH:=64}" "${DP:=32}" "${HEADS:=1 2 4 8 16}" "${LAYERS:=1}" "${SEQ:=64}" "${BATCH:=16}"
: "${STEPS:=600}" "${LR:=3e-3}" "${SEEDS:=1 2 3}" "${EVAL:=16}" "${TEXT:=$here/data/gpl-3.txt}"
mkdir -p "$OUT/ckpt" "$OUT/log"
t0=$(now)
jobs="$OUT/jobs.txt"
: > "$jobs"
for seed in $SEEDS; do
    for h in $HEADS; do
        for kind in standard fixed; do
            name="$kind-h$h-s$seed"
            # a complete run is kept (rerunning the script finishes the others)
            grep -q '"eval_loss"' "$OUT/log/$name.json" 2>/dev/null && continue
            hd=""
            [ "$kind" = fixed ] && hd="--head-dim $DP"
            echo "nice $ATTNCHECK train --task text --text '$TEXT' --layers $LAYERS --width $WIDTH --heads $h --attention $kind $hd --seq $SEQ --batch $BATCH --steps $STEPS --lr $LR --eval-batches $EVAL --seed $seed --threads 1 --quiet --json --save '$OUT/ckpt/$name' > '$OUT/log/$name.json'" >> "$jobs"
        done
    done
done
run_jobs "$jobs"
echo "kind,heads,head_dim,seed,params,val_loss,val_accuracy,seconds" > "$OUT/runs.csv"
for seed in $SEEDS; do
    for h in $HEADS; do
        for kind in standard fixed; do
            f="$OUT/log/$kind-h$h-s$seed.json"
            if [ "$kind" = fixed ]; then hd=$DP; else hd=$((WIDTH / h)); fi
            echo "$kind,$h,$hd,$seed,$(json_num params "$f"),$(json_num eval_loss "$f"),$(json_num eval_accuracy "$f"),$(json_num seconds "$f")" >> "$OUT/runs.csv"
        done
    done
done
echo "kind,heads,head_dim,params,val_loss_mean,val_loss_sd,seeds" > "$OUT/summary.csv"
for kind in standard fixed; do
    for h in $HEADS; do
        stats=$(awk -F, -v k="$kind" -v h="$h" '$1 == k && $2 == h { print $6 }' "$OUT/runs.csv" | mean_sd)
        row=$(awk -F, -v k="$kind" -v h="$h" '$1 == k && $2 == h { print $3 "," $5; exit }' "$OUT/runs.csv")
        set -- $stats
        echo "$kind,$h,$row,$1,$2,$3" >> "$OUT/summary.csv"
    done
done
gnuplot <<GP
set terminal pngcairo size 800,520
set output '$OUT/heads_lm.png'
set datafile separator ','
set logscale x 2
set xrange [0.8:20]
set xlabel 'heads h (width C = $WIDTH fixed)'
set ylabel 'held-out loss (nats/char), mean +- sd over seeds'
set title 'Paper 1, Fig. 1/3 at small scale: character LM, $LAYERS layer(s), seq $SEQ, $STEPS steps'
set key top left
set grid
plot '$OUT/summary.csv' using (strcol(1) eq 'standard' ? \$2 : NaN):5:6 with yerrorlines lw 2 title 'standard head size C/h', \
     '$OUT/summary.csv' using (strcol(1) eq 'fixed' ? \$2 : NaN):5:6 with yerrorlines lw 2 title 'fixed head size dp = $DP'
GP
t1=$(now)
awk -v a="$t0" -v b="$t1" 'BEGIN { printf "heads_lm: wall time %.1f s\n", b - a }' | tee "$OUT/wall.txt"
cat "$OUT/summary.csv"
