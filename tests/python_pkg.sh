#!/bin/sh
# The Python package (python/attncheck) from the build tree: the package
# files of the source tree with the generated _config.py, over the library
# just built (ATTNCHECK_LIBRARY).  Skipped (77) without NumPy.
set -eu
: "${top_srcdir:?run through make check}"
"$PYTHON3" -c 'import numpy' 2>/dev/null || { echo "python_pkg: no numpy; skipping"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/attncheck"
cp "$top_srcdir"/python/attncheck/*.py "$tmp/attncheck/"
cp "$top_builddir/python/attncheck/_config.py" "$tmp/attncheck/"
lib="$top_builddir/src/.libs/libattncheck.so"
# a library built with AddressSanitizer (make check-sanitize) loads into an
# uninstrumented Python only with the ASan runtime first in the process;
# Python's own allocations are not leaks of ours
asan=$(ldd "$lib" 2>/dev/null | sed -n 's/.*libasan[^ ]* => \([^ ]*\) .*/\1/p' | head -1)
if [ -n "$asan" ]; then
    export LD_PRELOAD="$asan" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
fi
test -f "$lib" || { echo "python_pkg: $lib not built (shared libraries disabled?); skipping"; exit 77; }
export ATTNCHECK_LIBRARY="$lib" PYTHONPATH="$tmp" TMPDIR="$tmp"
"$PYTHON3" "$top_srcdir/tests/python_pkg.py" "$ATTNCHECK" || exit 1
"$PYTHON3" "$top_srcdir/tests/python_separate.py" "$ATTNCHECK" || exit 1
"$PYTHON3" "$top_srcdir/tests/python_coverage.py" "$ATTNCHECK" > "$tmp/coverage.txt" || { cat "$tmp/coverage.txt"; exit 1; }
# the README's example session runs as printed (needs torch for its checkpoint part)
"$PYTHON3" -c 'import torch' 2>/dev/null || exit 0
ATTNCHECK="$ATTNCHECK" "$PYTHON3" "$top_srcdir/examples/python_session.py" > "$tmp/session.txt" 2>&1 || {
    echo "FAIL: examples/python_session.py"; cat "$tmp/session.txt"; exit 1; }
grep -q 'Wq doubled in torch, saved and certified' "$tmp/session.txt" || { cat "$tmp/session.txt"; exit 1; }
cat "$tmp/session.txt"
