#!/bin/sh
# Cross-check fit-p's masked loss and gradient against PyTorch in float64
# (doc/mathematics.md §3.8): for seeded instances of every class of mask
# (none, causal, window, padding, any boolean pattern, causal + padding),
# with and without bias (X with a row of ones appended), n = 1 .. 12 and
# non-square X, tests/fitp_mask_tool trains the masked head a few steps and
# dumps its weights, the batch with its mask (batch.keep.npy), the loss and
# the gradients; tests/train_torch.py rebuilds the head in PyTorch from
# those files alone (softmax over the visible keys by masked_fill(-inf),
# the loss on the visible entries) and compares (tolerance derived there).
# Seed: ATTNCHECK_TEST_SEED (default 20261121), printed on failure.
# Exit status: 0 pass, 1 mismatch, 77 skipped (no python3, numpy or torch),
# 99 setup error.
PY=${PYTHON3:-/usr/bin/python3}
: "${top_srcdir:=.}"
TOOL=${FITP_MASK_TOOL:-${top_builddir:-.}/tests/fitp_mask_tool}
SEED=${ATTNCHECK_TEST_SEED:-20261121}

if ! "$PY" -c 'import numpy, torch' >/dev/null 2>&1; then
    echo "fitp_mask_torch: numpy or torch is not installed for $PY, skipping" >&2
    exit 77
fi
test -x "$TOOL" || { echo "fitp_mask_torch: $TOOL not built" >&2; exit 99; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fitp_mask_torch.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM HUP

# the instances: X, P (masked softmax of random logits, column-stochastic on
# the mask), OMEGA (row = key, column = query), and the arguments of the tool
"$PY" - "$work" "$SEED" <<'PYEOF' >"$work/cases" || exit 99
import numpy as np, os, sys
work, seed = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(seed)
k = 0
for kind in ("none", "causal", "window", "padding", "boolean", "causal+padding"):
    for bias in (0, 1):
        for (n, d, dk) in ((1, 1, 1), (5, 3, 2), (8, 4, 3), (12, 6, 2)):
            i, j = np.indices((n, n))
            om = np.ones((n, n), bool)
            if "causal" in kind:
                om &= i <= j
            if kind == "window":
                om &= abs(i - j) < 3
            if "padding" in kind:
                pad = rng.random(n) < 0.7
                pad[0] = True
                om &= pad[:, None]
            if kind == "boolean":
                om = (rng.random((n, n)) < 0.5) | (i == j)
            X = rng.standard_normal((d, n))
            if bias:
                X = np.vstack([X, np.ones((1, n))])
            Z = rng.standard_normal((n, n))
            Z = np.where(om, Z, -np.inf)
            P = np.exp(Z - Z.max(axis=0))
            P /= P.sum(axis=0)
            base = os.path.join(work, "c%d" % k)
            np.save(base + "X.npy", X)
            np.save(base + "P.npy", P)
            np.save(base + "O.npy", om.astype(float))
            print(base, dk, 1 + k, 3, kind, bias, n)
            k += 1
PYEOF
dirs=""
while read -r base dk s steps kind bias n; do
    if ! "$TOOL" "${base}X.npy" "${base}P.npy" "${base}O.npy" "$dk" "$s" "$steps" "${base}.dump" \
        2>"$work/err"; then
        echo "fitp_mask_torch: the tool failed on $kind mask, bias $bias, n $n (seed $SEED):" >&2
        cat "$work/err" >&2
        exit 1
    fi
    dirs="$dirs ${base}.dump"
done <"$work/cases"
# shellcheck disable=SC2086
"$PY" "$top_srcdir/tests/train_torch.py" $dirs >"$work/out" 2>&1
st=$?
tail -1 "$work/out"
if [ $st -ne 0 ]; then
    cat "$work/out" >&2
    echo "fitp_mask_torch: MISMATCH (seed $SEED)" >&2
    exit 1
fi
exit 0
