# SPDX-License-Identifier: MIT
"""The helpers of sessions that mcp-server-code-execution-mode's fork (aniprasad) added, with
its names, signatures and return values: memories with timestamps, time zones, an execution
folder per run (code.py, output.txt, images/, data/) and files, images and charts saved there
as file:// URLs of real host paths.

Memories live on the host, per workspace (session.py's RPC). The execution folders live in
the session's working directory (/tmp/executions/<run>), the files GET
/v1/sessions/{id}/files/executions/... serves, and are kept on the host as well, in the
session's workspace (runs/, within its quota): what save_image, render_chart and save_file
write when they write it, the rest of a run's folder (code.py, output.txt, files the code put
there) before the execution answers. Their file:// URLs name the host's copy, so they still
point at the file after the session has ended. The last RUNS_KEPT folders stay in the working
directory, the oldest dropped (the host's copies stay). In compat mode every run gets its
folder with code.py and output.txt; otherwise a folder is made when code asks for one.
"""
import base64
import datetime
import os
import random
import re
import shutil
import sys
import time

from sandboxd_runtime import artifacts, mcpapi

RUNS_KEPT = 20               # execution folders kept in the working directory
OUTPUT_KEPT = 1 << 20        # bytes of stdout and stderr output.txt keeps of one run
EXEC_BASE = "/tmp/executions"
RUN_FILES_KEPT = 200         # files of one run's folder kept on the host, at most
STATE = {"host_workdir": None, "folder": None, "serial": 0, "charts": 0, "tee": None,
         "code": None, "began": 0.0, "made": [], "kept": {}}
HOST = None                  # session.py's synchronous RPC to the host


# ---- memories -------------------------------------------------------------------------------

def _epoch(iso):
    """An ISO 8601 UTC time of the host ("2026-11-23T19:53:12.123Z") as time.time() gives it."""
    if not isinstance(iso, str):
        return None
    try:
        return datetime.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _timed(info):
    """A memory's info with the fork's created_at and updated_at (seconds since the epoch)."""
    out = dict(info)
    out["created_at"] = _epoch(info.get("createdAt"))
    out["updated_at"] = _epoch(info.get("updatedAt"))
    return out


def save_memory(key, value, *, metadata=None):
    """Store value (JSON) under key; metadata replaces the stored metadata when given. The
    time it was first saved is kept."""
    request = {"type": "memory", "op": "save", "key": key, "value": value}
    if metadata is not None:
        request["metadata"] = metadata
    HOST(request)
    return "Memory %r saved." % key


def load_memory(key, *, default=None):
    reply = HOST({"type": "memory", "op": "load", "key": key})
    return reply["value"] if reply.get("found") else default


def delete_memory(key):
    """True when there was such a memory; the fork's message in compat mode."""
    deleted = bool(HOST({"type": "memory", "op": "delete", "key": key}).get("deleted"))
    if mcpapi.compat():
        return "Memory %r %s." % (key, "deleted" if deleted else "not found")
    return deleted


def memory_exists(key):
    return bool(HOST({"type": "memory", "op": "info", "key": key}).get("found"))


def get_memory_info(key):
    """{key, value, metadata, created_at, updated_at} (and the host's createdAt, updatedAt
    outside compat mode), or None."""
    reply = HOST({"type": "memory", "op": "info", "key": key})
    if not reply.get("found"):
        return None
    info = _timed(reply.get("info") or {})
    info["value"] = load_memory(key)
    if mcpapi.compat():
        return {k: info.get(k) for k in ("key", "value", "metadata", "created_at",
                                         "updated_at")}
    return info


def list_memories():
    """[{key, metadata, created_at, updated_at}] by key (and createdAt, updatedAt, size outside
    compat mode)."""
    out = []
    for m in HOST({"type": "memory", "op": "list"}).get("memories", []):
        m = _timed(m)
        if mcpapi.compat():
            m = {k: m.get(k) for k in ("key", "metadata", "created_at", "updated_at")}
        out.append(m)
    return out


UPDATE_TRIES = 64           # update_memory's attempts before it gives up


def update_memory(key, updater, *, default=None):
    """Save updater(current value) and return it, atomically: the save names the revision the
    load read, and is refused when another session (on any instance) saved the memory in
    between; then it reads again and calls updater again. updater should therefore only
    compute (it may run more than once)."""
    for attempt in range(UPDATE_TRIES):
        reply = HOST({"type": "memory", "op": "load", "key": key})
        found = reply.get("found")
        value = updater(reply["value"] if found else default)
        saved = HOST({"type": "memory", "op": "save", "key": key, "value": value,
                      "ifRev": reply.get("rev") if found else None})
        if saved.get("saved"):
            return value
        # Another writer won: wait a little (more each time, at random) before the next try,
        # so that writers who collided do not collide again.
        time.sleep(random.random() * min(0.05, 0.001 * (1 << min(attempt, 6))))
    raise mcpapi.MCPError("update_memory: memory %r changed under every one of %d attempts; "
                          "nothing was saved" % (key, UPDATE_TRIES))


# ---- time zones (zoneinfo's data is bound read-only into the jail) ---------------------------

def now(timezone="UTC"):
    """The current time in an IANA time zone ("America/New_York"), as an aware datetime."""
    from zoneinfo import ZoneInfo
    return datetime.datetime.now(ZoneInfo(timezone))


def convert_time(dt, to_tz):
    """dt in time zone to_tz (a naive datetime is taken as UTC)."""
    from zoneinfo import ZoneInfo
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=datetime.timezone.utc)
    return dt.astimezone(ZoneInfo(to_tz))


def list_timezones(region=None):
    """The IANA time zone names, sorted; those starting with region when given."""
    from zoneinfo import available_timezones
    zones = sorted(available_timezones())
    return [z for z in zones if z.startswith(region)] if region else zones


# ---- the execution folder ---------------------------------------------------------------------

class _Tee:
    """A text stream that also keeps (about the first OUTPUT_KEPT characters of) what is
    written. Kept lean: print() calls write twice a line."""

    def __init__(self, stream, kept):
        self._stream = stream
        self._write = stream.write
        self._parts = kept["parts"]
        self._left = OUTPUT_KEPT

    def write(self, s):
        if self._left > 0 and s.__class__ is str:
            self._parts.append(s if len(s) <= self._left else s[:self._left])
            self._left -= len(s)
        return self._write(s)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _new_folder():
    """This run's folder, made now (named for the time the run began); the oldest of the
    session's folders beyond RUNS_KEPT are removed."""
    STATE["serial"] += 1
    name = "%04d-%s" % (STATE["serial"], time.strftime("%Y%m%d-%H%M%S",
                                                        time.gmtime(STATE["began"])))
    folder = os.path.join(EXEC_BASE, name)
    try:
        os.mkdir(folder)
    except FileNotFoundError:
        os.makedirs(folder)  # the first one, or the code removed them
    except FileExistsError:
        pass
    made = STATE["made"]
    made.append(folder)
    while len(made) > RUNS_KEPT:
        shutil.rmtree(made.pop(0), ignore_errors=True)
    STATE["folder"] = folder
    return folder


def _write(path, text):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        os.write(fd, text.encode("utf-8", "replace"))
    finally:
        os.close(fd)


def begin_run(code):
    """Before an execution: forget the last run's folder; in compat mode keep this run's
    output for output.txt. Nothing touches the file system here: the folder is made when the
    code asks for it, or when the run ends (finish_run)."""
    STATE["folder"] = None
    STATE["code"] = code
    STATE["began"] = time.time()
    if not mcpapi.compat():
        return
    kept = {"parts": []}
    STATE["tee"] = (kept, sys.stdout, sys.stderr)
    sys.stdout = _Tee(sys.stdout, kept)
    sys.stderr = _Tee(sys.stderr, kept)


def finish_run():
    """Before an execution answers: in compat mode its folder with code.py and output.txt
    (stdout and stderr as they came); the run's folder, if it has one, kept on the host."""
    tee, STATE["tee"] = STATE["tee"], None
    if tee is not None:
        kept, out, err = tee
        if isinstance(sys.stdout, _Tee):
            sys.stdout = out
        if isinstance(sys.stderr, _Tee):
            sys.stderr = err
        try:
            folder = execution_folder()
            _write(os.path.join(folder, "output.txt"), "".join(kept["parts"]))
        except OSError:
            pass  # a full /tmp is the code's to find out
    folder = STATE["folder"]
    if folder and HOST is not None:
        try:
            sync_folder(folder)
        except Exception:  # the quota, a file the code removed: what was kept stays
            pass


_UNSAFE = re.compile(r"[^A-Za-z0-9._/-]+")


def keep(path):
    """Keep the file at path (in an execution folder) in the session's workspace on the host;
    its file:// URL there, which outlives the session. Raises MCPError when it cannot be kept
    (the workspace's quota)."""
    path = os.path.abspath(str(path))
    if os.path.relpath(path, EXEC_BASE).startswith(".."):
        return file_url(path)  # not in an execution folder: only where it is
    _keep_all([path])
    return "file://" + STATE["kept"][path][2]


def _keep_all(paths):
    """One request for the files of paths (in execution folders)."""
    files, stats = [], []
    for path in paths:
        with open(path, "rb") as f:
            data = f.read()
        stats.append(os.stat(path))
        files.append({"path": _UNSAFE.sub("_", os.path.relpath(path, EXEC_BASE)).lstrip("."),
                      "content": base64.b64encode(data).decode("ascii")})
    if not files:
        return
    reply = HOST({"type": "keep_files", "files": files})
    for path, st, kept in zip(paths, stats, reply["files"]):
        STATE["kept"][path] = (st.st_size, st.st_mtime_ns, kept["hostPath"])


def sync_folder(folder):
    """Keep on the host what is new or changed in a run's folder, in one request."""
    n, changed = 0, []
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(root, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if not os.path.isfile(path) or os.path.islink(path):
                continue
            n += 1
            if n > RUN_FILES_KEPT:
                break
            seen = STATE["kept"].get(path)
            if seen is None or seen[:2] != (st.st_size, st.st_mtime_ns):
                changed.append(path)
        if n > RUN_FILES_KEPT:
            break
    _keep_all(changed)


def execution_folder():
    """This run's folder (a pathlib.Path in the working directory), made on first use."""
    import pathlib
    folder = STATE["folder"]
    if not folder:
        folder = _new_folder()
        if STATE["code"] is not None:
            _write(os.path.join(folder, "code.py"), STATE["code"])
    return pathlib.Path(folder)


def file_url(path):
    """The file:// URL of a file of the working directory: its copy on the host when it was
    kept, else where it is while the session lives (/proc/PID/root/tmp/...)."""
    path = os.path.abspath(str(path))
    if path in STATE["kept"]:
        return "file://" + STATE["kept"][path][2]
    base = STATE["host_workdir"]
    if base and (path == "/tmp" or path.startswith("/tmp/")):
        path = base + path[len("/tmp"):]
    return "file://" + path


def save_file(filename, content, *, subdir="data"):
    """Write content (str or bytes) to <execution folder>/<subdir>/<filename>; its URL."""
    if os.path.basename(str(filename)) != str(filename) or filename in ("", ".", ".."):
        raise ValueError("save_file: %r is not a plain file name" % (filename,))
    target = execution_folder() / subdir if subdir else execution_folder()
    target.mkdir(parents=True, exist_ok=True)
    path = target / filename
    if isinstance(content, (bytes, bytearray, memoryview)):
        path.write_bytes(bytes(content))
    else:
        path.write_text(str(content))
    return keep(path)


def save_image(filename, figure_or_bytes, *, format=None):
    """Save a matplotlib figure, a PIL image or bytes to <execution folder>/images/<filename>;
    it is also shown as an artifact of the execution. Its URL."""
    if os.path.basename(str(filename)) != str(filename) or filename in ("", ".", ".."):
        raise ValueError("save_image: %r is not a plain file name" % (filename,))
    images = execution_folder() / "images"
    images.mkdir(parents=True, exist_ok=True)
    path = images / filename
    if hasattr(figure_or_bytes, "savefig"):
        figure_or_bytes.savefig(path, format=format, bbox_inches="tight")
        if hasattr(figure_or_bytes, "clf") and hasattr(figure_or_bytes, "canvas"):
            import matplotlib.pyplot as plt
            plt.close(figure_or_bytes)  # shown once, as this file, not again at the end
    elif hasattr(figure_or_bytes, "save"):
        figure_or_bytes.save(path, format=format)
    elif isinstance(figure_or_bytes, (bytes, bytearray)):
        path.write_bytes(bytes(figure_or_bytes))
    else:
        raise TypeError("Cannot save %s as image" % type(figure_or_bytes).__name__)
    import mimetypes
    mime = mimetypes.guess_type(str(path))[0] or "application/octet-stream"
    if mime.startswith("image/"):
        artifacts.CURRENT.add(filename, mime, path.read_bytes())
    return keep(path)


def render_chart(data, chart_type, x, y, *, title=None, series=None, hue=None, filename=None,
                 width=10, height=6):
    """A bar, line or scatter chart of data (a list of dicts or a DataFrame), grouped by
    series (or hue), saved as an image; prints and returns its URL."""
    import matplotlib.pyplot as plt
    if chart_type not in ("bar", "line", "scatter", "point"):
        raise ValueError("Unknown chart_type: %s. Use 'bar', 'line', or 'scatter'" % chart_type)
    rows = data.to_dict("records") if hasattr(data, "to_dict") and hasattr(data, "columns") \
        else list(data)
    if filename is None:
        STATE["charts"] += 1
        filename = "chart_%d.png" % STATE["charts"]
    group = series or hue
    groups = {}
    for row in rows:
        groups.setdefault(row.get(group) if group else None, []).append(row)
    fig, ax = plt.subplots(figsize=(width, height))
    labels = list(dict.fromkeys(str(r[x]) for r in rows))
    for i, (name, items) in enumerate(groups.items()):
        xs, ys = [str(r[x]) for r in items], [r[y] for r in items]
        label = None if name is None else str(name)
        if chart_type == "bar":
            w = 0.8 / len(groups)
            pos = [labels.index(v) - 0.4 + w * (i + 0.5) for v in xs]
            ax.bar(pos, ys, width=w, label=label)
        elif chart_type == "line":
            ax.plot(xs, ys, marker="o", label=label)
        else:
            ax.scatter(xs, ys, label=label)
    if chart_type == "bar":
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels)
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    if group:
        ax.legend(title=group)
    if title:
        ax.set_title(title, fontweight="bold")
    fig.tight_layout()
    url = save_image(filename, fig)
    print(url)
    return url


def list_execution_files():
    """{"images", "data", "other"}: the file names of this run's folder."""
    result = {"images": [], "data": [], "other": []}
    folder = STATE["folder"]
    if not folder or not os.path.isdir(folder):
        return result
    for sub in ("images", "data"):
        d = os.path.join(folder, sub)
        if os.path.isdir(d):
            result[sub] = sorted(f for f in os.listdir(d) if os.path.isfile(os.path.join(d, f)))
    result["other"] = sorted(f for f in os.listdir(folder)
                             if os.path.isfile(os.path.join(folder, f)))
    return result
