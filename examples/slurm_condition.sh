#!/bin/sh
# A condition sweep as a Slurm job array: one shard per array task, merged
# afterwards into exactly the result of the whole sweep.
#
#   sbatch --array=1-8 examples/slurm_condition.sh OUT --heads 1,2,4,8,16 --trials 10000
#   attncheck merge OUT/shard-*-of-8.json --json > result.json
#
# The array must be numbered 1..K (K = SLURM_ARRAY_TASK_COUNT).  Every task
# writes OUT/shard-I-of-K.json atomically; a failed task leaves no file, and
# merge names the shard that is missing.  Threads follow --cpus-per-task
# (the numbers do not depend on them).
#SBATCH --job-name=attncheck-condition
#SBATCH --cpus-per-task=2
#SBATCH --output=%x-%A_%a.out
set -eu
out=${1:?usage: slurm_condition.sh OUTDIR [condition options]}
shift
i=${SLURM_ARRAY_TASK_ID:?not a Slurm array task (submit with sbatch --array=1-K)}
k=${SLURM_ARRAY_TASK_COUNT:?not a Slurm array task (submit with sbatch --array=1-K)}
mkdir -p "$out"
exec "${ATTNCHECK:-attncheck}" condition "$@" --threads "${SLURM_CPUS_PER_TASK:-1}" \
    --shard "$i/$k" --samples-out "$out/shard-$i-of-$k.json"
