#!/usr/bin/env python3
"""proofs.py — replay every command of proofs/*.md and compare its verdict.

Each proof step is followed by a fenced block tagged `attncheck`:

    ```attncheck
    attncheck rep-theorem --example paper --trace
    # expect: REFUTED
    # claim: <text of the claim the verdict is about>
    # evidence: certified
    # match: rho = .* in \\[0\\.777, 0\\.777\\]
    # measured: E log k (\\S+) \\(([-+.0-9]+), se ([.0-9]+)\\) => abs(g2) <= 3 * g3
    ```

The first line is the command.  Checked exactly:
  `# expect:`   the verdict (PROVED / REFUTED / UNDECIDED): the exit status
                0 / 1 / 2, and the verdict the output prints (the `verdict`
                line of the text output, or the "verdict" of a JSON object)
                must be that word;
  `# claim:`    (optional) literal text that the output's verdict line (or
                the line after it) must contain: the step's claim is the
                claim the tool decided;
  `# evidence:` (optional) `certified` (the step's statement is the verdict
                or a certified enclosure) or `measured` (a statement about a
                distribution, supported by sample statistics; then at least
                one `# measured:` line must give its tolerance);
  `# match:`    a regular expression that must occur in the standard output;
  `# measured:` REGEX => EXPR: REGEX must match, its groups are read as
                numbers g1, g2, ... and the Python expression EXPR (abs, min,
                max allowed) must be true — a tolerance stated from the
                printed standard errors, never a range hidden in a regex.
Commands run in a scratch directory.
"""
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

EXIT = {"PROVED": 0, "REFUTED": 1, "UNDECIDED": 2}


def blocks(text):
    for m in re.finditer(r"^```attncheck\n(.*?)^```", text, re.S | re.M):
        lines = [l for l in m.group(1).splitlines() if l.strip()]
        yield text[: m.start()].count("\n") + 1, lines


def field(lines, key):
    return [l.split(":", 1)[1].strip() for l in lines[1:] if l.startswith("# %s:" % key)]


def printed_verdict(out):
    """The verdict line of a text output (and the line after it), or the
    verdict of a JSON object; None if the output states none."""
    ls = out.splitlines()
    for i, l in enumerate(ls):
        if re.match(r"^verdict\s", l):
            return l.split()[1].rstrip(":"), l + "\n" + (ls[i + 1] if i + 1 < len(ls) else "")
    try:
        j = json.loads(out)
        if isinstance(j, dict) and "verdict" in j:
            return j["verdict"], json.dumps(j.get("claim", ""))
    except ValueError:
        pass
    return None, ""


def check_block(lines, expect, out):
    """The exact checks of one block besides the exit status and `# match:`."""
    problems = []
    verdict, vline = printed_verdict(out)
    if verdict is not None and verdict != expect:
        problems.append("prints verdict %s, expected %s" % (verdict, expect))
    for c in field(lines, "claim"):
        if verdict is None or c not in vline:
            problems.append("the verdict is not about the claim '%s' (verdict line: %s)"
                            % (c, vline.strip() or "none"))
    ev = field(lines, "evidence")
    measured = field(lines, "measured")
    if len(ev) > 1 or (ev and ev[0] not in ("certified", "measured")):
        problems.append("'# evidence:' must be given once, certified or measured")
    if ev == ["measured"] and not measured:
        problems.append("evidence measured without a '# measured:' tolerance")
    if ev == ["certified"] and measured:
        problems.append("evidence certified with '# measured:' lines")
    for m in measured:
        if " => " not in m:
            problems.append("malformed '# measured: REGEX => EXPR': %s" % m)
            continue
        rx, expr = m.rsplit(" => ", 1)
        hit = re.search(rx, out, re.M)
        if not hit:
            problems.append("output does not match /%s/" % rx)
            continue
        env = {"g%d" % (i + 1): float(g) for i, g in enumerate(hit.groups())}
        env.update(abs=abs, min=min, max=max)
        try:
            ok = eval(expr, {"__builtins__": {}}, env)
        except Exception as e:  # a malformed expression is a failure too
            ok = False
            problems.append("cannot evaluate %s: %s" % (expr, e))
        if not ok:
            problems.append("measured %s with %s: %s is false" % (rx, env, expr))
    return problems


def main():
    top = os.environ.get("top_srcdir", ".")
    exe = os.path.abspath(os.environ.get("ATTNCHECK", "./attncheck"))
    files = sys.argv[1:] or sorted(
        os.path.join(top, "proofs", f) for f in os.listdir(os.path.join(top, "proofs"))
        if f.endswith(".md"))
    failures = total = 0
    with tempfile.TemporaryDirectory() as tmp:
        for path in files:
            text = open(path, encoding="utf-8").read()
            for line, lines in blocks(text):
                total += 1
                cmd = shlex.split(lines[0])
                expect = [l.split(":", 1)[1].strip() for l in lines[1:] if l.startswith("# expect:")]
                matches = [l.split(":", 1)[1].strip() for l in lines[1:] if l.startswith("# match:")]
                where = "%s:%d" % (os.path.basename(path), line)
                if not cmd or cmd[0] != "attncheck" or len(expect) != 1 or expect[0] not in EXIT:
                    print("%s: malformed block (command, then one '# expect: VERDICT')" % where)
                    failures += 1
                    continue
                p = subprocess.run([exe] + cmd[1:], cwd=tmp, capture_output=True, text=True)
                problems = []
                if p.returncode != EXIT[expect[0]]:
                    problems.append("exit status %d, expected %d (%s)"
                                    % (p.returncode, EXIT[expect[0]], expect[0]))
                problems += check_block(lines, expect[0], p.stdout)
                for rx in matches:
                    if not re.search(rx, p.stdout, re.M):
                        problems.append("output does not match /%s/" % rx)
                if problems:
                    failures += 1
                    print("FAIL %s: %s" % (where, " ".join(cmd)))
                    for pr in problems:
                        print("    " + pr)
                    print("    stdout: " + p.stdout.replace("\n", "\n            ")[:3000])
                    if p.stderr:
                        print("    stderr: " + p.stderr.strip()[:1000])
                else:
                    print("ok   %s: %s -> %s" % (where, " ".join(cmd), expect[0]))
    print("%d of %d proof commands replayed as documented" % (total - failures, total))
    if total == 0:
        print("no proof commands found")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
