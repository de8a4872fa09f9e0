#!/bin/sh
# cli_separate.sh — `attncheck separate`: every exit status, each class of bad
# input (with the file named in the message), --json, --out-dir (all files or
# none), --trace and --audit output.
set -u
: "${ATTNCHECK:=./attncheck}"
: "${PYTHON3:=/usr/bin/python3}"
fail=0
work=$(mktemp -d "${TMPDIR:-/tmp}/cli_separate.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM HUP

err() { echo "cli_separate: $*" >&2; fail=1; }

# expect STATUS [grep-pattern-on-stdout+stderr] -- args...
expect() {
    want=$1; pat=$2; shift 2
    "$ATTNCHECK" separate "$@" >"$work/out" 2>"$work/err"
    got=$?
    [ "$got" = "$want" ] || { err "separate $*: exit $got, expected $want"; sed 's/^/    /' "$work/err" >&2; }
    if [ -n "$pat" ] && ! cat "$work/out" "$work/err" | grep -q -- "$pat"; then
        err "separate $*: output lacks '$pat'"
        sed 's/^/    /' "$work/out" "$work/err" | head -20 >&2
    fi
}

have_py=0
"$PYTHON3" -c 'import numpy' >/dev/null 2>&1 && have_py=1

# ---- proved ------------------------------------------------------------------
expect 0 "verdict    PROVED: separated at X" --optimize 5
expect 0 "case 2 (S_W = S_V" --case 2 --trace --optimize 0
grep -q "columns 2..n of f_W(X) and g_V(X) agree" "$work/out" || err "--case 2 --trace lacks the column step"
grep -q "not for every v: see --audit)" "$work/out" || err "the trace's field 'audit' is not spelled --audit"
expect 0 "gap 2    PROVED" --case 3 --audit --optimize 0
grep -q "gap 1    PROVED" "$work/out" || err "--audit lacks gap 1"
expect 0 "PROVED: g_V = f_W on the sample inputs, exactly" --embed --dp 16
# s = sqrt(2) is rounded in the double V: the inclusion holds within tol, not
# exactly (stage 0 alone decides it)
expect 0 "PROVED: g_V = f_W on the sample inputs within tol" --embed --dp 8
grep -q "the double V rounds the rescaling" "$work/out" || err "--embed --dp 8 does not say why it is not exact"
expect 0 "within tol" --embed --dp 8 --max-prec 0
expect 0 "" --case 1 --d 8 --h 2 --dp 8 --n 2 --tries 1 --max-prec 0 --threads 1

# ---- refuted and undecided -----------------------------------------------------
expect 0 "" --embed --dp 4 --out-dir "$work/emb"
expect 1 "REFUTED: no X separates" --w-dir "$work/emb" --v-dir "$work/emb"
grep -q "h dp = 16 <= d (fails" "$work/out" || err "the failing size hypothesis is not reported"
# tol = 0 asks for exact equality: the balls certify the ~1e-16 deviation
expect 1 "REFUTED: max over the samples" --embed --dp 8 --tol 0
expect 2 "UNDECIDED: sample 1 is neither" --embed --dp 8 --tol 0 --max-prec 0
# a g_V given with --v-dir is checked as it is: the exact embedding, and
# (below) perturbed embeddings
expect 0 "PROVED: g_V = f_W on the sample inputs, exactly" --embed --w-dir "$work/emb" --v-dir "$work/emb"
if [ $have_py = 1 ]; then
    # the same layer with its heads in reverse order: equal as a function but
    # not head by head; the class sums (doc/mathematics.md §4.9) prove it
    mkdir -p "$work/perm"
    "$PYTHON3" - "$work/emb" "$work/perm" <<'EOF'
import sys, numpy as np
src, dst = sys.argv[1:]
for p in "WV":
    for s in "qkvo":
        a = np.load("%s/%s%s.npy" % (src, p, s))
        np.save("%s/%s%s.npy" % (dst, p, s), a[::-1] if p == "V" else a)
EOF
    expect 1 "REFUTED: no X separates" --w-dir "$work/emb" --v-dir "$work/perm" --optimize 5 --max-prec 256
    grep -q "fall into 4 classes of equal logit matrices" "$work/out" || err "the permuted pair is not decided by the class sums"
    # the irrational embedding with one entry of Vq changed by 1e-3 and by
    # 1e-12 relative: beyond the default tol (REFUTED) and within it (PROVED)
    "$ATTNCHECK" separate --embed --dp 8 --out-dir "$work/e8" >/dev/null 2>&1 || err "--embed --dp 8 --out-dir failed"
    for eps in 1e-3 1e-12; do
        mkdir -p "$work/p$eps"
        "$PYTHON3" - "$work/e8" "$work/p$eps" "$eps" <<'EOF'
import shutil, sys, numpy as np
src, dst, eps = sys.argv[1], sys.argv[2], float(sys.argv[3])
for p in "WV":
    for s in "qkvo":
        shutil.copy("%s/%s%s.npy" % (src, p, s), dst)
Vq = np.load(dst + "/Vq.npy")
assert Vq[0, 0, 0] != 0
Vq[0, 0, 0] *= 1 + eps
np.save(dst + "/Vq.npy", Vq)
EOF
    done
    expect 1 "REFUTED: max over the samples" --embed --w-dir "$work/p1e-3" --v-dir "$work/p1e-3"
    expect 0 "PROVED: g_V = f_W on the sample inputs within tol" --embed --w-dir "$work/p1e-12" --v-dir "$work/p1e-12"
    grep -q "not exact: g_V is not f_W head by head" "$work/out" || err "perturbed 1e-12: no 'not exact' note"
    # the JSON of --embed
    "$ATTNCHECK" separate --embed --dp 8 --json >"$work/je" 2>"$work/err" || err "--embed --json failed"
    "$PYTHON3" - "$work/je" <<'EOF' || err "--embed --json is not the documented object"
import json, os, sys
sys.path.insert(0, os.environ["top_srcdir"] + "/tests")
import json_schema
j = json_schema.load(open(sys.argv[1]).read(), "separate")  # the schema, then the values
assert j["verdict"] == "PROVED" and j["mode"] == "embed" and j["exact"] is False
assert j["claim"].startswith("on every sample input X, ||g_V(X) - f_W(X)||_F <= tol")
assert j["tol"] == 2.0 ** -26 and j["certificate"]["tau"] == j["tol"]
assert 0 <= j["relative_deviation_lo"] <= j["relative_deviation_hi"] <= j["tol"]
assert j["within_tol_samples"] == j["samples"] == 3 and j["equal_samples"] == 0
EOF
fi

# ---- --json and --out-dir -------------------------------------------------------
"$ATTNCHECK" separate --case 3 --optimize 5 --json --out-dir "$work/o3" >"$work/j" 2>"$work/err" ||
    err "--json --out-dir failed: $(cat "$work/err")"
for f in X.npy Wq.npy Wk.npy Wv.npy Wo.npy Vq.npy Vk.npy Vv.npy Vo.npy certificate.json; do
    [ -f "$work/o3/$f" ] || err "--out-dir did not write $f"
done
[ -z "$(ls -A "$work/o3" | grep '^\.attncheck')" ] || err "--out-dir left its staging directory"
if [ $have_py = 1 ]; then
    "$PYTHON3" - "$work/j" "$work/o3" <<'EOF' || err "--json output is not the documented object"
import json, os, sys, numpy as np
sys.path.insert(0, os.environ["top_srcdir"] + "/tests")
import json_schema
j = json_schema.load(open(sys.argv[1]).read(), "separate")  # the schema, then the values
assert j["verdict"] == "PROVED" and j["certificate"]["verdict"] == "PROVED"
assert j["certificate"]["lo"] > 0 and j["case"]["number"] == 3
assert j["hypotheses"]["theorem_applies"] == "PROVED"
assert np.load(sys.argv[2] + "/Wo.npy").shape == (4, 16, 4)
assert np.load(sys.argv[2] + "/Vq.npy").shape == (4, 8, 16)
assert np.load(sys.argv[2] + "/X.npy").shape == (16, 4)
EOF
fi
# the written layers load back and give the same case
expect 0 "case 3 (S_W = S_V" --w-dir "$work/o3" --v-dir "$work/o3" --optimize 0

# ---- equal as functions, n = 1, the third gap ------------------------------------
expect 1 "REFUTED: no X separates f_W from g_V" --case 2 --n 1 --optimize 0
grep -q "n = 1: every softmax is 1" "$work/out" || err "--case 2 --n 1 does not say why"
expect 0 "gap 3    PROVED" --case 3 --audit --optimize 0
expect 0 "signed binary digits of 3" --embed --dp 36
expect 1 "192 rows > dp = 121" --embed --d 128 --h 2 --dp 121 --tol 0 --samples 1

# ---- one tolerance: separation and --embed --------------------------------------
# f_W against its own sqrt(2) embedding (fl(sqrt 2) in V): within the default
# tol on the embedding's samples (embed PROVED) and beyond it where a near-tie
# of two logits saturates the softmax (separation PROVED, doc/mathematics.md
# §4.10, "Within reach"); beyond tol = 0 on the samples (embed REFUTED)
"$ATTNCHECK" separate --embed --dp 8 --out-dir "$work/s2" >/dev/null 2>&1 || err "--embed --dp 8 --out-dir failed"
expect 0 "PROVED: g_V = f_W on the sample inputs within tol" --embed --w-dir "$work/s2" --v-dir "$work/s2"
expect 0 "PROVED: separated at X" --w-dir "$work/s2" --v-dir "$work/s2" --optimize 5
grep -q "best X     a near-tie of two logits" "$work/out" || err "the sqrt 2 pair is not separated at a near-tie"
expect 1 "REFUTED: max over the samples" --embed --w-dir "$work/s2" --v-dir "$work/s2" --tol 0
expect 0 "PROVED: separated at X" --w-dir "$work/s2" --v-dir "$work/s2" --optimize 5 --tol 0
# the output projection one ulp apart: r(X) <= ||(Vo - Wo) Wo^+||_F at every X
# (doc/mathematics.md §4.10), far below tol: REFUTED by the bound; the value
# matrices one ulp apart: the logits pair up, no bound over all X, UNDECIDED
if [ "$have_py" = 1 ]; then
    "$PYTHON3" - "$work/s2" "$work/wo" <<'EOF'
import os, sys, numpy as np
src, dst = sys.argv[1:3]
os.makedirs(dst, exist_ok=True)
for p in "qkvo":
    W = np.load(os.path.join(src, "W%s.npy" % p))
    np.save(os.path.join(dst, "W%s.npy" % p), W)
    np.save(os.path.join(dst, "V%s.npy" % p), np.nextafter(W, np.inf) if p == "o" else W)
EOF
    expect 1 "REFUTED: no X separates f_W from g_V beyond tol" --w-dir "$work/wo" --v-dir "$work/wo" --optimize 5
    grep -q "differ only in the output projection" "$work/out" || err "Wo one ulp apart: no reason given"
    "$PYTHON3" - "$work/s2" "$work/wv" <<'EOF'
import os, sys, numpy as np
src, dst = sys.argv[1:3]
os.makedirs(dst, exist_ok=True)
for p in "qkvo":
    W = np.load(os.path.join(src, "W%s.npy" % p))
    np.save(os.path.join(dst, "W%s.npy" % p), W)
    np.save(os.path.join(dst, "V%s.npy" % p), np.nextafter(W, np.inf) if p == "v" else W)
EOF
    expect 2 "UNDECIDED: no X certified with" --w-dir "$work/wv" --v-dir "$work/wv" --optimize 5
    grep -q "the logit matrices pair up exactly" "$work/out" || err "Wv one ulp apart: no reason given"
fi

# ---- usage errors (64) ----------------------------------------------------------
expect 64 "unknown option" --frobnicate
expect 64 "out of range" --case 4
expect 64 "not a whole number" --case x
expect 64 "cannot be combined" --case 2 --w-dir "$work/emb"
expect 64 "out of range" --tol -1
expect 64 "out of range" --embed --tol -1
expect 64 "not a number" --embed --tol x
expect 64 "cannot be combined" --embed --case 1
expect 64 "dp >= d/h" --embed --dp 2
expect 64 "do not apply to --embed" --embed --audit
expect 64 "sample inputs of --embed" --samples 4
expect 64 "does not divide" --d 16 --h 3
expect 64 "out of range" --n 0
expect 64 "needs a value" --seed
expect 64 "unexpected argument" extra
expect 64 "dp even" --case 3 --dp 5
expect 64 "contradict" --w-dir "$work/emb" --d 8

# ---- bad input data (65) and missing input (66) ---------------------------------
expect 66 "nonexistent/Wq.npy: cannot open" --w-dir "$work/nonexistent"
mkdir -p "$work/miss" && cp "$work/emb"/V*.npy "$work/miss/" && rm "$work/miss/Vo.npy"
expect 66 "miss/Vo.npy: cannot open" --v-dir "$work/miss"
mkdir -p "$work/garbage" && cp "$work/emb"/W*.npy "$work/garbage/"
printf 'not an npy file' >"$work/garbage/Wk.npy"
expect 65 "garbage/Wk.npy" --w-dir "$work/garbage"
# loaded g_V whose S_V is not exactly representable cannot get a case-2 f_W
expect 65 "not exactly representable" --v-dir "$work/emb" --case 2
grep -q "e.g. --case with a generated g_V" "$work/err" || err "the library's field 'kase' is not spelled --case"
# a loaded g_V without a skew-symmetric U cannot get a case-3 f_W
"$ATTNCHECK" separate --case 2 --optimize 0 --out-dir "$work/c2" >/dev/null 2>&1 || err "--case 2 --out-dir failed"
expect 65 "generate g_V with --case 3 (dp even)" --v-dir "$work/c2" --case 3
if [ $have_py = 1 ]; then
    bad() { # name python-statement-on-arrays
        d="$work/bad_$1"; mkdir -p "$d"; cp "$work/emb"/W*.npy "$d/"
        "$PYTHON3" - "$d" "$2" <<'EOF'
import sys, numpy as np
d, stmt = sys.argv[1:]
A = {s: np.load("%s/W%s.npy" % (d, s)) for s in "qkvo"}
exec(stmt)
for s, a in A.items():
    np.save("%s/W%s.npy" % (d, s), a)
EOF
    }
    bad ndim 'A["q"] = A["q"][0]'
    expect 65 "bad_ndim/Wq.npy: expected a 3-D array" --w-dir "$work/bad_ndim"
    bad shape 'A["v"] = A["v"][:, :1, :]'
    expect 65 "bad_shape/Wv.npy: shape (4, 1, 16) does not match" --w-dir "$work/bad_shape"
    bad oshape 'A["o"] = np.swapaxes(A["o"], 1, 2).copy()'
    expect 65 "bad_oshape/Wo.npy: shape" --w-dir "$work/bad_oshape"
    bad nan 'A["k"][1, 0, 3] = np.nan'
    expect 65 "bad_nan/Wk.npy: entry (1, 0, 3) is NaN" --w-dir "$work/bad_nan"
    bad int 'A["q"] = A["q"].astype(np.int64)'
    expect 65 "bad_int/Wq.npy" --w-dir "$work/bad_int"
    bad hs 'A = {s: (a[:, :3, :] if s in "qkv" else a[:, :, :3]) for s, a in A.items()}'
    expect 65 "head size d/h" --w-dir "$work/bad_hs"
    # g_V with another number of heads than f_W
    mkdir -p "$work/bad_h"
    "$PYTHON3" -c "
import numpy as np
for s in 'qkv': np.save('$work/bad_h/V%s.npy' % s, np.ones((2, 4, 16)))
np.save('$work/bad_h/Vo.npy', np.ones((2, 16, 4)))"
    expect 65 "the same number of heads" --w-dir "$work/emb" --v-dir "$work/bad_h"
    # nothing is written when the input is bad
    expect 65 "" --w-dir "$work/bad_nan" --out-dir "$work/never"
    [ ! -e "$work/never" ] || [ -z "$(ls -A "$work/never")" ] || err "files left in --out-dir after an error"
fi

# ---- cannot create output (73) ---------------------------------------------------
printf 'x' >"$work/afile"
expect 73 "" --optimize 0 --out-dir "$work/afile/sub"
[ "$(cat "$work/afile")" = "x" ] || err "a failed --out-dir touched an existing file"

exit $fail
