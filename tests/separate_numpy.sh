#!/bin/sh
# Cross-check Theorem 2 and the attention layers with NumPy, fractions,
# mpmath and PyTorch (see separate_numpy.py).
# Exit status: 0 pass, 1 mismatch, 77 skipped (no python3 or no numpy),
# 99 setup error.
PY=${PYTHON3:-/usr/bin/python3}

if ! command -v "$PY" >/dev/null 2>&1; then
    echo "separate_numpy: $PY not found, skipping" >&2
    exit 77
fi
if ! "$PY" -c 'import numpy' >/dev/null 2>&1; then
    echo "separate_numpy: numpy is not installed for $PY, skipping" >&2
    exit 77
fi
here=$(dirname "$0")
tool="${top_builddir:-.}/tests/mh_tool"
test -x "$tool" || tool="$here/mh_tool"
exe="${ATTNCHECK:-./attncheck}"
if ! test -x "$tool" || ! test -x "$exe"; then
    echo "separate_numpy: mh_tool or attncheck not built" >&2
    exit 99
fi
script="${top_srcdir:-.}/tests/separate_numpy.py"
test -f "$script" || script="$here/separate_numpy.py"

work=$(mktemp -d "${TMPDIR:-/tmp}/separate_numpy.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM HUP

"$PY" "$script" "$exe" "$tool" "$work"
status=$?
test $status -eq 77 && status=1
exit $status
