#!/bin/sh
# shard_hostile.sh — `make check` smoke subset of the hostile condition
# shards (tests/shard_hostile.py: tampered fields, corrupt files,
# truncations, duplicates, mixed versions, huge counts; the whole set:
# `make check-shard-hostile`).  Seed: SHARD_HOSTILE_SEED.
: "${PYTHON3:=/usr/bin/python3}"
: "${top_srcdir:=.}"
: "${ATTNCHECK:=./attncheck}"
command -v "$PYTHON3" >/dev/null 2>&1 || { echo "python3 not found: skipped"; exit 77; }
exec "$PYTHON3" "$top_srcdir/tests/shard_hostile.py" "$ATTNCHECK" "${SHARD_HOSTILE:-smoke}"
