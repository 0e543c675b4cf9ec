# SPDX-License-Identifier: MIT
import json
import os
import pathlib
import sys
import tempfile

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from harness import Server  # noqa: E402

from framework import Framework  # noqa: E402
from mcp_peers import config  # noqa: E402
from pg import Postgres  # noqa: E402
import stores  # noqa: E402

APPS = pathlib.Path(__file__).resolve().parent / "apps"


@pytest.fixture(scope="session")
def apps_dir():
    return APPS


@pytest.fixture(scope="module")
def server():
    s = Server("--pool-size", "4", definitions=APPS)
    yield s
    s.stop()


@pytest.fixture
def make_server():
    started = []

    def make(*args, **kw):
        kw.setdefault("definitions", APPS)
        s = Server(*args, **kw)
        started.append(s)
        return s

    yield make
    for s in started:
        s.stop()


@pytest.fixture
def framework():
    fw = Framework()
    for path in (APPS / "testapp" / "handlers").iterdir():
        fw.add("testapp", "handlers/" + path.name, path.read_bytes())
    yield fw
    fw.close()


@pytest.fixture(scope="module")
def mcp_config():
    """An --mcp-config file naming the test MCP servers of mcp_peers.config()."""
    cfg = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump(config(), cfg)
    cfg.close()
    yield cfg.name
    os.unlink(cfg.name)


@pytest.fixture(scope="session")
def postgres():
    """One PostgreSQL server for the whole run (tests/pg.py); each module takes a database."""
    pg = Postgres()
    yield pg
    pg.close()


@pytest.fixture(scope="module", params=["dir", "postgresql"])
def store(request):
    """A module that uses it runs once with the state directory, once with PostgreSQL."""
    s = stores.make(request.param,
                    request.getfixturevalue("postgres") if request.param != "dir" else None)
    yield s
    s.close()
