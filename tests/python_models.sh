#!/bin/sh
# python_models.sh — attncheck.from_torch and attncheck.capture
# (python/attncheck/models.py) against the C reader (tests/mh_tool st,
# model) on every checkpoint fixture of tests/models/ (tests/python_models.py).
# Exit status: 0 pass, 1 fail, 77 no torch/numpy or no shared library, 99 setup error.
set -u
: "${top_srcdir:?run through make check}"
PY=${PYTHON3:-/usr/bin/python3}
"$PY" -c 'import torch, numpy' 2>/dev/null || { echo "python_models: no torch/numpy for $PY; skipping"; exit 77; }
tool="$top_builddir/tests/mh_tool"
lib="$top_builddir/src/.libs/libattncheck.so"
test -x "$tool" || { echo "python_models: $tool not built" >&2; exit 99; }
test -f "$lib" || { echo "python_models: $lib not built (shared libraries disabled?); skipping"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/python_models.XXXXXX") || exit 99
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM HUP
mkdir "$work/pkg" "$work/pkg/attncheck" "$work/t" || exit 99
cp "$top_srcdir"/python/attncheck/*.py "$work/pkg/attncheck/" || exit 99
cp "$top_builddir/python/attncheck/_config.py" "$work/pkg/attncheck/" || exit 99
# a library built with AddressSanitizer loads into Python only with its runtime first
asan=$(ldd "$lib" 2>/dev/null | sed -n 's/.*libasan[^ ]* => \([^ ]*\) .*/\1/p' | head -1)
if [ -n "$asan" ]; then
    export LD_PRELOAD="$asan" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
fi
export ATTNCHECK_LIBRARY="$lib" PYTHONPATH="$work/pkg"
"$PY" "$top_srcdir/tests/python_models.py" "$tool" "$top_srcdir/tests/models" "$work/t"
st=$?
[ $st -eq 77 ] && st=1
exit $st
