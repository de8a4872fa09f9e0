#!/bin/sh
# run_all.sh — the three experiments of doc/experiments.md in order
# (`make experiments`): heads_lm.sh, listops_depth.sh, trained_kappa.sh.
# Environment: BASE (output directory, default experiments-out), JOBS,
# SMOKE, ATTNCHECK (see lib.sh).
here=$(cd "$(dirname "$0")" && pwd)
set -eu
: "${BASE:=experiments-out}"
OUT="$BASE/heads_lm" sh "$here/heads_lm.sh"
OUT="$BASE/listops_depth" sh "$here/listops_depth.sh"
OUT="$BASE/trained_kappa" LM="$BASE/heads_lm" LO="$BASE/listops_depth" sh "$here/trained_kappa.sh"
echo "plots: $BASE/heads_lm/heads_lm.png $BASE/listops_depth/listops_depth.png $BASE/trained_kappa/trained_kappa.png"
