#!/bin/sh
# mklinks.sh — the man link pages of the library's section-3 pages, so that
# `man ac_npy_read` finds ac_npy(3): for every name of a page (the names of
# its NAME section, the functions and types its SYNOPSIS declares, the names it sets
# in bold on a line of their own), a page NAME.3 holding the one line
# ".so man3/PAGE.3".  A name that is itself a page gets no link; a name of
# several pages links to the first that lists it in its NAME section, else
# to the first that declares it, else to the first that sets it in bold.
#
#   mklinks.sh DIR PAGE.3...   write the link pages into DIR
#   mklinks.sh -l PAGE.3...    print "NAME PAGE" per link page, write nothing
set -u
list=0
if [ "${1:-}" = -l ]; then list=1; shift; else dir=${1:?usage: mklinks.sh DIR PAGE.3...}; shift; fi
# "NAME PAGE PASS" per name, PASS 1 from NAME sections, 2 from SYNOPSIS
for m in "$@"; do
    p=$(basename "$m" .3)
    sed -n '/^\.SH NAME/,/^\.SH/{/^\.SH/d;p;}' "$m" | sed 's/\\-.*//' | tr ',' '\n' |
        tr -d ' \t' | grep -E '^ac_[a-z0-9_]+$' | sed "s/\$/ $p 1/"
    sed -n '/^\.SH SYNOPSIS/,/^\.SH/p' "$m" | grep -E '^\.BI? ' |
        grep -oE '[ *]ac_[a-z0-9_]+\(' | tr -d ' *(' | sed "s/\$/ $p 2/"
    sed -n '/^\.SH SYNOPSIS/,/^\.SH/p' "$m" | grep -oE '^} *ac_[a-z0-9_]+;' |
        tr -d '}; ' | sed "s/\$/ $p 2/"   # the types it defines
    # names the page sets in bold alone or before a comma (not "name (3)",
    # a reference to another page), as the list of the _ref variants
    grep -E '^\.BR? ac_[a-z0-9_]+( ,)?$' "$m" | awk '{ print $2 }' | sed "s/\$/ $p 3/"
done | awk -v pages=" $(for m in "$@"; do basename "$m" .3; done | tr '\n' ' ')" '
    { if (index(pages, " " $1 " ")) next                 # a page of its own
      if (!($1 in best) || $3 < pass[$1]) { best[$1] = $2; pass[$1] = $3 } }
    END { for (n in best) print n, best[n] }' | sort |
while read -r name page; do
    if [ "$list" = 1 ]; then
        echo "$name $page"
    else
        echo ".so man3/$page.3" > "$dir/$name.3" || exit 1
    fi
done
