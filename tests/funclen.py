#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Functions that fit on a screen: no function defined in src/ may be longer than
MAX_LINES lines, counted from the first line of its definition (return type and
name) through its closing brace, as an editor shows it. Prints every function
over the limit with its file, line and length, longest first.

The C sources are clang-format'ed in the Linux brace style (.clang-format): a
function's body opens with "{" alone at column 0 and closes with "}" alone at
column 0, and nothing else does (an initializer's brace ends the line that
starts it), which is what this check reads.

Usage: tests/funclen.py [--json RESULT_FILE] [--list N] [SRC_DIR]
       tests/funclen.py --self-test   (the check finds a planted long function)
--list N prints the N longest functions whatever their length.
Exit status 0 when every function fits, 1 otherwise."""
import json
import os
import re
import sys
import tempfile

MAX_LINES = 120

NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def functions(path):
    """Yield (name, first_line, length) for each function defined in the file at path."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        if lines[i] != "{":
            i += 1
            continue
        # The signature: the lines above the brace back to one that ends a declaration, a
        # comment, a preprocessor line or a blank line.
        start = i
        while start > 0:
            above = lines[start - 1]
            if (not above.strip() or above.rstrip().endswith((";", "}", "*/"))
                    or above.lstrip().startswith(("#", "//", "/*", "*"))):
                break
            start -= 1
        m = NAME.search(" ".join(lines[start:i]))
        end = i + 1
        while end < len(lines) and lines[end] != "}":
            end += 1
        if m and end < len(lines):
            yield m.group(1), start + 1, end - start + 1
        i = end + 1


def scan(src):
    """Every function of the .c files under src: [(length, name, rel_path, line)]."""
    found = []
    for dirpath, _, files in os.walk(src):
        for name in sorted(files):
            if not name.endswith(".c"):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, src)
            for fn, line, length in functions(path):
                found.append((length, fn, rel, line))
    found.sort(key=lambda f: (-f[0], f[2], f[3]))
    return found


def check(src, out=sys.stdout):
    """Print the functions over MAX_LINES; return how many there are."""
    long = [f for f in scan(src) if f[0] > MAX_LINES]
    for length, fn, rel, line in long:
        print(f"src/{rel}:{line}: {fn} is {length} lines (at most {MAX_LINES}): split it",
              file=out)
    return len(long)


def self_test():
    """Plant a function one line over the limit, one at it and an initializer longer than
    either: only the first may be reported."""
    body = "    x++;\n"
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "a.c"), "w") as f:
            f.write("/* a comment */\nstatic int\nfits(int x)\n{\n" + body * (MAX_LINES - 5)
                    + "    return x;\n}\n\n")
            f.write("static const int table[] = {\n" + "    1,\n" * (2 * MAX_LINES) + "};\n\n")
            f.write("int too_long(int x,\n             int y)\n{\n" + body * (MAX_LINES - 4)
                    + "    return x;\n}\n")
        found = {fn: length for length, fn, _, _ in scan(d)}
        ok = found == {"fits": MAX_LINES, "too_long": MAX_LINES + 1}
        with open(os.devnull, "w") as null:
            ok = ok and check(d, null) == 1
    print("funclen self-test:", "OK" if ok else f"FAIL (found {found})")
    return ok


def main(argv):
    args = argv[1:]
    if args[:1] == ["--self-test"]:
        return 0 if self_test() else 1
    result = None
    if args[:1] == ["--json"]:
        result, args = args[1], args[2:]
    listing = None
    if args[:1] == ["--list"]:
        listing, args = int(args[1]), args[2:]
    src = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                            "src")
    if listing is not None:
        for length, fn, rel, line in scan(src)[:listing]:
            print(f"{length:5d}  {fn}  src/{rel}:{line}")
        return 0
    n = check(src)
    if n == 0:
        print(f"funclen: every function in src/ is at most {MAX_LINES} lines")
    if result:
        with open(result, "w") as f:
            json.dump({"name": f"functions of at most {MAX_LINES} lines (tests/funclen.py)",
                       "result": "OK" if n == 0 else "FAIL"}, f)
    return 1 if n else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
