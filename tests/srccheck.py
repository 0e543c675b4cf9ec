# SPDX-License-Identifier: MIT
"""The command line the checks of src/ share (tests/layers.py, tests/http_statuses.py):
  SCRIPT [--json RESULT_FILE] [SRC_DIR]   run the check on SRC_DIR (default: the tree's src/)
  SCRIPT --self-test                      run the check's own test
Prints each problem, or ok_text; with --json, writes {"name", "result"} for tests/summary.py.
Exit status 0 when the check holds, 1 otherwise."""
import json
import os
import sys


def main(argv, name, check, self_test, ok_text, fail_text=None):
    if argv[1:] == ["--self-test"]:
        return self_test()
    result = None
    if len(argv) > 2 and argv[1] == "--json":
        result = argv[2]
        argv = [argv[0]] + argv[3:]
    src = argv[1] if len(argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "src")
    problems = check(src)
    for p in problems:
        print(p)
    if not problems:
        print(ok_text)
    elif fail_text:
        print(fail_text % len(problems))
    if result:
        with open(result, "w") as f:
            json.dump({"name": name, "result": "FAIL" if problems else "OK"}, f)
            f.write("\n")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit("a module of tests/layers.py and tests/http_statuses.py, not a script")
