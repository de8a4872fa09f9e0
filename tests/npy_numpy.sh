#!/bin/sh
# Cross-check the .npy reader and writer with NumPy (see npy_numpy.py), and
# refuse ambiguous .npz archives (npz_hostile.py).
# Exit status: 0 pass, 1 mismatch, 77 skipped (no python3 or no numpy),
# 99 setup error.
PY=${PYTHON3:-/usr/bin/python3}

if ! command -v "$PY" >/dev/null 2>&1; then
    echo "npy_numpy: $PY not found, skipping" >&2
    exit 77
fi
if ! "$PY" -c 'import numpy' >/dev/null 2>&1; then
    echo "npy_numpy: numpy is not installed for $PY, skipping" >&2
    exit 77
fi

here=$(dirname "$0")
tool="${builddir:-.}/tests/npy_tool"
if ! test -x "$tool"; then
    tool="$here/npy_tool"
fi
if ! test -x "$tool"; then
    echo "npy_numpy: npy_tool not found (looked in ${builddir:-.}/tests and $here)" >&2
    exit 99
fi
script="$here/npy_numpy.py"
if ! test -f "$script"; then
    script="${srcdir:-.}/tests/npy_numpy.py"
fi
if ! test -f "$script"; then
    echo "npy_numpy: npy_numpy.py not found" >&2
    exit 99
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/npy_numpy.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM HUP

"$PY" "$script" "$tool" "$work"
status=$?
# ambiguous .npz archives (npz_hostile.py), in the same work directory
test $status -eq 0 && { "$PY" "$(dirname "$script")/npz_hostile.py" "$tool" "$work"; status=$?; }
if test $status -ne 0; then
    # never let a crash or an unexpected status look like a skip
    test $status -eq 77 && status=1
    exit $status
fi
exit 0
