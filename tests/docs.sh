#!/bin/sh
# docs.sh — --help, `attncheck help CMD`, the man pages and the README must
# say the same thing: the same commands, and for each command the same options.
set -u
: "${ATTNCHECK:=./attncheck}"
: "${top_srcdir:=.}"
fail=0
err() { printf 'docs: %s\n' "$*" >&2; fail=1; }

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
# the man page of each command agrees with its option table (value names,
# defaults, choices, groups; tests/man_options.py), through the library
lib="${top_builddir:-.}/src/.libs/libattncheck.so"
if [ -f "$lib" ] && [ -n "${PYTHON3:-}" ]; then
    asan=$(ldd "$lib" 2>/dev/null | sed -n 's/.*libasan[^ ]* => \([^ ]*\) .*/\1/p' | head -1)
    LD_PRELOAD="${asan:-${LD_PRELOAD:-}}" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
        "$PYTHON3" "$top_srcdir/tests/man_options.py" "$lib" "$top_srcdir/man" >&2 || fail=1
fi
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

# ---- the mathematics document -------------------------------------------
# doc/mathematics.md is cited as "doc/mathematics.md §3.4" (man pages write
# \(sc3.4; plain ASCII may write "section 3.4"), also in lists "§3.4, §3.5",
# "§3.4 and §3.5" and ranges "§4.4-§4.6", "§4.4–§4.6" (man: \(sc4.4\(en\(sc4.6),
# "§5.2-5.6".  Checked: (c) its numbering is consecutive, (a) every reference
# names a heading that exists, (b) nothing cites the old private notes.
mdoc="$top_srcdir/doc/mathematics.md"
if [ ! -f "$mdoc" ]; then
    err "$mdoc is missing"
else
    # (c) "## N Title" are 1, 2, 3, ...; "### N.M Title" under "## N" are N.1, N.2, ...
    bad=$(awk '
        /^## [0-9]/  { top++; sub_ = 0
                       if ($2 != top) printf "%d: section %s, expected %d\n", NR, $2, top }
        /^### [0-9]/ { sub_++
                       if ($2 != top "." sub_) printf "%d: section %s, expected %d.%d\n", NR, $2, top, sub_ }
        END          { if (top == 0) print "0: no numbered sections" }' "$mdoc")
    [ -z "$bad" ] || err "section numbers of $mdoc are not consecutive:
$(printf '%s\n' "$bad" | sed "s|^|    doc/mathematics.md:|")"
    secs=$(sed -n 's/^###* \([0-9][0-9.]*\) .*/\1/p' "$mdoc" | tr '\n' ' ')
    # (a) references; the files are those that carry the project's words
    files=$(cd "$top_srcdir" && grep -rlI 'mathematics\.md' src man README proofs tests examples bench doc \
                2>/dev/null | sort)
    for f in $files; do
        sed -e 's/\\(sc/@/g' -e 's/\\\[sc\]/@/g' -e 's/§/@/g' -e 's/[Ss]ections* /@/g' \
            -e 's/\\(en/-/g' -e 's/\\-/-/g' \
            "$top_srcdir/$f" | awk -v file="$f" -v secs="$secs" '
        BEGIN { n = split(secs, a, " "); for (i = 1; i <= n; i++) ok[a[i]] = 1 }
        function check(ref, line) {
            if (!(ref in ok)) { printf "docs: %s:%d: mathematics.md §%s: no such section in doc/mathematics.md\n", file, line, ref; bad = 1 }
        }
        # parse "@N.M[-@N.M][, @N.M | and @N.M]..." at the start of s
        function refs(s, line,    r) {
            if (!match(s, /^[ \t]*[(,:]?[ \t]*@[ \t]*[0-9]+(\.[0-9]+)?/)) return 0
            for (;;) {
                r = substr(s, RSTART, RLENGTH); s = substr(s, RSTART + RLENGTH)
                sub(/^[^0-9]*/, "", r); check(r, line)
                if (match(s, /^[ \t]*(-|–|to)[ \t]*@?[ \t]*[0-9]+(\.[0-9]+)?/)) continue
                if (match(s, /^[ \t]*(,|and|, and|,and)[ \t]*@[ \t]*[0-9]+(\.[0-9]+)?/)) continue
                return 1
            }
        }
        {
            s = $0
            if (pending) { refs(s, FNR - 1); pending = 0 }
            while ((p = index(s, "mathematics.md")) > 0) {
                s = substr(s, p + 14)
                if (s ~ /^[ \t]*$/) pending = 1   # the section may open the next line
                else refs(s, FNR)
            }
        }
        END { exit bad }' >&2 || fail=1
    done
fi
# ---- the claims register (doc/mathematics.md §9) -------------------------
# Every statement in §9 labelled "measured" names the command that shows it
# ("measured: `attncheck CMD ...`", several allowed), and every command the
# register quotes exists with the options it uses; every proofs/*.md file
# has a subsection of the register naming it.
if [ -f "$mdoc" ]; then
    reg=$(sed -n '/^## 9 Claims register/,/^## [0-9]/p' "$mdoc")
    if [ -z "$reg" ]; then
        err "doc/mathematics.md has no '## 9 Claims register'"
    else
        # lines (joined per list item) that say measured: must hold a command
        items=$(printf '%s\n' "$reg" | awk '/^- /{ if (it != "") print it; it = $0; next }
                                             /^  /{ it = it " " $0; next }
                                             { if (it != "") print it; it = "" }
                                             END { if (it != "") print it }')
        printf '%s\n' "$items" | grep 'measured' | grep -v 'measured: `attncheck ' |
            grep -v '^- \*\*measured\*\*' | grep -v 'not proved\|measured (reference\|measured (20 000\|(reference simulations' |
            while IFS= read -r l; do
                printf 'docs: doc/mathematics.md §9: measured without a command: %.100s\n' "$l" >&2
                echo x
            done | grep -q x && fail=1
        printf '%s\n' "$reg" | tr '\n' ' ' | grep -o '`attncheck [^`]*`' | tr -d '`' | sort -u > /tmp/docs-reg.$$
        while IFS= read -r c; do
            sub=$(printf '%s\n' "$c" | awk '{ print $2 }')
            if ! printf '%s\n' $cmds | grep -qx -- "$sub"; then
                err "doc/mathematics.md §9 quotes '$c': no command '$sub'"
                continue
            fi
            ho=$(opts_help "$sub")
            for o in $(printf '%s\n' "$c" | grep -o -- '--[a-z][a-z0-9-]*'); do
                printf '%s\n' "$ho" | grep -qx -- "$o" ||
                    err "doc/mathematics.md §9 quotes '$c': '$sub' has no option $o"
            done
        done < /tmp/docs-reg.$$
        rm -f /tmp/docs-reg.$$
        for pf in "$top_srcdir"/proofs/*.md; do
            printf '%s\n' "$reg" | grep -q "proofs/$(basename "$pf")" ||
                err "the claims register (doc/mathematics.md §9) does not cover proofs/$(basename "$pf")"
        done
        # every section of §1-§8 that proves something (a lemma, a
        # proposition, a proof's ∎) is cited in the register, and every lemma
        # it names ("*Lemma X.*") is listed by name
        body=$(sed '/^## 9 Claims register/,$d' "$mdoc")
        for s in $(printf '%s\n' "$body" | awk '/^## / { sec = "" } /^### [0-9]/ { sec = $2 }
                /Lemma [A-Z]|Proposition|∎|\*Proof/ { if (sec != "") print sec }' | sort -u); do
            printf '%s\n' "$reg" | grep -q "§$s\([^0-9]\|\$\)" ||
                err "doc/mathematics.md §$s proves something but the claims register (§9) does not cite §$s"
        done
        for l in $(printf '%s\n' "$body" | grep -o '\*Lemma [A-Z][A-Za-z]*\.' | sed 's/^\*Lemma //; s/\.$//' | sort -u); do
            printf '%s\n' "$reg" | tr '\n' ' ' | grep -q "Lemma[s]* \([A-Z], \)*\([A-Z] and \)*$l\b\|Lemmas [A-Z, ]*and $l\b" ||
                err "doc/mathematics.md states Lemma $l but the claims register (§9) does not list it"
        done
    fi
fi
# ---- the file map of each module (README, Layout) ------------------------
# Every folder src/M/ of the library has one private header whose opening
# comment says "Files of src/M/" and names every file that src/M/local.mk
# lists (a unit program src/M/test/NAME by its source NAME.c); a module of
# one source file (src/ffi) needs none, and src/cli lists its files by
# command in its local.mk.  Checked both ways: every file of the local.mk is in the
# map, and every file the map names without a folder exists in src/M/ or
# src/M/test/.
for mk in "$top_srcdir"/src/*/local.mk; do
    d=$(dirname "$mk"); m=$(basename "$d")
    [ "$m" = cli ] && continue
    maps=$(grep -l "Files of src/$m/" "$d"/*.h 2>/dev/null)
    nmaps=$(printf '%s' "$maps" | grep -c .)
    # the files of the module, @@, its local.mk, @@, the map's opening comment
    { (cd "$d" && ls *.[ch] test/*.[ch] 2>/dev/null); echo @@; cat "$mk"; echo @@
      [ "$nmaps" -eq 1 ] && sed -n '1,/\*\//p' "$maps"; } |
    awk -v m="$m" -v nmaps="$nmaps" -v map="src/$m/$(basename "${maps:-none}")" '
        /^@@$/ { part++; next }
        part == 0 { have[$0] = 1; next }
        part == 1 {
            s = $0
            while (match(s, "src/" m "/[A-Za-z0-9_./-]*")) {
                f = substr(s, RSTART + length(m) + 5, RLENGTH - length(m) - 5)
                s = substr(s, RSTART + RLENGTH)
                if (f ~ /^test\/[A-Za-z0-9_]+$/)
                    f = f ".c"                # a unit program: its source
                if (f ~ /[.][ch]$/) { listed[f] = 1; nl++ }
            }
            next
        }
        { text = text "\n" $0
          s = " " $0
          while (match(s, "[ (,][A-Za-z0-9_]+[.][ch]([^A-Za-z0-9_]|$)")) {
              f = substr(s, RSTART + 1, RLENGTH - 1); sub(/[^A-Za-z0-9_]$/, "", f)
              if (!(f in have) && !(("test/" f) in have))
                  printf "docs: the file map in %s names %s: not in src/%s/\n", map, f, m
              s = substr(s, RSTART + RLENGTH)
          } }
        END {
            if (nl < 2) exit 0        # one source file: no map needed
            if (nmaps != 1) {
                printf "docs: src/%s: %d headers carry the file map (\"Files of src/%s/\"), expected one\n", m, nmaps, m
                exit 1
            }
            bad = 0
            for (f in listed) {
                b = f; sub(/.*\//, "", b); gsub(/[.]/, "[.]", b)
                if (text !~ ("(^|[^A-Za-z0-9_./-])" b "([^A-Za-z0-9_]|$)")) {
                    printf "docs: src/%s/%s (in src/%s/local.mk) is missing from the file map in %s\n", m, f, m, map
                    bad = 1
                }
            }
            exit bad
        }' >&2 || fail=1
done

# ---- no include circles ------------------------------------------------------
# #include "..." resolved as the compiler does (the including file's folder,
# then src/, then tests/); a file that includes itself through others is a
# circle, named with its path.
circles=$(cd "$top_srcdir" && ls src/*/*.[ch] src/*/test/*.[ch] tests/*.[ch] 2>/dev/null | awk '
    function visit(u,    a, n, i, v, j, s) {
        state[u] = 1; stack[++sp] = u
        n = split(adj[u], a, " ")
        for (i = 1; i <= n; i++) {
            v = a[i]
            if (state[v] == 1) {
                s = v
                for (j = sp; j >= 1 && stack[j] != v; j--) s = stack[j] " -> " s
                print v " -> " s
            } else if (!state[v])
                visit(v)
        }
        sp--; state[u] = 2
    }
    { have[$0] = 1; files[++nf] = $0 }
    END {
        for (k = 1; k <= nf; k++) {
            f = files[k]; dir = f; sub(/\/[^\/]*$/, "", dir)
            while ((getline line < f) > 0) {
                if (line !~ /^[ \t]*#[ \t]*include[ \t]*"/) continue
                inc = line; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
                if ((dir "/" inc) in have) c = dir "/" inc
                else if (("src/" inc) in have) c = "src/" inc
                else if (("tests/" inc) in have) c = "tests/" inc
                else continue
                adj[f] = adj[f] " " c
            }
            close(f)
        }
        for (k = 1; k <= nf; k++) if (!state[files[k]]) visit(files[k])
    }')
[ -z "$circles" ] || err "include circles:
$(printf '%s\n' "$circles" | sed 's/^/    /')"

# (b) the private notes the project used to cite are not part of it
old=$(printf 'MATH\056md')
# tracked files when top_srcdir is a git work tree (not, e.g., the unpacked
# tarball of `make distcheck` below one), every text file otherwise
gtop=$(git -C "$top_srcdir" rev-parse --show-toplevel 2>/dev/null)
if [ -n "$gtop" ] && [ "$(cd "$gtop" && pwd -P)" = "$(cd "$top_srcdir" && pwd -P)" ]; then
    cites=$(git -C "$top_srcdir" grep -nI -F "$old" -- . 2>/dev/null)
else
    cites=$(cd "$top_srcdir" && grep -rnIF --exclude-dir=.git --exclude-dir=autom4te.cache "$old" . 2>/dev/null)
fi
[ -z "$cites" ] || err "$(printf '%s\n' "$cites" | wc -l) line(s) still cite $old (cite doc/mathematics.md §N.M):
$(printf '%s\n' "$cites" | cut -c1-160 | sed 's/^/    /')"
exit $fail
