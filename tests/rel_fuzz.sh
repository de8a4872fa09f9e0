#!/bin/sh
# rel_fuzz.sh — the fuzz harnesses of tests/fuzz/ (the .npy reader, the JSON
# reader, a checkpoint's config.json, the safetensors reader and its
# sharded index) on their seed corpus: replayed by the
# build's compiler always, and, when `make fuzz-build` has built the
# libFuzzer programs (clang), a smoke of FUZZ_SMOKE_RUNS mutated inputs each
# under ASan and UBSan.  The longer run is `make fuzz` (tests/fuzz/README).
set -u
: "${top_srcdir:=.}"
: "${top_builddir:=.}"
: "${FUZZ_SMOKE_RUNS:=3000}"
fail=0
for t in npy json ckconfig safetensors stindex; do
    corpus="$top_srcdir/tests/fuzz/corpus/$t"
    out=$("$top_builddir/tests/fuzz/replay_$t" "$corpus" 2>&1) || { echo "rel_fuzz: replay_$t failed: $out" >&2; fail=1; continue; }
    echo "replay_$t: $out"
    [ "$out" != "0 inputs" ] || { echo "rel_fuzz: empty corpus $corpus" >&2; fail=1; }
    f="$top_builddir/tests/fuzz/fuzz_$t"
    if [ -x "$f" ]; then
        w=$(mktemp -d "${TMPDIR:-/tmp}/rel_fuzz.XXXXXX") || exit 99
        cp "$corpus"/* "$w"/
        if "$f" -runs="$FUZZ_SMOKE_RUNS" -seed=1 "$w" >"$w.log" 2>&1; then
            echo "fuzz_$t: $(sed -n 's/^#\([0-9]*\).*DONE.*/\1/p' "$w.log" | tail -1) inputs (libFuzzer smoke), no finding"
        else
            tail -30 "$w.log" >&2; echo "rel_fuzz: fuzz_$t found a failure" >&2; fail=1
        fi
        rm -rf "$w" "$w.log"
    fi
done
exit $fail
