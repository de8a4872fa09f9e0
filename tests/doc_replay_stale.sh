#!/bin/sh
# doc_replay_stale.sh — the replay of the documents' quotes catches a stale
# number: in a copy of the documents, one number README quotes and one that
# doc/mathematics.md quotes are changed, and tests/doc_replay.py must fail
# on each (and pass on the unchanged copy).  Skipped without python3.
: "${PYTHON3:=/usr/bin/python3}"
: "${top_srcdir:=.}"
command -v "$PYTHON3" >/dev/null 2>&1 || { echo "python3 not found: skipped"; exit 77; }
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fail=0
copy() {
    rm -rf "$tmp/root"; mkdir -p "$tmp/root/doc" "$tmp/root/man" "$tmp/root/proofs"
    cp "$top_srcdir/README" "$tmp/root/" && cp "$top_srcdir"/doc/*.md "$tmp/root/doc/" &&
        cp "$top_srcdir"/proofs/*.md "$tmp/root/proofs/" &&
        cp "$top_srcdir"/man/*.[13] "$tmp/root/man/" || exit 99
}
# the quick entries of one document, read from the copy
replay() { "$PYTHON3" "$top_srcdir/tests/doc_replay.py" --root "$tmp/root" --only "$1" > "$tmp/out" 2>&1; }
# the unchanged copy replays (doc_replay.sh checks the same on the tree)
copy
replay README || { echo "FAIL: the unchanged README does not replay"; cat "$tmp/out"; exit 1; }
# plant: FILE, the text, the stale text (each must occur exactly once)
plant() {
    copy
    n=$(grep -c -F -- "$2" "$tmp/root/$1")
    [ "$n" = 1 ] || { echo "FAIL: '$2' occurs $n times in $1 (the planted test is stale)"; fail=1; return; }
    "$PYTHON3" - "$tmp/root/$1" "$2" "$3" <<'PY'
import sys
p, a, b = sys.argv[1:]
s = open(p, encoding="utf-8").read()
open(p, "w", encoding="utf-8").write(s.replace(a, b))
PY
    if replay "$1"; then
        echo "FAIL: $1 with '$3' for '$2' still replays as documented"; fail=1
    elif ! grep -q "^FAIL" "$tmp/out"; then
        echo "FAIL: $1 planted: no FAIL line"; cat "$tmp/out"; fail=1
    else
        echo "ok   $1: '$2' -> '$3' caught: $(grep -A1 '^FAIL' "$tmp/out" | tail -1 | sed 's/^ *//')"
    fi
}
plant README "<= 1.17e-14)" "<= 1.27e-14)"
plant doc/mathematics.md '| `--n 8 --d 4 --dk 2` | 266 | 9.0 |' '| `--n 8 --d 4 --dk 2` | 266 | 12.0 |'
exit $fail
