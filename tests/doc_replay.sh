#!/bin/sh
# doc_replay.sh — `make check` wrapper for doc_replay.py: the quick quotes of
# README, doc/*.md and the man pages (tests/doc_quotes.txt; `make check-docs`
# replays the slow ones too).  Skipped without python3.
: "${PYTHON3:=/usr/bin/python3}"
: "${top_srcdir:=.}"
command -v "$PYTHON3" >/dev/null 2>&1 || { echo "python3 not found: skipped"; exit 77; }
exec "$PYTHON3" "$top_srcdir/tests/doc_replay.py" --tier "${DOC_REPLAY_TIER:-quick}"
