#!/bin/sh
# docs.sh — --help, `attncheck help CMD`, the man pages and the README must
# say the same thing: the same commands, and for each command the same options.
set -u
: "${ATTNCHECK:=./attncheck}"
: "${top_srcdir:=.}"
fail=0
err() { echo "docs: $*" >&2; fail=1; }

opts_help() { "$ATTNCHECK" "$1" --help | grep -o -- '--[a-z][a-z0-9-]*' | sort -u; }
opts_man() { sed 's/\\-/-/g' "$top_srcdir/man/attncheck-$1.1" | grep -o -- '--[a-z][a-z0-9-]*' | sort -u; }

cmds=$("$ATTNCHECK" --help | sed -n '/^Commands:/,/^$/p' | awk 'NR > 1 && NF { print $1 }')
[ -n "$cmds" ] || err "no commands listed by 'attncheck --help'"
for c in $cmds; do
    man="$top_srcdir/man/attncheck-$c.1"
    [ -f "$man" ] || { err "command '$c' has no man page $man"; continue; }
    h=$(opts_help "$c"); m=$(opts_man "$c")
    if [ "$h" != "$m" ]; then
        err "options of '$c' differ between --help and $man:"
        printf '%s\n' "$h" > /tmp/docs-h.$$; printf '%s\n' "$m" > /tmp/docs-m.$$
        diff /tmp/docs-h.$$ /tmp/docs-m.$$ | sed 's/^/    /' >&2
        rm -f /tmp/docs-h.$$ /tmp/docs-m.$$
    fi
    if ! "$ATTNCHECK" help "$c" | cmp -s - /dev/stdin <<EOT
$("$ATTNCHECK" "$c" --help)
EOT
    then err "'attncheck help $c' differs from 'attncheck $c --help'"; fi
    grep -q "^\.B $c\$" "$top_srcdir/man/attncheck.1" || err "attncheck(1) does not list '$c'"
    grep -q "attncheck $c" "$top_srcdir/README" || err "README does not mention 'attncheck $c'"
done
# every function of the public headers is documented in a section-3 page
fns=$(cat "$top_srcdir"/src/attncheck/*.h | sed 's#/\*.*\*/##' | grep -oE '\bac_[a-z0-9_]+[[:space:]]*\(' | sed 's/[[:space:](]//g' | sort -u)
[ -n "$fns" ] || err "no functions found in the public headers"
for f in $fns; do
    grep -qw -- "$f" "$top_srcdir"/man/*.3 || err "public function $f is not documented in man/*.3"
done
# every public header has its page, listed in Makefile.am
for h in "$top_srcdir"/src/attncheck/*.h; do
    b=$(basename "$h" .h)
    grep -q "<attncheck/$b.h>" "$top_srcdir"/man/*.3 || err "header attncheck/$b.h has no section-3 page"
done
for m in "$top_srcdir"/man/*.[13]; do
    grep -q "man/$(basename "$m")" "$top_srcdir/Makefile.am" || err "$m is not in dist_man_MANS"
done
# man pages render without warnings (when groff is installed)
if command -v groff >/dev/null 2>&1; then
    for m in "$top_srcdir"/man/*.[13]; do
        w=$(groff -man -ww -z "$m" 2>&1)
        [ -z "$w" ] || err "$m: groff warnings: $w"
    done
fi
# exit status documented identically
for f in "$top_srcdir"/man/attncheck*.1; do
    grep -q "64" "$f" || err "$f does not document the exit status"
done
"$ATTNCHECK" --help | grep -q "0 proved, 1 refuted, 2 undecided, 64 usage error" || err "--help lacks the exit status"
exit $fail
