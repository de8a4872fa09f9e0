#!/bin/sh
# session.sh — a shell session with attncheck: Theorem 1 on your own data,
# scripted through JSON and exit codes.  Run from the build directory:
#   sh examples/session.sh            (uses ./attncheck and /usr/bin/python3)
set -eu
A=${ATTNCHECK:-./attncheck}
PY=${PYTHON3:-/usr/bin/python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "# 1. The paper's counterexample: d = 1 < n = 2 (exit status 1 = refuted)"
$A rep-theorem --example paper || echo "exit status $?"

echo; echo "# 2. Your own X (d x n, one column per token) and P (n x n, column-stochastic)"
"$PY" - "$work" <<'PY'
import sys, numpy as np
rng = np.random.default_rng(0)
tokens = rng.standard_normal((10, 16))      # (n, d) as in PyTorch
np.save(sys.argv[1] + "/X.npy", tokens.T)   # attncheck wants d x n
logits = rng.standard_normal((10, 10))
P = np.exp(logits) / np.exp(logits).sum(axis=0)   # softmax over each column
np.save(sys.argv[1] + "/P.npy", P)
PY
$A rep-theorem --x "$work/X.npy" --p "$work/P.npy" --dk 16 --out-dir "$work/out" --trace

echo; echo "# 3. Scripting: the verdict and the certified bound from JSON"
$A rep-theorem --x "$work/X.npy" --p "$work/P.npy" --dk 4 --json > "$work/r.json" || true
"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["verdict"], "dist >=", d["distance"]["lo"])' "$work/r.json"

echo; echo "# 4. Check the written weights yourself"
"$PY" - "$work" <<'PY'
import sys, numpy as np
w = sys.argv[1]
X, P = np.load(w + "/X.npy"), np.load(w + "/P.npy")
Wk, Wq = np.load(w + "/out/Wk.npy"), np.load(w + "/out/Wq.npy")
Z = (Wk @ X).T @ (Wq @ X) / np.sqrt(Wk.shape[0])
S = np.exp(Z - Z.max(0)); S /= S.sum(0)
print("NumPy: max|Softmax - P| =", np.abs(S - P).max())
PY

echo; echo "# 5. Everything at once"
$A report --quick
