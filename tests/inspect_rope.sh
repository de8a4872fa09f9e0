#!/bin/sh
# inspect_rope.sh — `attncheck inspect --rope PAIRING`: a Llama checkpoint
# whose config.json does not say its RoPE pairing.  llama_meta holds the
# weights of llama with the q/k rows in Meta's interleaved order
# (tests/models_fixtures.py); with --rope interleaved its patterns are
# llama's (whose patterns tests/models_torch.sh checks against torch) within
# the bound of a reordered dot product, with the wrong pairing they are not;
# --rope on a model without rotary embeddings and an unknown pairing are
# usage errors (64).
set -u
: "${ATTNCHECK:=./attncheck}"
: "${PYTHON3:=/usr/bin/python3}"
: "${top_srcdir:=.}"
fail=0
work=$(mktemp -d "${TMPDIR:-/tmp}/inspect_rope.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM HUP
err() { echo "inspect_rope: $*" >&2; fail=1; }
M="$top_srcdir/tests/models"
SEED=${ATTNCHECK_SEED:-5}

"$PYTHON3" - "$work" "$SEED" <<'PY' || exit 99
import sys, numpy as np
w, seed = sys.argv[1], int(sys.argv[2])
r = np.random.RandomState(seed)
for n in (1, 5, 9):
    np.save(w + "/x%d.npy" % n, r.standard_normal((n, 16)))
np.save(w + "/ids.npy", np.array([3, 5, 7], float))
PY

for n in 1 5 9; do
    for l in 0 1; do
        for run in "llama" "llama_meta --rope interleaved" "llama_meta --rope half" "llama --rope half"; do
            # shellcheck disable=SC2086
            set -- $run
            d="$work/o_${n}_${l}_$1_${3:-none}"
            # shellcheck disable=SC2086
            "$ATTNCHECK" inspect --model "$M/$1" ${2:+"$2" "$3"} --layer "$l" \
                --normed "$work/x$n.npy" --out-dir "$d" --json >"$d.json" 2>"$work/err"
            st=$?
            [ "$st" = 2 ] || err "$run layer $l n $n: exit $st (RoPE heads are not decided: 2): $(cat "$work/err")"
        done
        "$PYTHON3" - "$work" "$n" "$l" "$M/llama_meta/model.safetensors" "$SEED" <<'PY' || fail=1
import json, struct, sys
import numpy as np
w, n, l, st, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
def pat(name):
    return np.load("%s/o_%d_%d_%s/patterns.npy" % (w, n, l, name))
ref = pat("llama_none")
# the bound: the interleaved layout computes every q and k component, and
# every rotation, with the same operations as rotate_half on the permuted
# rows; only the dk products of each logit are summed in another order:
# |d s| <= gamma_dk |q| |k| / sqrt(dk) (Cauchy-Schwarz, rotation-invariant
# norms), and |d P| <= P (exp(2 |d s|) - 1) <= 2.01 max|d s|
b = open(st, "rb").read()
h = json.loads(b[8:8 + struct.unpack("<Q", b[:8])[0]])
def W(k):
    e = h["model.layers.%d.self_attn.%s.weight" % (l, k)]
    o = 8 + struct.unpack("<Q", b[:8])[0]
    a = np.frombuffer(b[o + e["data_offsets"][0]:o + e["data_offsets"][1]], "<f4")
    return a.astype(np.float64).reshape(e["shape"])
X = np.load("%s/x%d.npy" % (w, n))
H, KV, dk = 4, 2, 4
Q, K = X @ W("q_proj").T, X @ W("k_proj").T
qn = np.linalg.norm(Q.reshape(n, H, dk), axis=2).max()
kn = np.linalg.norm(K.reshape(n, KV, dk), axis=2).max()
u = 2.0 ** -53
gamma = dk * u / (1 - dk * u)
bound = 2.01 * gamma * qn * kn / np.sqrt(dk) * 1.01 + 8 * u   # + the last roundings of P
bad = []
for name in ("llama_meta_interleaved", "llama_half"):
    d = abs(pat(name) - ref).max()
    if not d <= bound:
        bad.append("%s: max|dP| = %.3g > %.3g" % (name, d, bound))
wrong = abs(pat("llama_meta_half") - ref).max()
if n > 1 and not wrong > 1e3 * bound:
    bad.append("the wrong pairing is not visible: max|dP| = %.3g" % wrong)
j = json.load(open("%s/o_%d_%d_llama_meta_interleaved.json" % (w, n, l)))
if "interleaved" not in j["layers"][0]["pattern_changes"].lower():
    bad.append("pattern_changes does not name the pairing: " + j["layers"][0]["pattern_changes"])
if bad:
    sys.exit("inspect_rope (seed %s) n = %d, layer %d: %s" % (seed, n, l, "; ".join(bad)))
PY
    done
done

usage() {
    pat=$1
    shift
    "$ATTNCHECK" inspect "$@" >/dev/null 2>"$work/err"
    st=$?
    [ "$st" = 64 ] || err "inspect $*: exit $st, expected 64"
    grep -q -- "$pat" "$work/err" || err "inspect $*: message lacks '$pat': $(cat "$work/err")"
}
usage "gpt2 model has no rotary embeddings" --model "$M/gpt2" --tokens "$work/ids.npy" --rope half
usage "bert model has no rotary embeddings" --model "$M/bert" --tokens "$work/ids.npy" --rope interleaved
usage "'both' is not one of half, interleaved" --model "$M/llama" --tokens "$work/ids.npy" --rope both
exit $fail
