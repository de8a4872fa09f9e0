#!/bin/sh
# proofs.sh — `make check` wrapper for proofs.py (skipped without python3).
: "${PYTHON3:=/usr/bin/python3}"
: "${top_srcdir:=.}"
command -v "$PYTHON3" >/dev/null 2>&1 || { echo "python3 not found: skipped"; exit 77; }
exec "$PYTHON3" "$top_srcdir/tests/proofs.py"
