#!/bin/sh
# Cross-check `attncheck train` against PyTorch in float64: for a set of
# models covering every architecture, head, task, LayerNorm placement and
# attention kind, `attncheck train --dump-grads` writes the weights, a batch,
# the loss and every gradient; train_torch.py rebuilds each model in PyTorch
# from those files alone and compares the loss and all gradients (tolerance
# derived in train_torch.py).
# Exit status: 0 pass, 1 mismatch, 77 skipped (no python3, numpy or torch),
# 99 setup error.
PY=${PYTHON3:-/usr/bin/python3}
: "${ATTNCHECK:=./attncheck}"
: "${top_srcdir:=.}"

if ! command -v "$PY" >/dev/null 2>&1; then
    echo "train_torch: $PY not found, skipping" >&2
    exit 77
fi
if ! "$PY" -c 'import numpy, torch' >/dev/null 2>&1; then
    echo "train_torch: numpy or torch is not installed for $PY, skipping" >&2
    exit 77
fi
script="$top_srcdir/tests/train_torch.py"
test -f "$script" || { echo "train_torch: $script not found" >&2; exit 99; }

work=$(mktemp -d "${TMPDIR:-/tmp}/train_torch.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM HUP
cd "$work" || exit 99

# data: a text (the README), a teacher's weights (fixed heads) and X/Y pairs
cp "$top_srcdir/README" text.txt || exit 99
"$PY" - <<'PYEOF' || exit 99
import numpy as np, os
rng = np.random.default_rng(5)
os.makedirs("fixed", exist_ok=True)
h, s, d = 3, 4, 6
for n in ("Wq", "Wk", "Wv"):
    np.save("fixed/%s.npy" % n, rng.standard_normal((h, s, d)))
np.save("fixed/Wo.npy", rng.standard_normal((h, d, s)) / 3)
os.makedirs("pairs", exist_ok=True)
X = rng.standard_normal((20, 5, 7))
np.save("pairs/X.npy", X)
np.save("pairs/Y.npy", np.tanh(X[:, :2, :] * 2))
PYEOF

A="$ATTNCHECK"
run() {
    name=$1; shift
    if ! "$A" train "$@" --dump-grads "$name" >"$name.out" 2>&1; then
        echo "train_torch: attncheck train $* failed:" >&2
        cat "$name.out" >&2
        exit 1
    fi
}
T="--task text --text text.txt --seq 12 --batch 3 --width 16 --heads 2 --init-std 0.3"
run text-pre $T
run text-post $T --ln post
run text-fixed $T --heads 4 --attention fixed --head-dim 8 --no-causal --layers 3
run text-b2 --task text --text text.txt --seq 64 --batch 8 --width 64 --heads 4
# heads at least as wide as the model: the merged block (attn_merged.c)
run text-merged $T --heads 3 --attention fixed --head-dim 16
run text-merged-post $T --attention fixed --head-dim 24 --ln post --no-causal
run text-onehead $T --heads 1
L="--task listops --seq 32 --batch 4 --width 16 --heads 2 --init-std 0.3"
run listops-first $L
run listops-mean $L --pool mean --ln post
run listops-last $L --pool last --causal --attention fixed --head-dim 5
run listops-merged $L --pool mean --attention fixed --head-dim 20
run teacher-std --task teacher --teacher fixed --batch 3 --heads 3
run teacher-fixed --task teacher --teacher fixed --batch 3 --attention fixed --head-dim 4 --causal
run teacher-tf --task teacher --teacher pairs --arch transformer --width 16 --heads 2 --batch 3 --init-std 0.3
run teacher-tf-post --task teacher --teacher pairs --arch transformer --width 16 --heads 2 --batch 3 --positions learned --ln post --init-std 0.3
run fitp --task fit-p --n 6 --d 5 --dk 3
# after a few optimisation steps (LayerNorm weights away from 1, AdamW state)
"$A" train $T --steps 10 --stop-at 4 --save ck --quiet >/dev/null || exit 1
run text-resumed --resume ck
# merged heads with trained biases (bq, bv, bo nonzero)
"$A" train $T --heads 2 --attention fixed --head-dim 16 --steps 10 --stop-at 4 --save ckm \
    --quiet >/dev/null || exit 1
run text-merged-resumed --resume ckm

"$PY" "$script" text-pre text-post text-fixed text-b2 listops-first listops-mean listops-last \
    teacher-std teacher-fixed teacher-tf teacher-tf-post fitp text-resumed text-merged \
    text-merged-post text-onehead listops-merged text-merged-resumed
status=$?
test $status -eq 77 && status=1
exit $status
