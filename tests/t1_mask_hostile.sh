#!/bin/sh
# t1_mask_hostile.sh — `make check` smoke subset of the masked Theorem 1
# hostile suite (t1_mask_hostile.py; the whole suite: `make t1-mask-hostile`),
# and the rows n <= 16 of the table of doc/mathematics.md §3.8 replayed
# (t1_mask_table.py).  Skipped without python3, numpy or mpmath.
: "${PYTHON3:=/usr/bin/python3}"
: "${top_srcdir:=.}"
: "${top_builddir:=.}"
: "${T1_MASK_TOOL:=$top_builddir/tests/t1_mask_tool}"
command -v "$PYTHON3" >/dev/null 2>&1 || { echo "python3 not found: skipped"; exit 77; }
"$PYTHON3" "$top_srcdir/tests/t1_mask_table.py" "$T1_MASK_TOOL" --check \
    "$top_srcdir/doc/mathematics.md" 8 16 || exit 1
exec "$PYTHON3" "$top_srcdir/tests/t1_mask_hostile.py" "$T1_MASK_TOOL" smoke
