#!/bin/sh
# fmt_outward.sh — printed certified bounds are rounded outward
# (tests/fmt_outward.py: ac_fmt_lo / ac_fmt_hi against Python's exact
# decimal arithmetic on doubles across the whole range).
: "${PYTHON3:=/usr/bin/python3}"
: "${top_srcdir:=.}"
command -v "$PYTHON3" >/dev/null 2>&1 || { echo "python3 not found: skipped"; exit 77; }
tool="${top_builddir:-.}/tests/fmt_tool"
[ -x "$tool" ] || { echo "fmt_outward: $tool not built" >&2; exit 99; }
exec "$PYTHON3" "$top_srcdir/tests/fmt_outward.py" "$tool" "${ATTNCHECK:-./attncheck}"
