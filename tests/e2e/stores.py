# SPDX-License-Identifier: MIT
"""The two backends of the state store as the suites see them (conftest.py's `store` fixture
runs a module against each): the options that give a sandboxd that store, and what the store
holds, read behind sandboxd's back (the files of the state directory, the rows of the
database), so that a test can check what was really kept."""
import os
import pathlib
import shutil
import tempfile

KINDS = {"memory": 0, "tools": 1, "files": 2, "runs": 3}

# Session code that rewrites 20 memories as fast as it can, each a body with the checksum of
# that very body (the tests kill sandboxd under it), and code that lists the memories whose
# body and checksum disagree: (count, [keys]).
WRITER = """
import hashlib
i = 0
while True:
    body = ("%06d" % i) * (2000 + 97 * (i % 50))
    save_memory("m%d" % (i % 20), {"i": i, "body": body,
                                   "sum": hashlib.sha256(body.encode()).hexdigest()})
    i += 1
"""

CHECK = """
import hashlib
bad = []
for m in list_memories():
    v = load_memory(m["key"])
    if v is None or hashlib.sha256(v["body"].encode()).hexdigest() != v["sum"]:
        bad.append(m["key"])
(len(list_memories()), bad)
"""



class DirStore:
    name = "dir"

    def __init__(self):
        self.state_dir = pathlib.Path(tempfile.mkdtemp(prefix="sandboxd-state-"))

    def args(self):
        return ["--state-dir", str(self.state_dir)]

    def _dir(self, ws, kind, tenant=None):
        base = self.state_dir / "tenants" / tenant if tenant else self.state_dir
        return base / "workspaces" / ws / kind

    def items(self, ws, kind, tenant=None):
        """{stored name: bytes} of a workspace's items of kind (memory, tools, files, runs)."""
        d = self._dir(ws, kind, tenant)
        if not d.is_dir():
            return {}
        return {p.name: p.read_bytes() for p in d.iterdir()
                if not p.name.startswith(".") and p.is_file()}

    def memory_doc(self, ws, key, tenant=None):
        """The stored document of memory key (bytes), or None."""
        import json
        for data in self.items(ws, "memory", tenant).values():
            if json.loads(data).get("key") == key:
                return data
        return None

    def bytes(self, ws, kind, tenant=None):
        return sum(len(v) for v in self.items(ws, kind, tenant).values())

    def close(self):
        shutil.rmtree(self.state_dir, ignore_errors=True)


class PgStore:
    name = "postgresql"

    def __init__(self, pg):
        self.pg = pg
        self.db = pg.create_db()

    def args(self):
        return self.pg.store_args(self.db)

    def items(self, ws, kind, tenant=None):
        rows = self.pg.psql(self.db,
                            "SELECT i.name, encode(i.data, 'hex') FROM sandboxd_items i "
                            "JOIN sandboxd_workspaces w ON w.id = i.ws "
                            "WHERE w.tenant = '%s' AND w.name = '%s' AND i.kind = %d"
                            % (tenant or "", ws, KINDS[kind]))
        return {r[0]: bytes.fromhex(r[1]) for r in rows}

    def memory_doc(self, ws, key, tenant=None):
        return self.items(ws, "memory", tenant).get(key)

    def bytes(self, ws, kind, tenant=None):
        return sum(len(v) for v in self.items(ws, kind, tenant).values())

    def close(self):
        pass


def make(kind, postgres=None):
    return DirStore() if kind == "dir" else PgStore(postgres)


def tmpdir():
    d = tempfile.mkdtemp(prefix="sandboxd-state-")
    os.chmod(d, 0o700)
    return d
