# SPDX-License-Identifier: MIT
"""Entry point of every sandboxed interpreter.

Runs as ``python3 -I -S -B /sandboxd/runtime/boot.py MODE SITE_DIRS [ARGS...]``
inside the jail. Isolated mode gives a sys.path with only the standard
library; this adds the runtime package and the interpreter's site
directories (for jinja2, jsonschema and the libraries user code imports) and
hands over to the mode.
"""
import sys


def _main():
    mode, site_dirs = sys.argv[1], sys.argv[2]
    sys.path.insert(0, "/sandboxd/runtime")
    sys.path.extend(d for d in site_dirs.split(":") if d)
    from sandboxd_runtime import main

    main.run(mode, sys.argv[3:])


_main()
