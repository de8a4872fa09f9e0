#!/bin/sh
# Hostile classes of Theorem 2 (`attncheck separate`), re-checked with
# fractions and mpmath (see t2_hostile.py).  In `make check` the smoke subset
# (one instance of each class, ~16 runs); `make check-t2-hostile` runs all of
# them (T2_HOSTILE=full).
# Exit status: 0 pass, 1 mismatch, 77 skipped (no python3 or no numpy),
# 99 setup error.
PY=${PYTHON3:-/usr/bin/python3}

if ! command -v "$PY" >/dev/null 2>&1; then
    echo "t2_hostile: $PY not found, skipping" >&2
    exit 77
fi
if ! "$PY" -c 'import numpy' >/dev/null 2>&1; then
    echo "t2_hostile: numpy is not installed for $PY, skipping" >&2
    exit 77
fi
here=$(dirname "$0")
exe="${ATTNCHECK:-./attncheck}"
test -x "$exe" || { echo "t2_hostile: attncheck not built" >&2; exit 99; }
script="${top_srcdir:-.}/tests/t2_hostile.py"
test -f "$script" || script="$here/t2_hostile.py"

work=$(mktemp -d "${TMPDIR:-/tmp}/t2_hostile.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM HUP

if [ "${T2_HOSTILE:-smoke}" = full ]; then
    "$PY" "$script" "$exe" "$work"
else
    "$PY" "$script" "$exe" "$work" --smoke
fi
status=$?
test $status -eq 77 && status=1
exit $status
