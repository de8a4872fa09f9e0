#!/bin/sh
# cli_rep_theorem.sh — `attncheck rep-theorem` from the outside: every exit
# status, every class of bad input (one-line message naming the file and the
# problem), and nothing left behind when an output cannot be written.
set -u
: "${ATTNCHECK:=./attncheck}"
: "${PYTHON3:=/usr/bin/python3}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cli-t1.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0
n=0

# expect STATUS PATTERN -- COMMAND...: the exit status and a stderr (or
# stdout for status 0-2) line matching PATTERN
expect() {
    want=$1; pat=$2; shift 3
    n=$((n + 1))
    "$@" > "$tmp/out" 2> "$tmp/err"
    got=$?
    if [ "$got" != "$want" ]; then
        echo "FAIL: '$*' exited $got, expected $want"; sed 's/^/    /' "$tmp/err" "$tmp/out" | head -20
        fail=1; return
    fi
    case " $* " in # --json output: validate against the command's schema
    *" --json "*) [ "$got" -ge 64 ] || "${PYTHON3:-/usr/bin/python3}" "$top_srcdir/tests/json_schema.py" rep-theorem "$tmp/out" ||
        { echo "FAIL: '$*': --json schema violation"; fail=1; } ;;
    esac
    if [ "$want" -ge 64 ]; then
        lines=$(grep -c . "$tmp/err")
        if ! head -1 "$tmp/err" | grep -q -E -e "$pat"; then
            echo "FAIL: '$*': error message does not match /$pat/:"; sed 's/^/    /' "$tmp/err"; fail=1
        elif [ "$want" != 64 ] && [ "$lines" != 1 ]; then
            echo "FAIL: '$*': error is $lines lines, expected one:"; sed 's/^/    /' "$tmp/err"; fail=1
        fi
    elif ! grep -q -E -e "$pat" "$tmp/out"; then
        echo "FAIL: '$*': output does not match /$pat/"; sed 's/^/    /' "$tmp/out" | head; fail=1
    fi
}

A="$ATTNCHECK rep-theorem"

# ---- verdicts: 0 proved, 1 refuted, 2 undecided
expect 0 'verdict +PROVED' -- $A --n 6
expect 1 'verdict +REFUTED' -- $A --example paper
# (tol between the exact column-sum bound 2.17e-17 and the weights' 3.69e-16)
expect 2 'verdict +UNDECIDED' -- $A --d 4 --n 8 --dk 2 --representable --seed 1 --tol 1e-16
expect 1 'verdict +REFUTED: dist <= tol = 1e-17  \[column 5 of P does not sum to 1' -- $A --d 4 --n 8 --dk 2 --representable --seed 1 --tol 1e-17
expect 0 '"verdict": "PROVED"' -- $A --n 5 --json
expect 0 'trace' -- $A --n 5 --trace

# ---- usage errors: 64
expect 64 "unknown option '--bogus'" -- $A --bogus
expect 64 "--n: 'abc' is not" -- $A --n abc
expect 64 "--n: 0 is out of range" -- $A --n 0
expect 64 "--dk: '-3' is not" -- $A --dk -3
expect 64 "--tol: 2 is out of range" -- $A --tol 2
expect 64 "needs a value" -- $A --x
expect 64 "unknown example 'nope'" -- $A --example nope
expect 64 "cannot be combined" -- $A --example paper --n 3
expect 64 "cannot be combined" -- $A --p P.npy --representable
expect 64 "unexpected argument" -- $A stray
expect 64 "not an attncheck command" -- $ATTNCHECK no-such-command
expect 64 "--max-prec" -- $A --max-prec -1

# ---- input files
$A --n 4 --seed 3 --out-dir "$tmp/good" > /dev/null || { echo "FAIL: could not write a good instance"; fail=1; }
for f in X.npy P.npy Wq.npy Wk.npy certificate.json; do
    [ -s "$tmp/good/$f" ] || { echo "FAIL: --out-dir did not write $f"; fail=1; }
done
[ -z "$(ls -A "$tmp/good" | grep -v -E '^(X|P|Wq|Wk)\.npy$|^certificate\.json$')" ] || { echo "FAIL: stray files in out-dir: $(ls -A "$tmp/good")"; fail=1; }
expect 0 'PROVED' -- $A --x "$tmp/good/X.npy" --p "$tmp/good/P.npy"
expect 66 "missing.npy: cannot open" -- $A --x "$tmp/missing.npy"
expect 66 "is a directory" -- $A --x "$tmp"
expect 64 "contradicts" -- $A --x "$tmp/good/X.npy" --n 7

# malformed .npy files, one per class
printf 'not a numpy file at all' > "$tmp/magic.npy"
expect 65 "magic.npy: .*magic" -- $A --x "$tmp/magic.npy"
: > "$tmp/empty.npy"
expect 65 "empty.npy" -- $A --x "$tmp/empty.npy"
head -c 40 "$tmp/good/X.npy" > "$tmp/trunc_header.npy"
expect 65 "trunc_header.npy" -- $A --x "$tmp/trunc_header.npy"
head -c 150 "$tmp/good/X.npy" > "$tmp/trunc_data.npy"
expect 65 "trunc_data.npy: .*truncated" -- $A --x "$tmp/trunc_data.npy"
if "$PYTHON3" -c 'import numpy' 2>/dev/null; then
    "$PYTHON3" - "$tmp" <<'PY'
import sys, numpy as np
t = sys.argv[1]
X = np.load(t + "/good/X.npy"); P = np.load(t + "/good/P.npy")
np.save(t + "/f32.npy", X.astype(np.float32))
np.save(t + "/f32w.npy", X.astype(np.float32).astype(np.float64))
np.savez(t + "/arch.npz", X=X, P=P)
A = np.exp(np.random.default_rng(3).standard_normal(P.shape)); A /= A.sum(axis=1, keepdims=True)
np.save(t + "/prow.npy", A); np.save(t + "/prowT.npy", A.T.copy())
np.save(t + "/int.npy", np.arange(16).reshape(4, 4))
np.save(t + "/vec.npy", np.ones(4))
np.save(t + "/fortran.npy", np.asfortranarray(X))
Xn = X.copy(); Xn[1, 2] = np.nan; np.save(t + "/xnan.npy", Xn)
Pz = P.copy(); Pz[0, 1] = 0.0; np.save(t + "/pzero.npy", Pz)
Pneg = P.copy(); Pneg[2, 1] = -0.1; np.save(t + "/pneg.npy", Pneg)
Ps = P.copy(); Ps[:, 3] *= 1.01; np.save(t + "/psum.npy", Ps)
np.save(t + "/pshape.npy", np.full((3, 3), 1 / 3))
np.save(t + "/pinf.npy", np.where(P > 0.2, np.inf, P))
np.save(t + "/d0.npy", np.array([1.0, 2.0, 3.0, 4.0]))
np.save(t + "/d0neg.npy", np.array([1.0, -2.0, 3.0, 4.0]))
np.save(t + "/d0len.npy", np.array([1.0, 2.0]))
PY
    # float32 is widened exactly: the same answer as its float64 copy
    $A --x "$tmp/f32.npy" --json > "$tmp/f32.json"; $A --x "$tmp/f32w.npy" --json > "$tmp/f32w.json"
    grep -v seconds "$tmp/f32.json" | sed 's/f32w*\.npy//' > "$tmp/a.txt"
    grep -v seconds "$tmp/f32w.json" | sed 's/f32w*\.npy//' > "$tmp/b.txt"
    cmp -s "$tmp/a.txt" "$tmp/b.txt" || { echo "FAIL: float32 X differs from its float64 copy"; fail=1; }
    expect 0 "verdict" -- $A --x "$tmp/arch.npz:X" --p "$tmp/arch.npz:P"
    # a row-stochastic P (PyTorch's layout): refused with advice to --rows, and
    # --rows checks exactly its transpose
    expect 65 "prow.npy: column 0 .* every row sums to 1: P is row-stochastic .* pass --rows" -- $A --x "$tmp/good/X.npy" --p "$tmp/prow.npy"
    $A --x "$tmp/good/X.npy" --p "$tmp/prow.npy" --rows --json | grep -v '"seconds"\|prow' > "$tmp/r1.txt"
    $A --x "$tmp/good/X.npy" --p "$tmp/prowT.npy" --json | grep -v '"seconds"\|prow' > "$tmp/r2.txt"
    sed -i 's/"rows": true/"rows": false/' "$tmp/r1.txt"
    cmp -s "$tmp/r1.txt" "$tmp/r2.txt" || { echo "FAIL: --rows is not the transpose"; diff "$tmp/r1.txt" "$tmp/r2.txt" | head; fail=1; }
    expect 64 "--rows needs --p" -- $A --rows
    expect 65 "arch.npz:Q: the archive .* has no array 'Q'" -- $A --x "$tmp/arch.npz:Q"
    expect 65 "int.npy: dtype" -- $A --x "$tmp/int.npy"
    expect 65 "vec.npy: expected a 2-D array" -- $A --x "$tmp/vec.npy"
    expect 0 "PROVED" -- $A --x "$tmp/fortran.npy" --p "$tmp/good/P.npy"
    expect 65 "xnan.npy: entry \(1, 2\) is NaN" -- $A --x "$tmp/xnan.npy" --p "$tmp/good/P.npy"
    expect 65 "pzero.npy: entry \(0, 1\) = 0 is not positive" -- $A --x "$tmp/good/X.npy" --p "$tmp/pzero.npy"
    expect 65 "pneg.npy: entry \(2, 1\)" -- $A --x "$tmp/good/X.npy" --p "$tmp/pneg.npy"
    expect 65 "psum.npy: column 3 sums to" -- $A --x "$tmp/good/X.npy" --p "$tmp/psum.npy"
    expect 0 "PROVED" -- $A --x "$tmp/good/X.npy" --p "$tmp/psum.npy" --normalize
    expect 65 "pshape.npy: P is 3 x 3" -- $A --x "$tmp/good/X.npy" --p "$tmp/pshape.npy"
    expect 65 "pinf.npy: entry .* is \+Inf" -- $A --x "$tmp/good/X.npy" --p "$tmp/pinf.npy"
    expect 0 "PROVED" -- $A --x "$tmp/good/X.npy" --p "$tmp/good/P.npy" --d0 "$tmp/d0.npy"
    expect 65 "d0neg.npy: entry 1" -- $A --x "$tmp/good/X.npy" --p "$tmp/good/P.npy" --d0 "$tmp/d0neg.npy"
    expect 65 "d0len.npy: D0 has 2 entries" -- $A --x "$tmp/good/X.npy" --p "$tmp/good/P.npy" --d0 "$tmp/d0len.npy"
else
    echo "numpy not available: dtype/shape/NaN fixtures skipped"
fi

# ---- outputs that cannot be created: 73, and nothing left behind
printf 'x' > "$tmp/file"
expect 73 "cannot" -- $A --n 4 --out-dir "$tmp/file/sub"
mkdir "$tmp/ro"; chmod 500 "$tmp/ro"
if [ "$(id -u)" != 0 ]; then
    expect 73 "ro" -- $A --n 4 --out-dir "$tmp/ro"
fi
# an input error must not leave a partial out-dir behind
expect 65 "magic.npy" -- $A --x "$tmp/magic.npy" --out-dir "$tmp/partial"
if [ -e "$tmp/partial" ] && [ -n "$(ls -A "$tmp/partial")" ]; then
    echo "FAIL: files left behind after an input error: $(ls -A "$tmp/partial")"; fail=1
fi
# no stray staging directories after success
if ls -A "$tmp/good" | grep -q '^\.attncheck-'; then echo "FAIL: staging directory left behind"; fail=1; fi

# ---- help and version
expect 0 "Usage: attncheck rep-theorem" -- $A --help
expect 0 "Usage: attncheck rep-theorem" -- $ATTNCHECK help rep-theorem
expect 0 "attncheck [0-9]" -- $ATTNCHECK --version
expect 0 "License GPL-3.0-or-later" -- $ATTNCHECK --version
expect 64 "no such command" -- $ATTNCHECK help nope

# ---- the OpenBLAS core fix: a misdetected generic core is replaced once
if grep -q avx512f /proc/cpuinfo 2>/dev/null; then
    expect 0 "BLAS kernels: SkylakeX" -- env -u OPENBLAS_CORETYPE ATTNCHECK_BLAS_TEST_CORENAME=Prescott $ATTNCHECK --version
    expect 0 "BLAS kernels: Prescott" -- env OPENBLAS_CORETYPE=Prescott $ATTNCHECK --version
fi

echo "$n checks"
exit $fail
