# SPDX-License-Identifier: MIT
"""The Python side of sandboxd: everything that runs inside the jail.

Never trusted by the host: every message it sends is parsed with limits and
validated in C. Never trusts the code it runs: user code only ever runs in a
process that has already shed every privilege.
"""
