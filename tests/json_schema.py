#!/usr/bin/python3
"""Validate attncheck --json output against the schema of its command.

    json_schema.py SCHEMA [FILE]      one JSON document (FILE, or stdin)
    json_schema.py --lines SCHEMA F   every line of a JSON-lines file (train --log)
    json_schema.py --list LIST        each line of LIST is "SCHEMA FILE" (one start-up
                                      of Python for many documents)

SCHEMA is a command (rep-theorem, separate, condition, merge, train,
report) or train-log; the schema is schema/SCHEMA.schema.json under
$top_srcdir (or this file's ../schema).  Besides the schema, the text must
be strict RFC 8259 JSON: no NaN/Infinity tokens, no duplicate keys, and a
JSON-lines file must give each key the same JSON type on every line where
it is not null.  Exit 0 when valid, 1 with one line per problem on stderr.

From Python tests: import json_schema; doc = json_schema.load(text, "separate")
returns the parsed document after validating it (AssertionError if not).
"""
import json
import os
import sys

import jsonschema

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA_DIR = os.path.join(os.environ.get("top_srcdir") or os.path.join(HERE, ".."), "schema")


def _pairs(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise ValueError("duplicate key %r" % k)
        d[k] = v
    return d


def _constant(name):
    raise ValueError("%s is not JSON (non-finite numbers are written null)" % name)


def parse(text):
    """Strict parse: no NaN/Infinity, no duplicate keys."""
    return json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant)


def schema(name):
    with open(os.path.join(SCHEMA_DIR, name + ".schema.json")) as f:
        return json.load(f)


def problems(doc, name):
    """The schema violations of doc as a list of strings (empty: valid)."""
    v = jsonschema.Draft202012Validator(schema(name))
    return ["%s: %s" % ("/".join(str(p) for p in e.absolute_path) or "(top)", e.message)
            for e in sorted(v.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))]


def load(text, name):
    """Parse and validate; raises AssertionError naming the violations."""
    try:
        doc = parse(text)
    except ValueError as e:
        raise AssertionError("%s: not strict JSON: %s" % (name, e))
    errs = problems(doc, name)
    if errs:
        raise AssertionError("%s schema: %s" % (name, "; ".join(errs[:5])))
    return doc


def lo(v):
    """A lower bound as a float: null (not finite, attncheck(1) JSON) is -inf."""
    return float("-inf") if v is None else float(v)


def hi(v):
    """An upper bound as a float: null is +inf (no finite bound certified)."""
    return float("inf") if v is None else float(v)


def _kind(v):
    return {bool: "boolean", int: "number", float: "number", str: "string",
            list: "array", dict: "object"}.get(type(v), "null")


def check_lines(text, name):
    errs, types = [], {}
    for i, line in enumerate(text.splitlines(), 1):
        try:
            row = load(line, name)
        except AssertionError as e:
            errs.append("line %d: %s" % (i, e))
            continue
        for k, v in row.items():
            if v is None:
                continue
            t = _kind(v)
            if types.setdefault(k, t) != t:
                errs.append("line %d: %s is %s, was %s" % (i, k, t, types[k]))
    return errs


def check_file(name, src, lines=False):
    """Problems of one file (stdin for "-") as a list of strings."""
    text = sys.stdin.read() if src == "-" else open(src).read()
    if lines:
        return check_lines(text, name)
    try:
        load(text, name)
        return []
    except AssertionError as e:
        return [str(e)]


def main(argv):
    if len(argv) == 3 and argv[1] == "--list":
        bad = 0
        for entry in open(argv[2]).read().splitlines():
            name, src = entry.split(" ", 1)
            for e in check_file(name, src):
                sys.stderr.write("json_schema.py: %s: %s\n" % (src, e))
                bad = 1
        return bad
    lines = len(argv) > 1 and argv[1] == "--lines"
    args = argv[2:] if lines else argv[1:]
    if not args or len(args) > 2:
        sys.stderr.write(__doc__)
        return 2
    name = args[0]
    src = args[1] if len(args) == 2 else "-"
    errs = check_file(name, src, lines)
    for e in errs:
        sys.stderr.write("json_schema.py: %s: %s\n" % (src, e))
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
