#!/usr/bin/env python3
"""proofs.py — replay every command of proofs/*.md and compare its verdict.

Each proof step is followed by a fenced block tagged `attncheck`:

    ```attncheck
    attncheck rep-theorem --example paper --trace
    # expect: REFUTED
    # match: rho = .* in \\[0\\.777, 0\\.777\\]
    ```

The first line is the command; `# expect:` gives the verdict it must print
(PROVED / REFUTED / UNDECIDED, checked through the exit status 0 / 1 / 2 and
the text); every `# match:` is a regular expression that must occur in its
standard output.  Commands run in a scratch directory.
"""
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
