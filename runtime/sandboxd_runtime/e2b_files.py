# SPDX-License-Identifier: MIT
"""The files of an E2B sandbox as envd's filesystem.Filesystem serves them (Stat, ListDir, MakeDir,
Move, Remove; spec/envd/filesystem/filesystem.proto of e2b-dev/E2B), done by the agent (e2b.py)
inside the jail, as the sandbox's own user: a path can only name what the sandbox itself sees.
Entries are EntryInfo in proto3's JSON names; errors are Connect codes (OpError).
"""
import errno
import grp
import os
import pwd
import shutil
import stat
import time

HOME = "/home/user"
LIST_MAX = 10000  # entries one ListDir answers at most


class OpError(Exception):
    """An op that fails with a Connect code (invalid_argument, not_found, ...)."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


# ---- paths and entries ------------------------------------------------------------------------

def resolve(path):
    """An E2B path as envd reads it: "~" is the home, a relative path is under it. The result is
    normalised but symlinks are kept (entries are named as asked for)."""
    if not isinstance(path, str) or "\0" in path:
        raise OpError("invalid_argument", "the path must be a string without NUL bytes")
    if path == "~" or path.startswith("~/"):
        path = HOME + path[1:]
    if not path.startswith("/"):
        path = os.path.join(HOME, path)
    return os.path.normpath(path)


def _owner(uid, gid):
    try:
        user = pwd.getpwuid(uid).pw_name
    except KeyError:
        user = str(uid)
    try:
        group = grp.getgrgid(gid).gr_name
    except KeyError:
        group = str(gid)
    return user, group


def _mtime(st):
    t = time.gmtime(st.st_mtime_ns // 1000000000)
    frac = st.st_mtime_ns % 1000000000
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", t)
    return stamp + ("Z" if frac == 0 else ".%09dZ" % frac)


def entry(path, st=None):
    """An EntryInfo (filesystem.proto, JSON names) of path, from lstat()."""
    if st is None:
        st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        kind = "FILE_TYPE_SYMLINK"
    elif stat.S_ISDIR(st.st_mode):
        kind = "FILE_TYPE_DIRECTORY"
    elif stat.S_ISREG(st.st_mode):
        kind = "FILE_TYPE_FILE"
    else:
        kind = "FILE_TYPE_UNSPECIFIED"
    owner, group = _owner(st.st_uid, st.st_gid)
    info = {"name": os.path.basename(path) or "/", "type": kind, "path": path,
            "size": str(st.st_size), "mode": stat.S_IMODE(st.st_mode),
            "permissions": go_mode_string(st.st_mode), "owner": owner, "group": group,
            "modifiedTime": _mtime(st)}
    if kind == "FILE_TYPE_SYMLINK":
        try:
            info["symlinkTarget"] = os.readlink(path)
        except OSError:
            pass
    return info


FILE_KINDS = ((stat.S_ISDIR, "d"), (stat.S_ISLNK, "L"), (stat.S_ISFIFO, "p"),
              (stat.S_ISSOCK, "S"), (stat.S_ISCHR, "Dc"), (stat.S_ISBLK, "D"))


def go_mode_string(mode):
    """Go's fs.FileMode.String() (envd's "permissions"): "drwxr-xr-x", "-rw-r--r--",
    "Lrwxrwxrwx"."""
    kind = next((k for test, k in FILE_KINDS if test(mode)), "-")
    bits = "".join(c if mode & (1 << (8 - i)) else "-" for i, c in enumerate("rwxrwxrwx"))
    return kind + bits


# How a failed file operation reads in Connect's terms: (errno, code, what).
OS_ERRORS = (
    (errno.ENOENT, "not_found", "no such file or directory"),
    (errno.EACCES, "permission_denied", "permission denied"),
    (errno.EPERM, "permission_denied", "operation not permitted"),
    (errno.EROFS, "permission_denied", "read-only file system (only /home/user is writable)"),
    (errno.EXDEV, "permission_denied", "cannot move across file systems"),
    (errno.ENOTDIR, "invalid_argument", "not a directory"),
    (errno.EISDIR, "invalid_argument", "is a directory"),
    (errno.ENOTEMPTY, "failed_precondition", "directory not empty"),
    (errno.EEXIST, "already_exists", "already exists"),
    (errno.ELOOP, "failed_precondition", "too many levels of symbolic links"),
    (errno.ENOSPC, "resource_exhausted", "no space left in the sandbox"),
)


def os_error(exc, path):
    """The Connect error of a failed file operation on path."""
    for num, code, what in OS_ERRORS:
        if exc.errno == num:
            return OpError(code, "%s: %s" % (what, path))
    return OpError("internal", "%s: %s" % (exc.strerror or exc, path))


def fs_stat(msg):
    path = resolve(msg.get("path"))
    try:
        return {"entry": entry(path)}
    except OSError as exc:
        raise os_error(exc, path) from None


def fs_list(msg):
    path = resolve(msg.get("path"))
    depth = msg.get("depth") or 1
    if not isinstance(depth, int) or depth < 1:
        raise OpError("invalid_argument", "depth must be at least 1")
    try:
        real = os.path.realpath(path, strict=True)
        if not os.path.isdir(real):
            raise OpError("invalid_argument", "path is not a directory: %s" % path)
    except OSError as exc:
        raise os_error(exc, path) from None
    entries = []
    # Breadth first below the directory asked for; links are listed, never followed.
    level = [(real, path)]
    for _ in range(min(depth, 64)):
        below = []
        for real_dir, shown_dir in level:
            try:
                with os.scandir(real_dir) as it:
                    items = sorted(it, key=lambda e: e.name)
            except OSError:
                continue
            for item in items:
                shown = os.path.join(shown_dir, item.name)
                try:
                    entries.append(entry(shown, item.stat(follow_symlinks=False)))
                except OSError:
                    continue
                if len(entries) >= LIST_MAX:
                    raise OpError("resource_exhausted", "%s holds more than %d entries at "
                                  "depth %d; list a smaller part" % (path, LIST_MAX, depth))
                if item.is_dir(follow_symlinks=False):
                    below.append((item.path, shown))
        level = below
        if not level:
            break
    return {"entries": entries}


def fs_mkdir(msg):
    path = resolve(msg.get("path"))
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise os_error(exc, path) from None
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise OpError("already_exists", "directory already exists: %s" % path)
        raise OpError("invalid_argument", "path already exists but it is not a directory: %s"
                      % path)
    try:
        os.makedirs(path, 0o755)
        return {"entry": entry(path)}
    except OSError as exc:
        raise os_error(exc, path) from None


def fs_remove(msg):
    path = resolve(msg.get("path"))
    try:
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    except OSError as exc:
        raise os_error(exc, path) from None
    return {}


def fs_move(msg):
    src, dst = resolve(msg.get("source")), resolve(msg.get("destination"))
    try:
        os.lstat(src)
        parent = os.path.dirname(dst)
        if parent:
            os.makedirs(parent, 0o755, exist_ok=True)
        os.rename(src, dst)
        return {"entry": entry(dst)}
    except OSError as exc:
        raise os_error(exc, src) from None


FS_OPS = {"fs.stat": fs_stat, "fs.list": fs_list, "fs.mkdir": fs_mkdir, "fs.remove": fs_remove,
          "fs.move": fs_move}
