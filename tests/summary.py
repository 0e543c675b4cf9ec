# SPDX-License-Identifier: MIT
"""Sum up every suite's results into one line: N passed, N failed, N skipped."""
import glob
import json
import os
import sys
import xml.etree.ElementTree as ET

results = sys.argv[1]
passed = failed = skipped = 0
expected = {"format.json", "pyflakes.json", "layers.json", "funclen.json", "http-statuses.json", "guide-paths.json", "unit-release.json", "unit-asan.json", "unit-valgrind.json", "fuzz.json", "e2e.xml",
            "attacks-root.xml", "attacks-rootless.xml", "deploy.xml", "cgroup2.xml",
            "cgroup2-attacks.xml"}
found = set(os.listdir(results))
for name in sorted(expected - found):
    print("suite missing (did not run or crashed): %s" % name)
    failed += 1
for path in glob.glob(os.path.join(results, "*.json")):
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            rec = json.loads(line)
            if rec.get("result") == "OK":
                passed += 1
            elif rec.get("result") == "SKIP":
                skipped += 1
            else:
                failed += 1
                print("FAILED %s: %s" % (os.path.basename(path), rec.get("name")))
for path in glob.glob(os.path.join(results, "*.xml")):
    for case in ET.parse(path).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
            print("FAILED %s: %s::%s" % (os.path.basename(path), case.get("classname"),
                                         case.get("name")))
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
sys.exit(1 if failed else 0)
