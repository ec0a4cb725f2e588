"""Checks of a path before a tool reads or writes it: a FIFO, device, socket, directory or
symlink loop is refused with a one-line :class:`FileCheckError` naming the path, before an
``open`` that would block (a FIFO), read forever (``/dev/zero``) or fail with a traceback.

>>> import tempfile
>>> d = tempfile.mkdtemp()
>>> try:
...     check_input_file(d, "a measurement file")
... except FileCheckError as e:
...     print(str(e).replace(d, "DIR"))
DIR: a directory, not a measurement file
"""
from __future__ import annotations

import errno
import os
import stat

_KINDS = {stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
          stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a directory"}


class FileCheckError(ValueError):
    """A path a tool must not read or write; the message is one line naming it."""


def _stat(name: str, what: str, missing_ok: bool):
    try:
        return os.stat(name)
    except FileNotFoundError:
        if missing_ok:
            return None
        raise FileCheckError(f"{name}: no such file ({what})") from None
    except OSError as e:
        why = "a symlink loop" if e.errno == errno.ELOOP else (e.strerror or str(e)).lower()
        raise FileCheckError(f"{name}: {why}, not {what}") from None


def check_input_file(path, what: str = "an input file") -> str:
    """The path as a string if it names an existing regular file (symlinks followed), else
    :class:`FileCheckError` (missing, a FIFO, device, socket, directory, symlink loop)."""
    name = os.fspath(path)
    st = _stat(name, what, missing_ok=False)
    if not stat.S_ISREG(st.st_mode):
        raise FileCheckError(f"{name}: {_KINDS.get(stat.S_IFMT(st.st_mode), 'not a regular file')}, not {what}")
    return name


def check_output_file(path, what: str = "an output file") -> str:
    """The path as a string if a regular file may be written there atomically (it is missing
    or a regular file, and its folder is a folder), else :class:`FileCheckError`."""
    name = os.fspath(path)
    st = _stat(name, what, missing_ok=True)
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise FileCheckError(f"{name}: {_KINDS.get(stat.S_IFMT(st.st_mode), 'not a regular file')}, "
                             f"cannot be replaced by {what}")
    parent = os.path.dirname(os.path.abspath(name))
    pst = _stat(parent, "a folder", missing_ok=True)
    if pst is not None and not stat.S_ISDIR(pst.st_mode):
        raise FileCheckError(f"{name}: {parent} is not a folder")
    return name


def check_output_dir(path, what: str = "an output folder") -> str:
    """The path as a string if it is a folder or missing (to be created), else
    :class:`FileCheckError`."""
    name = os.fspath(path)
    st = _stat(name, what, missing_ok=True)
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise FileCheckError(f"{name}: {_KINDS.get(stat.S_IFMT(st.st_mode), 'a file')}, not {what}")
    return name
