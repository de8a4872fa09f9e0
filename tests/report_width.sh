#!/bin/sh
# report_width.sh — `attncheck report` prints its table in at most 100
# columns (the instance on a line under its claim), for any seed, and every
# row shows its claim, verdicts, bound and instance.
set -u
: "${ATTNCHECK:=./attncheck}"
fail=0
work=$(mktemp -d "${TMPDIR:-/tmp}/report_width.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
err() { echo "report_width: $*" >&2; fail=1; }
"$ATTNCHECK" report --quick --seed 18446744073709551615 >"$work/t" 2>&1
[ $? -le 2 ] || err "report failed"
"$ATTNCHECK" report --quick --json --seed 18446744073709551615 >"$work/j" 2>&1
w=$(awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$work/t")
[ "$w" -le 100 ] || err "the table is $w columns wide: $(awk 'length($0) > 100' "$work/t" | head -2)"
# each row: its claim line, then its instance indented by 4
"${PYTHON3:-/usr/bin/python3}" - "$work/j" "$work/t" <<'PY' || err "rows missing from the table"
import json, sys
j = json.load(open(sys.argv[1]))
lines = open(sys.argv[2]).read().split('\n')
k = 0
for r in j['rows']:      # in order
    while k < len(lines) and not lines[k].startswith(r['claim'][:36]):
        k += 1
    assert k < len(lines), r['claim']
    assert r['verdict'] in lines[k] and r['expected'] in lines[k], lines[k]
    assert lines[k + 1] == '    ' + r['instance'][:90], (lines[k + 1], r['instance'])
    k += 2
PY
exit $fail
