#!/bin/sh
# experiments_smoke.sh — `make experiments` at tiny sizes (SMOKE=1,
# seconds): every script runs, every CSV has its header and one row per
# run / configuration / layer, every plot is written.
# Exit status: 0 pass, 1 failure, 77 skipped (no gnuplot), 99 setup error.
: "${ATTNCHECK:=./attncheck}"
: "${top_srcdir:=.}"
command -v gnuplot >/dev/null 2>&1 || { echo "experiments_smoke: no gnuplot, skipping" >&2; exit 77; }
fail=0
err() { printf 'experiments_smoke: %s\n' "$*" >&2; fail=1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/experiments_smoke.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM HUP
case "$ATTNCHECK" in /*) ;; *) ATTNCHECK="$(pwd)/$ATTNCHECK" ;; esac
export ATTNCHECK
if ! SMOKE=1 BASE="$work/out" sh "$top_srcdir/examples/experiments/run_all.sh" > "$work/log" 2>&1; then
    err "run_all.sh failed:"; cat "$work/log" >&2; exit 1
fi
# lines FILE N HEADER-START: N lines (header included), the header as given
lines() {
    [ -f "$1" ] || { err "$1 missing"; return; }
    n=$(wc -l < "$1")
    [ "$n" = "$2" ] || err "$1: $n lines, expected $2"
    head -n 1 "$1" | grep -q "^$3" || err "$1: header is not '$3...'"
    # no empty field (a failed run leaves one)
    if awk -F, 'NR > 1 { for (i = 1; i <= NF; i++) if ($i == "") bad = 1 } END { exit !bad }' "$1"; then
        err "$1 has empty fields"
    fi
}
o="$work/out"
# SMOKE sizes: heads 1 2 4 x {standard, fixed} x seeds 1 2; ListOps 2 configs x 2 seeds
lines "$o/heads_lm/runs.csv" 13 "kind,heads,head_dim,seed,params,val_loss"
lines "$o/heads_lm/summary.csv" 7 "kind,heads,head_dim,params,val_loss_mean,val_loss_sd,seeds"
lines "$o/listops_depth/runs.csv" 5 "layers,heads,head_dim,ffn,seed,params,eval_examples,accuracy,ci95"
lines "$o/listops_depth/summary.csv" 3 "config,layers,heads,params,accuracy_mean,accuracy_sd,seeds"
# trained_kappa: 12 one-layer LM runs + 2 x (2 + 1) ListOps layers = 18 rows
lines "$o/trained_kappa/runs.csv" 19 "experiment,kind,layers,heads,head_dim,D,seed,layer,N_median,kappa_median"
# summary: LM 6 (kind, h) + ListOps 3 (config, layer) = 9 rows
lines "$o/trained_kappa/summary.csv" 10 "experiment,kind,layers,heads,head_dim,D,layer,N_median,kappa_median_geomean"
for p in heads_lm/heads_lm.png listops_depth/listops_depth.png trained_kappa/trained_kappa.png; do
    [ -s "$o/$p" ] || err "$p was not written"
    head -c 8 "$o/$p" | od -An -c | grep -q 'P   N   G' || err "$p is not a PNG"
done
exit $fail
