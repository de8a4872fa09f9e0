#!/bin/sh
# certified_written.sh — `make check` wrapper for certified_written.py: every
# certificate printed about weights is about the files written (skipped
# without python3 and mpmath).
: "${PYTHON3:=/usr/bin/python3}"
: "${top_srcdir:=.}"
: "${ATTNCHECK:=./attncheck}"
command -v "$PYTHON3" >/dev/null 2>&1 || { echo "python3 not found: skipped"; exit 77; }
"$PYTHON3" -c 'import numpy, mpmath' 2>/dev/null || { echo "numpy or mpmath not found: skipped"; exit 77; }
exec "$PYTHON3" "$top_srcdir/tests/certified_written.py" "$ATTNCHECK" "$top_srcdir" ${ATTNCHECK_TEST_SEED:+"$ATTNCHECK_TEST_SEED"}
