#!/bin/sh
# The ARS-7 words of the block normals (fast path and portable twin) against
# an independent pure-Python AES (FIPS-197, checked on its Appendix B
# example): tests/ars_oracle.py over the library just built.  Exit 0 pass,
# 1 failure, 77 skipped (no python3 or no shared library).
PY=${PYTHON3:-/usr/bin/python3}
command -v "$PY" >/dev/null 2>&1 || { echo "ars_oracle: no $PY, skipping"; exit 77; }
lib="${top_builddir:-.}/src/.libs/libattncheck.so"
test -f "$lib" || { echo "ars_oracle: $lib not built (shared libraries disabled?); skipping"; exit 77; }
# a library built with AddressSanitizer loads into an uninstrumented Python
# only with the ASan runtime first in the process
asan=$(ldd "$lib" 2>/dev/null | sed -n 's/.*libasan[^ ]* => \([^ ]*\) .*/\1/p' | head -1)
if [ -n "$asan" ]; then
    export LD_PRELOAD="$asan" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
fi
exec "$PY" "${top_srcdir:-.}/tests/ars_oracle.py" "$lib"
