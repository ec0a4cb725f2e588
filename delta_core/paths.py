"""Check a path before it is opened, so that no open blocks and no wrong kind of file is read
or overwritten.

``open("fifo")`` waits for a writer forever (and a signal handler that only sets a flag never
runs while it waits); a character device may never end (``/dev/zero``) or may do something on
open (a serial port, a tape); a directory, a socket, a symlink loop or a dangling symlink give
a confusing OSError at best. Every reader and writer of the stack therefore goes through
this module:

* :func:`check_readable_file`: the path names an existing, readable regular file (symlinks
  followed), else :class:`PathError` with one line naming the path and what it is instead: ``a
  FIFO (named pipe)``, ``a character device``, ``a block device``, ``a socket``, ``a
  directory``, ``a symlink loop``, ``a dangling symlink``, ``not found``, ``not readable``.
* :func:`open_regular`: the same check, then ``open`` with ``O_NONBLOCK`` (a FIFO put in the
  path's place after the check opens at once instead of blocking) and ``fstat`` of the open file
  descriptor: only a regular file is read (this closes the race between check and open).
* :func:`read_bytes`: a whole file of at most ``max_bytes`` bytes.
* :func:`check_bag_files`: every file a rosbag2 reader will open (``metadata.yaml`` and the
  storage files it lists).
* :func:`check_output_file` / :func:`check_output_dir`: a path to write is refused before any
  work if it is a directory (or a file, for a folder), a FIFO, a device, a socket, a symlink
  loop, read-only, or in a folder that cannot be written.

:class:`PathError` is an ``OSError`` (code that reports an unreadable file still does) and a
``ValueError`` (bad input), and its text is one line: ``<path>: <what is wrong>``; a path that
does not exist raises :class:`PathNotFound`, also a ``FileNotFoundError``.

Example::

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> os.mkfifo(os.path.join(d, "pipe.yaml"))
    >>> try:
    ...     check_readable_file(os.path.join(d, "pipe.yaml"), "a robot file")
    ... except PathError as e:
    ...     print(e.reason)
    a FIFO (named pipe), not a robot file
    >>> os.symlink("loop", os.path.join(d, "loop"))
    >>> try:
    ...     open_regular(os.path.join(d, "loop"), "a CSV file")
    ... except PathError as e:
    ...     print(e.reason)
    a symlink loop (too many levels of symbolic links), not a CSV file
"""
from __future__ import annotations

import argparse
import errno
import fcntl
import os
import stat
from pathlib import Path
from typing import BinaryIO

from delta_core import safe_yaml

#: What each kind of file is called in a message (``stat.S_IFMT`` -> words).
KINDS = {
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a directory",
    stat.S_IFLNK: "a symbolic link",
    stat.S_IFREG: "a regular file",
}


class PathError(OSError, ValueError):
    """A path that cannot be read or written as asked; ``str()`` is ``<path>: <reason>``."""

    def __init__(self, path: str | os.PathLike, reason: str, code: int = errno.EINVAL):
        super().__init__(code, reason, os.fspath(path))
        self.path = os.fspath(path)
        self.reason = reason

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"

    def __reduce__(self):
        return (type(self), (self.path, self.reason, self.errno))


class PathNotFound(PathError, FileNotFoundError):
    """A path that does not exist (or a dangling symlink): also a FileNotFoundError."""


def _error(path, reason: str, code: int) -> PathError:
    """:class:`PathNotFound` for a missing path, else :class:`PathError`."""
    cls = PathNotFound if code in (errno.ENOENT, errno.ENOTDIR) else PathError
    return cls(path, reason, code)


def kind_of(mode: int) -> str:
    """The words for the kind of file of a ``st_mode``, e.g. ``a FIFO (named pipe)``."""
    return KINDS.get(stat.S_IFMT(mode), "not a regular file")


def _noun(what: str) -> str:
    """``a robot file`` -> ``robot file``."""
    for article in ("a ", "an ", "the "):
        if what.startswith(article):
            return what[len(article):]
    return what


def _why_missing(path: str, err: OSError, what: str = "a file") -> tuple:
    """(reason, errno) for a failed ``stat`` of ``path``."""
    if err.errno == errno.ELOOP:
        return "a symlink loop (too many levels of symbolic links)", errno.ELOOP
    if err.errno == errno.ENOENT:
        try:
            if stat.S_ISLNK(os.lstat(path).st_mode):
                return f"a dangling symlink (to {os.readlink(path)}, which does not exist)", errno.ENOENT
        except OSError:
            pass
        return f"{_noun(what)} not found", errno.ENOENT
    if err.errno == errno.ENOTDIR:
        return f"{_noun(what)} not found (a part of the path is not a directory)", errno.ENOTDIR
    if err.errno == errno.EACCES:
        return "not readable (permission denied)", errno.EACCES
    if err.errno == errno.ENAMETOOLONG:
        return "file name too long", errno.ENAMETOOLONG
    return f"cannot be read: {err.strerror or err}", err.errno or errno.EIO


def why_missing(path: str | os.PathLike, what: str = "a file") -> str:
    """The one-line reason ``path`` (for which ``exists()`` is false) cannot be used:
    ``<path>: a symlink loop ...``, ``<path>: a dangling symlink ...`` or ``<path>: file not found``.

    >>> why_missing("/nonexistent/x.csv", "a CSV file")
    '/nonexistent/x.csv: CSV file not found'
    """
    name = os.fspath(path)
    try:
        os.stat(name)
    except OSError as e:
        return f"{name}: {_why_missing(name, e, what)[0]}"
    return f"{name}: {_noun(what)} not found"


def check_readable_file(path: str | os.PathLike, what: str = "a file") -> Path:
    """``path`` as a Path if it names an existing, readable regular file (symlinks followed);
    else :class:`PathError` naming the path and what it is instead (``what`` names the file
    the caller wanted, e.g. ``a robot file``). Nothing is opened."""
    name = os.fspath(path)
    if not name:
        raise PathError(name, f"an empty path, not {what}")
    if "\0" in name:
        raise PathError(name.replace("\0", "\\0"), f"a path with a NUL character, not {what}")
    try:
        st = os.stat(name)
    except OSError as e:
        reason, code = _why_missing(name, e, what)
        if code == errno.ELOOP:
            reason += f", not {what}"
        raise _error(name, reason, code) from None
    if not stat.S_ISREG(st.st_mode):
        code = errno.EISDIR if stat.S_ISDIR(st.st_mode) else errno.EINVAL
        raise PathError(name, f"{kind_of(st.st_mode)}, not {what}", code)
    if not os.access(name, os.R_OK):
        raise PathError(name, "not readable (permission denied)", errno.EACCES)
    return Path(name)


def open_regular(path: str | os.PathLike, what: str = "a file") -> BinaryIO:
    """A binary file object of ``path``, checked by :func:`check_readable_file`, opened without
    blocking (``O_NONBLOCK``, ``O_NOCTTY``) and verified by ``fstat`` to be a regular file."""
    name = os.fspath(check_readable_file(path, what))
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as e:
        reason, code = _why_missing(name, e, what)
        raise _error(name, reason, code) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):      # replaced between the check and the open
            raise PathError(name, f"{kind_of(st.st_mode)}, not {what}")
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: str | os.PathLike, max_bytes: int, what: str = "a file") -> bytes:
    """The bytes of a regular file of at most ``max_bytes`` bytes (:func:`open_regular`);
    a larger file is refused by its size before it is read."""
    with open_regular(path, what) as f:
        size = os.fstat(f.fileno()).st_size
        if size > max_bytes:
            raise PathError(path, f"{size} bytes, more than the {max_bytes} bytes allowed for {what}",
                            errno.EFBIG)
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise PathError(path, f"more than the {max_bytes} bytes allowed for {what}", errno.EFBIG)
    return data


def _writable_folder(folder: Path, name: str, what: str) -> None:
    """The nearest existing folder of ``folder`` must be a directory we may write into."""
    p = folder
    while True:
        try:
            st = os.stat(p)
            break
        except (FileNotFoundError, NotADirectoryError):
            if p.parent == p:
                raise PathError(name, f"cannot write {what}: no existing folder on its path") from None
            p = p.parent
        except OSError as e:
            reason, code = _why_missing(str(p), e)
            raise PathError(name, f"cannot write {what}: its folder {p} is {reason}", code) from None
    if not stat.S_ISDIR(st.st_mode):
        raise PathError(name, f"cannot write {what}: {p} is {kind_of(st.st_mode)}, not a folder",
                        errno.ENOTDIR)
    if not os.access(p, os.W_OK | os.X_OK) or _read_only_fs(p):
        raise PathError(name, f"cannot write {what}: the folder {p} is read-only", errno.EACCES)


def _read_only_fs(p: Path) -> bool:
    try:
        return bool(os.statvfs(p).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def check_output_file(path: str | os.PathLike, what: str = "the output file") -> Path:
    """``path`` as a Path if a file may be written there (atomically: a temporary file beside
    it, then a rename): absent, or a writable regular file, in a folder that exists or can be
    made and that may be written. Else :class:`PathError` naming the path and why: a
    directory, a FIFO, a device, a socket, a symlink loop, a read-only file or folder. Nothing
    is created."""
    name = os.fspath(path)
    if not name:
        raise PathError(name, f"an empty path, not {what}")
    p = Path(name)
    try:
        st = os.stat(name)
    except (FileNotFoundError, NotADirectoryError):
        st = None
        try:
            if stat.S_ISLNK(os.lstat(name).st_mode):
                raise PathError(name, f"is a dangling symlink (to {os.readlink(name)}); cannot write "
                                      f"{what} there", errno.ENOENT)
        except (FileNotFoundError, NotADirectoryError):
            pass
    except OSError as e:
        reason, code = _why_missing(name, e)
        raise PathError(name, f"is {reason}; cannot write {what} there", code) from None
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise PathError(name, f"is a directory; give a file name for {what}", errno.EISDIR)
        if not stat.S_ISREG(st.st_mode):
            raise PathError(name, f"is {kind_of(st.st_mode)}; cannot write {what} there")
        if not st.st_mode & 0o222 or not os.access(name, os.W_OK):
            raise PathError(name, f"is a read-only file; refusing to replace it with {what}", errno.EACCES)
    _writable_folder(p.parent if str(p.parent) else Path("."), name, what)
    return p


def check_output_dir(path: str | os.PathLike, what: str = "the output") -> Path:
    """``path`` as a Path if files may be written into it: an existing writable directory, or
    absent under a folder that may be written (it will be made). Else :class:`PathError`."""
    name = os.fspath(path)
    if not name:
        raise PathError(name, f"an empty path, not a folder for {what}")
    p = Path(name)
    try:
        st = os.stat(name)
    except (FileNotFoundError, NotADirectoryError):
        _writable_folder(p.parent if str(p.parent) else Path("."), name, what)
        return p
    except OSError as e:
        reason, code = _why_missing(name, e)
        raise PathError(name, f"is {reason}; cannot write {what} there", code) from None
    if not stat.S_ISDIR(st.st_mode):
        raise PathError(name, f"is {kind_of(st.st_mode)}, not a folder for {what}", errno.ENOTDIR)
    if not os.access(name, os.W_OK | os.X_OK) or _read_only_fs(p):
        raise PathError(name, f"is a read-only folder; cannot write {what} into it", errno.EACCES)
    return p


def check_bag_files(path: str | os.PathLike) -> list:
    """The files a rosbag2 reader will open for the bag at ``path``, each checked by
    :func:`check_readable_file`: a ``.db3`` / ``.mcap`` file itself, or a bag folder's
    ``metadata.yaml`` and every storage file it lists (``relative_file_paths``, taken by name
    within the folder, as rosbag2 and rosbags do). A listed file that does not exist is left to
    the reader to report; a FIFO, a device, a socket, a directory or a symlink loop in its place
    is refused here, before anything is opened blocking."""
    p = Path(os.fspath(path))
    if not p.is_dir():
        return [check_readable_file(p, "a rosbag2 bag file")]
    meta = check_readable_file(p / "metadata.yaml", "a rosbag2 metadata file")
    files = [meta]
    try:
        data = safe_yaml.load(read_bytes(meta, 16 << 20, "a rosbag2 metadata file").decode("utf-8"))
        names = data["rosbag2_bagfile_information"]["relative_file_paths"]
        names = [str(n) for n in names] if isinstance(names, list) else []
    except PathError:
        raise
    except Exception:                 # noqa: BLE001 - unreadable metadata: the reader says why
        return files
    for name in names:
        f = p / Path(name).name
        if os.path.lexists(f):
            files.append(check_readable_file(f, "a rosbag2 storage file"))
    return files


# ----------------------------------------------------------------------------- argparse types

def output_file_arg(text: str) -> str:
    """An argparse ``type`` for an output file: ``text`` if :func:`check_output_file` accepts
    it, so a directory, a FIFO, a device or a read-only file is refused before any work
    (``<prog>: error: argument --out: x: is a directory; ...``)."""
    try:
        check_output_file(text, "the output")
    except PathError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def output_dir_arg(text: str) -> str:
    """An argparse ``type`` for an output folder (:func:`check_output_dir`)."""
    try:
        check_output_dir(text, "the output")
    except PathError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def input_file_arg(what: str):
    """An argparse ``type`` for an input file (``what``: e.g. ``a CSV file``): the path if
    :func:`check_readable_file` accepts it."""
    def parse(text: str) -> str:
        try:
            check_readable_file(text, what)
        except PathError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
        return text
    parse.__name__ = "path"
    return parse
