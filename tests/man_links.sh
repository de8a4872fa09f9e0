#!/bin/sh
# man_links.sh — every public function of the library has a man link page
# (man/mklinks.sh): `man ac_npy_read` shows ac_npy(3).  Checked on the pages
# made by the build (man/links/) and on a DESTDIR install of them.
set -u
: "${top_srcdir:=.}"
: "${top_builddir:=.}"
fail=0
err() { printf 'man_links: %s\n' "$*" >&2; fail=1; }
links="$top_builddir/man/links"
[ -d "$links" ] || { err "$links is missing (made by 'make all')"; exit 1; }
# the functions of the public headers (as tests/docs.sh finds them), less the
# names the headers define as types
fns=$(cat "$top_srcdir"/src/attncheck/*.h | sed 's#/\*.*\*/##' | grep -oE '\bac_[a-z0-9_]+[[:space:]]*\(' | sed 's/[[:space:](]//g' | sort -u)
types=$(cat "$top_srcdir"/src/attncheck/*.h | grep -oE '}[[:space:]]*ac_[a-z0-9_]+;' | tr -d '}; \t' | sort -u)
n=0
for f in $fns; do
    echo "$types" | grep -qx "$f" && continue
    [ -f "$top_srcdir/man/$f.3" ] && continue        # a page of its own
    l="$links/$f.3"
    if [ ! -f "$l" ]; then err "public function $f has no link page"; continue; fi
    p=$(sed -n 's|^\.so man3/\(.*\)\.3$|\1|p' "$l")
    [ -n "$p" ] && [ -f "$top_srcdir/man/$p.3" ] || { err "$l does not name a page: $(cat "$l")"; continue; }
    # the page it names documents the function
    grep -qw -- "$f" "$top_srcdir/man/$p.3" || err "$l: $p(3) does not mention $f"
    n=$((n + 1))
done
[ "$n" -gt 100 ] || err "only $n link pages checked"
# every link page is one .so line to an existing page, none shadows a page
for l in "$links"/*.3; do
    [ "$(wc -l < "$l")" -eq 1 ] || err "$l is not one line"
    b=$(basename "$l")
    [ -f "$top_srcdir/man/$b" ] && err "$l shadows the page man/$b"
done
# man finds the page through the link, as installed (section 3 of a manpath)
if command -v man >/dev/null 2>&1; then
    tmp=$(mktemp -d) || exit 1
    trap 'rm -rf "$tmp"' EXIT
    mkdir -p "$tmp/man3" && cp "$top_srcdir"/man/ac_*.3 "$links"/*.3 "$tmp/man3/"
    for f in ac_npy_read ac_trainer_step ac_head_certify; do
        out=$(MANWIDTH=80 man -M "$tmp" -P cat 3 "$f" 2>&1)
        echo "$out" | grep -q "$f" || err "man $f: the page does not show $f"
        echo "$out" | grep -q 'SYNOPSIS' || err "man $f: no page shown: $(echo "$out" | head -2)"
    done
    MANWIDTH=80 man -M "$tmp" -P cat 3 ac_npy_read 2>/dev/null | grep -q 'NumPy' ||
        err "man ac_npy_read does not show ac_npy(3)"
fi
exit $fail
