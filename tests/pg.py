# SPDX-License-Identifier: MIT
"""A real PostgreSQL for the tests and benchmarks of the state store (--state-store): Debian's
server binaries (the `postgresql` package, `make deps`), initdb and pg_ctl in a temporary
directory, run as an unprivileged user (`nobody` when the tests run as root), listening on a
free loopback port. Connections over TCP need the password of the role `sandboxd`
(scram-sha-256), which the tests hand to sandboxd in a file (--state-store-password-file) or
in PGPASSWORD, as an operator would."""
import glob
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import tempfile
import time

from harness import free_port

ROLE = "sandboxd"


def server_bin():
    """The newest installed server's bin directory, e.g. /usr/lib/postgresql/15/bin."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"),
                   key=lambda p: int(p.split("/")[4]))
    if not found:
        raise RuntimeError("PostgreSQL's server is not installed (make deps installs "
                           "the postgresql package)")
    return os.path.dirname(found[-1])


class Postgres:
    """One PostgreSQL server of its own. durable=False (tests) turns off fsync: nothing here
    survives a crash of the host, only of the server, which the page cache covers."""

    def __init__(self, durable=False, settings=()):
        self.bin = server_bin()
        self.dir = tempfile.mkdtemp(prefix="sandboxd-pg-")
        self.data = os.path.join(self.dir, "data")
        self.log = os.path.join(self.dir, "server.log")
        self.password = secrets.token_hex(16)
        self.port = free_port()
        self.user = "nobody" if os.geteuid() == 0 else None
        if self.user:
            pw = pwd.getpwnam(self.user)
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        os.chmod(self.dir, 0o700)
        # A password file only the server's user reads, for initdb.
        pwfile = os.path.join(self.dir, "initdb-password")
        with open(pwfile, "w") as f:
            f.write(self.password + "\n")
        if self.user:
            os.chown(pwfile, pwd.getpwnam(self.user).pw_uid, -1)
        self._run([os.path.join(self.bin, "initdb"), "-D", self.data, "-U", ROLE,
                   "--auth-local=trust", "--auth-host=scram-sha-256", "--pwfile", pwfile,
                   "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"])
        os.unlink(pwfile)
        self.options = ["-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200",
                        "-k", self.dir]
        if not durable:
            self.options += ["-c", "fsync=off", "-c", "full_page_writes=off"]
        for s in settings:
            self.options += ["-c", s]
        self.start()
        # The tests' own password file for sandboxd (ours, mode 0600).
        self.password_file = os.path.join(tempfile.mkdtemp(prefix="sandboxd-pgpass-"),
                                          "password")
        with open(self.password_file, "w") as f:
            f.write(self.password + "\n")
        os.chmod(self.password_file, 0o600)

    def _run(self, cmd, check=True, timeout=120):
        if self.user:
            cmd = ["runuser", "-u", self.user, "--"] + cmd
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=self.dir)
        if check and p.returncode != 0:
            raise RuntimeError("%s failed:\n%s%s%s" % (cmd, p.stdout, p.stderr, self.server_log()))
        return p

    def server_log(self):
        try:
            with open(self.log, errors="replace") as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    def start(self):
        self._run([os.path.join(self.bin, "pg_ctl"), "-D", self.data, "-l", self.log, "-w",
                   "-t", "60", "-o", " ".join(["-p", str(self.port)] + self.options), "start"])

    def stop(self, mode="fast"):
        """fast: what a service manager does; immediate: a crash of the server."""
        self._run([os.path.join(self.bin, "pg_ctl"), "-D", self.data, "-m", mode, "-w", "stop"],
                  check=False)

    def pid(self):
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            return int(f.readline())

    def pids(self):
        """The server's processes: the postmaster and its children (this server's only)."""
        main = self.pid()
        out = [main]
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % entry) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if ppid == main:
                out.append(int(entry))
        return out

    def pause(self):
        """A database that stops answering without closing anything (a hung host)."""
        self.paused = self.pids()
        for pid in self.paused:
            os.kill(pid, signal.SIGSTOP)

    def resume(self):
        for pid in getattr(self, "paused", []):
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        self.paused = []

    def url(self, db):
        """The connection string sandboxd gets: no password in it."""
        return "postgresql://%s@127.0.0.1:%d/%s" % (ROLE, self.port, db)

    def store_args(self, db):
        return ["--state-store", self.url(db), "--state-store-password-file", self.password_file]

    def psql(self, db, sql, check=True):
        """Run sql in db as the superuser over the socket; the rows as lists of strings."""
        p = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1",
                            "-h", "127.0.0.1", "-p", str(self.port), "-U", ROLE, "-d", db,
                            "-c", sql], capture_output=True, text=True, timeout=60,
                           env={**os.environ, "PGPASSWORD": self.password})
        if check and p.returncode != 0:
            raise RuntimeError("psql: %s" % p.stderr)
        return [line.split("\t") for line in p.stdout.splitlines() if line]

    def create_db(self, name=None):
        name = name or "t_" + secrets.token_hex(6)
        self.psql("postgres", "CREATE DATABASE %s" % name)
        return name

    def wait_down(self, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if subprocess.run(["pg_isready", "-h", "127.0.0.1", "-p", str(self.port)],
                              capture_output=True).returncode != 0:
                return
            time.sleep(0.05)
        raise AssertionError("PostgreSQL did not stop")

    def close(self):
        self.resume()
        self.stop("immediate")
        shutil.rmtree(self.dir, ignore_errors=True)
        shutil.rmtree(os.path.dirname(self.password_file), ignore_errors=True)
