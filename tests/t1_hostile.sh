#!/bin/sh
# t1_hostile.sh — `make check` smoke subset of the Theorem 1 hostile suite
# (t1_hostile.py; the whole suite: `make t1-hostile`).  Skipped without
# python3, numpy or mpmath.
: "${PYTHON3:=/usr/bin/python3}"
: "${top_srcdir:=.}"
: "${ATTNCHECK:=./attncheck}"
command -v "$PYTHON3" >/dev/null 2>&1 || { echo "python3 not found: skipped"; exit 77; }
exec "$PYTHON3" "$top_srcdir/tests/t1_hostile.py" "$ATTNCHECK" smoke
