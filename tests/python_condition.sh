#!/bin/sh
# attncheck.condition and attncheck.merge (python_condition.py) from the
# build tree, over the library just built (as python_pkg.sh).  Skipped (77)
# without NumPy.
set -eu
: "${top_srcdir:?run through make check}"
"$PYTHON3" -c 'import numpy' 2>/dev/null || { echo "python_condition: no numpy; skipping"; exit 77; }
lib="$top_builddir/src/.libs/libattncheck.so"
test -f "$lib" || { echo "python_condition: $lib not built; skipping"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/attncheck"
cp "$top_srcdir"/python/attncheck/*.py "$tmp/attncheck/"
cp "$top_builddir/python/attncheck/_config.py" "$tmp/attncheck/"
# a library built with AddressSanitizer loads into an uninstrumented Python
# only with the ASan runtime first in the process (as python_pkg.sh)
asan=$(ldd "$lib" 2>/dev/null | sed -n 's/.*libasan[^ ]* => \([^ ]*\) .*/\1/p' | head -1)
if [ -n "$asan" ]; then
    export LD_PRELOAD="$asan" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
fi
export ATTNCHECK_LIBRARY="$lib" PYTHONPATH="$tmp" TMPDIR="$tmp"
"$PYTHON3" "$top_srcdir/tests/python_condition.py" "$ATTNCHECK"
