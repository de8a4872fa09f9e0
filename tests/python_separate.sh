#!/bin/sh
# attncheck.separate and attncheck.Layer (tests/python_separate.py): the
# package from the source tree with the generated _config.py, over the
# library just built (ATTNCHECK_LIBRARY), against the program of the same
# build and mpmath.  Skipped (77) without NumPy or a shared library.
set -eu
: "${top_srcdir:?run through make check}"
"$PYTHON3" -c 'import numpy' 2>/dev/null || { echo "python_separate: no numpy; skipping"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/attncheck"
cp "$top_srcdir"/python/attncheck/*.py "$tmp/attncheck/"
cp "$top_builddir/python/attncheck/_config.py" "$tmp/attncheck/"
lib="$top_builddir/src/.libs/libattncheck.so"
# a library built with AddressSanitizer loads into an uninstrumented Python
# only with the ASan runtime first in the process (as python_pkg.sh)
asan=$(ldd "$lib" 2>/dev/null | sed -n 's/.*libasan[^ ]* => \([^ ]*\) .*/\1/p' | head -1)
if [ -n "$asan" ]; then
    export LD_PRELOAD="$asan" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
fi
test -f "$lib" || { echo "python_separate: $lib not built; skipping"; exit 77; }
export ATTNCHECK_LIBRARY="$lib" PYTHONPATH="$tmp" TMPDIR="$tmp"
exec "$PYTHON3" "$top_srcdir/tests/python_separate.py" "$ATTNCHECK"
