#!/usr/bin/env python3
"""man_options.py LIBRARY MANDIR — the man page of each command says what its
option table says (attncheck/commands.h: one description per option, from
which the program builds getopt and --help and Python its arguments).

For every command the library describes (ac_commands_describe) and every
option of its table, attncheck-COMMAND(1), section OPTIONS, must have an
entry (.TP) naming the option, with
  - the same value name (.BI \\-\\-tol " T" for arg "T");
  - the table's default, as "default DEF" in the entry's text, when the
    table has one (def_show when it has it);
  - every word of a choice option;
  - the entry under the subsection (.SS) whose first word is the first word
    of the table's group;
and no entry for an option the table does not have (besides -h, --help).
An entry may stand in another section (condition's TRAINED MODELS) when
OPTIONS names the option; the group is then not checked.  Options of the
library only (arrays Python passes where the program reads a directory)
have no entry, but the page names them; the operands of a command
(merge's FILE...) are in its SYNOPSIS, with their value name.
Prints one line per disagreement; exit 1 if any."""
import ctypes
import json
import os
import re
import sys

lib = ctypes.CDLL(sys.argv[1])
lib.ac_commands_describe.restype = ctypes.c_void_p
lib.ac_free.argtypes = [ctypes.c_void_p]
p = lib.ac_commands_describe()
desc = json.loads(ctypes.string_at(p).decode())
lib.ac_free(p)
mandir = sys.argv[2]
bad = 0


def problem(msg):
    global bad
    print("man_options: " + msg)
    bad += 1


def plain(s):
    """troff text as plain text"""
    s = s.replace("\\-", "-").replace("\\(em", "--").replace("\\(en", "-").replace("\\(sc", "§")
    s = re.sub(r"\\f[BIRP]", "", s)
    s = s.replace("\\e", "\\").replace("\\ ", " ").replace("\\&", "")
    return s


def entries(path):
    """[(group, [(option, arg)], text)] of the .TP entries naming options
    (group: the .SS of section OPTIONS, None in another section)"""
    lines = open(path).read().split("\n")
    out, group, i, inopt = [], None, 0, False
    while i < len(lines):
        l = lines[i]
        if l.startswith(".SH"):
            inopt = l.strip() == ".SH OPTIONS"
            group = "" if inopt else None
        elif inopt and l.startswith(".SS"):
            group = plain(l[3:].strip().strip('"'))
        elif l.startswith(".TP"):
            tag = lines[i + 1] if i + 1 < len(lines) else ""
            j, text = i + 2, []
            while j < len(lines) and not re.match(r"\.(TP|SS|SH|PP)\b", lines[j]):
                text.append(lines[j])
                j += 1
            # the tag's words: .BI \-\-x " FILE" or .B \-\-rows or joined ones
            words = re.findall(r'"[^"]*"|\S+', tag)[1:]
            opts, cur = [], None
            for w in words:
                w = plain(w.strip('"'))
                for part in re.split(r",\s*", w):
                    part = part.strip()
                    if part.startswith("--"):
                        cur = [part[2:].split()[0], ""]
                        rest = part[2:].split(None, 1)
                        if len(rest) > 1:
                            cur[1] = rest[1].strip()
                        opts.append(cur)
                    elif part and cur is not None and not cur[1] and not part.startswith("-"):
                        cur[1] = part
            out.append((group, [tuple(o) for o in opts], plain(" ".join(text))))
            i = j
            continue
        i += 1
    return out


for c in desc["commands"]:
    path = os.path.join(mandir, "attncheck-%s.1" % c["name"])
    if not os.path.exists(path):
        problem("%s: no man page %s" % (c["name"], path))
        continue
    ents = entries(path)
    page = plain(open(path).read())
    synopsis = page.split(".SH SYNOPSIS", 1)[-1].split(".SH", 1)[0]
    options = page.split(".SH OPTIONS", 1)[-1].split("\n.SH", 1)[0]
    byopt = {}
    for g, opts, text in ents:
        for name, arg in opts:
            if name not in byopt or g is not None:
                byopt[name] = (g, arg, text)
    group = ""
    table = {o["name"] for o in c["options"]}
    for o in c["options"]:
        if o["group"]:
            group = o["group"]
        where = "attncheck-%s(1) --%s" % (c["name"], o["name"])
        if o.get("library_only"):
            if not re.search(r"\b%s\b" % re.escape(o["python"]), page):
                problem("%s: the page does not name the library's %r"
                        % (where, o["python"]))
            continue
        if o.get("operands"):
            if not re.search(re.escape(o["arg"] or "") + r"\b", synopsis):
                problem("%s: the operands %r are not in the SYNOPSIS" % (where, o["arg"]))
            continue
        if o["name"] not in byopt:
            problem("%s: no entry in OPTIONS" % where)
            continue
        g, arg, text = byopt[o["name"]]
        if (o["arg"] or "") != arg:
            problem("%s: value named %r, the table says %r" % (where, arg, o["arg"] or ""))
        d = o.get("default_show") or o["default"]
        if d is not None and o["kind"] != "flag":
            shown = [d] + ([o["default"]] if o["default"] != d else [])
            if not any(re.search(r"default\s+" + re.escape(x), text) for x in shown):
                problem("%s: the text does not say 'default %s'" % (where, d))
        for ch in o.get("choices") or []:
            if not re.search(r"\b%s\b" % re.escape(ch), text):
                problem("%s: the text does not name the choice %r" % (where, ch))
        if g is None:
            if not re.search(r"--%s\b" % re.escape(o["name"]), options):
                problem("%s: its entry is outside OPTIONS, which does not name it" % where)
        elif group and g.split()[0].lower() != group.split()[0].strip(":").lower():
            problem("%s: under .SS %r, the table's group is %r" % (where, g, group.split("\n")[0]))
    for name in byopt:
        if name not in table and name != "help":
            problem("attncheck-%s(1): an entry for --%s, which the command does not have"
                    % (c["name"], name))
sys.exit(1 if bad else 0)
