#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The guide names what exists: every path written in backticks in
docs/internals/HACKING.md (a span with a "/" in it, or a file name such as
`Makefile`, read from the repository's root) must exist; NAME in a path
stands for any name and `*` is a glob, which must match something; a path
ending in "/" must be a folder; and `path:name` must moreover contain name (a
function, table or macro the guide points at). A span starting with "../"
names a file outside the repository, which someone with the repository alone
does not have: it fails. Left out: a span starting with "/" (an HTTP path).
Prints each path that does not hold.

Usage: tests/guide_paths.py [--json RESULT_FILE] [SRC_DIR]   (the guide of SRC_DIR/..)
       tests/guide_paths.py --self-test   (the check finds planted dangling paths)
Exit status 0 when every path exists, 1 otherwise."""
import glob
import os
import re
import sys
import tempfile

import srccheck

GUIDE = os.path.join("docs", "internals", "HACKING.md")
SPAN = re.compile(r"`([^`\n]+)`")
TOKEN = re.compile(r"^([\w./*-]+)(?::(.+))?$")
FILE = re.compile(r"^[\w.-]+\.(?:md|py|c|h|sh|build|yaml|json|mjs)$|^Makefile$")


def references(text):
    """(line number, path, name or None) of every span that is written as a path."""
    for no, line in enumerate(text.splitlines(), 1):
        for span in SPAN.findall(line):
            m = TOKEN.match(span)
            if not m:
                continue
            path, name = m.group(1), m.group(2)
            if path.startswith("/") or not ("/" in path or FILE.match(path)):
                continue
            yield no, path, name


def check_at(root):
    guide = os.path.join(root, GUIDE)
    try:
        with open(guide, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        return ["%s: cannot be read: %s" % (GUIDE, e.strerror)]
    problems = []
    for no, path, name in references(text):
        where = "%s:%d: `%s%s`" % (GUIDE, no, path, ":" + name if name else "")
        if path.startswith("../"):
            problems.append("%s: outside the repository" % where)
            continue
        pattern = os.path.join(root, path.replace("NAME", "*"))
        found = sorted(glob.glob(pattern)) if "*" in pattern else (
            [pattern] if os.path.exists(pattern) else [])
        if not found:
            problems.append("%s: no such path" % where)
        elif path.endswith("/") and not all(os.path.isdir(p) for p in found):
            problems.append("%s: not a folder" % where)
        elif name:
            texts = []
            for p in found:
                if os.path.isfile(p):
                    with open(p, encoding="utf-8", errors="replace") as f:
                        texts.append(f.read())
            word = re.compile(r"(?<![\w])%s(?![\w])" % re.escape(name))
            if not any(word.search(t) for t in texts):
                problems.append("%s: %s is not in it" % (where, name))
    return problems


def check(src):
    return check_at(os.path.dirname(os.path.abspath(src)))


def self_test():
    """A guide in a scratch tree naming a file, a folder, a glob, a NAME and a file:name that
    exist, and one of each that does not; only the second ones may be reported."""
    root = tempfile.mkdtemp(prefix="guide-")
    for rel, text in {"src/a/x.c": "int table_rows[1];\n", "fuzz/fuzz_yaml.c": "",
                      "Makefile": "guide:\n"}.items():
        os.makedirs(os.path.join(root, os.path.dirname(rel)), exist_ok=True)
        with open(os.path.join(root, rel), "w") as f:
            f.write(text)
    os.makedirs(os.path.join(root, "docs", "internals"))
    with open(os.path.join(root, GUIDE), "w") as f:
        f.write("Good: `src/a/x.c`, `src/a/`, `fuzz/fuzz_*.c`, `fuzz/fuzz_NAME.c`,\n"
                "`src/a/x.c:table_rows`, `Makefile:guide`, `/v1/x`, `make test`.\n"
                "Bad: `src/a/y.c`, `src/b/`, `src/a/x.c/`, `fuzz/nope_*.c`, `srcx/a.c`, `../x/Y.md`,\n"
                "`src/a/x.c:table_row`, `Makefile:nothing`.\n")
    problems = "\n".join(check(os.path.join(root, "src")))
    want = ["HACKING.md:3: `src/a/y.c`: no such path", "`src/b/`: no such path",
            "`src/a/x.c/`: no such path", "`fuzz/nope_*.c`: no such path",
            "`srcx/a.c`: no such path", "`../x/Y.md`: outside the repository",
            "HACKING.md:4: `src/a/x.c:table_row`: table_row is not in it",
            "`Makefile:nothing`: nothing is not in it"]
    missing = [w for w in want if w not in problems]
    extra = [line for line in problems.splitlines() if ":1:" in line or ":2:" in line]
    if missing or extra or len(problems.splitlines()) != len(want):
        print("guide self-test FAILED: not reported: %r; wrongly reported: %r\n%s" %
              (missing, extra, problems))
        return 1
    print("guide self-test OK")
    return 0


def main(argv):
    return srccheck.main(argv, "guide paths (%s)" % GUIDE, check, self_test,
                         "guide paths OK: every path %s names exists" % GUIDE)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
