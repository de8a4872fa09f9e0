#!/bin/sh
# Statistical cross-check of `attncheck condition` against an independent
# NumPy sampler (see condition_numpy.py).  Exit status: 0 pass, 1 mismatch,
# 77 skipped (no python3 or no numpy), 99 setup error.
PY=${PYTHON3:-/usr/bin/python3}
: "${ATTNCHECK:=./attncheck}"
if ! command -v "$PY" >/dev/null 2>&1; then
    echo "condition_numpy: $PY not found, skipping" >&2
    exit 77
fi
if ! "$PY" -c 'import numpy' >/dev/null 2>&1; then
    echo "condition_numpy: numpy is not installed for $PY, skipping" >&2
    exit 77
fi
script="${top_srcdir:-.}/tests/condition_numpy.py"
test -f "$script" || script="$(dirname "$0")/condition_numpy.py"
test -f "$script" || { echo "condition_numpy: condition_numpy.py not found" >&2; exit 99; }
test -x "$ATTNCHECK" || { echo "condition_numpy: $ATTNCHECK not found" >&2; exit 99; }
"$PY" "$script" "$ATTNCHECK"
status=$?
test $status -eq 77 && status=1
exit $status
