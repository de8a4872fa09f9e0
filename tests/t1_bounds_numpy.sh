#!/bin/sh
# t1_bounds_numpy.sh — `make check` wrapper for t1_bounds_numpy.py (skipped without python3).
: "${PYTHON3:=/usr/bin/python3}"
: "${top_srcdir:=.}"
: "${ATTNCHECK:=./attncheck}"
command -v "$PYTHON3" >/dev/null 2>&1 || { echo "python3 not found: skipped"; exit 77; }
exec "$PYTHON3" "$top_srcdir/tests/t1_bounds_numpy.py" "$ATTNCHECK"
