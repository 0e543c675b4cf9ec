# SPDX-License-Identifier: MIT
"""These tests change the cgroups of the machine they run on (they move every process of
their cgroup into a leaf): they run only inside the VM of tests/cgroup2/run.sh."""
import os

import pytest


def pytest_configure(config):
    if not os.environ.get("SANDBOXD_CG2_OUT"):
        raise pytest.UsageError("tests/cgroup2 runs inside its VM: use tests/cgroup2/run.sh "
                                "(make test-cgroup2)")
