#!/bin/sh
# t1_mask_cli.sh — `make check` wrapper for t1_mask_cli.py: rep-theorem
# --mask and --bias from outside (bad masks per class, one mask in many
# spellings, the written weights recomputed by NumPy, the GPT-2 fixture's
# causal head and the numbers doc/mathematics.md §3.8 quotes for it).
# Skipped without python3 or numpy.
: "${PYTHON3:=/usr/bin/python3}"
: "${top_srcdir:=.}"
: "${top_builddir:=.}"
: "${ATTNCHECK:=./attncheck}"
command -v "$PYTHON3" >/dev/null 2>&1 || { echo "python3 not found: skipped"; exit 77; }
exec "$PYTHON3" "$top_srcdir/tests/t1_mask_cli.py" "$ATTNCHECK" "$top_builddir/tests/mh_tool" \
    "$top_srcdir/doc/mathematics.md"
