"""Atomic file writes: write to a temporary file beside the target, then rename.

A reader never sees a half-written file, and a failure (bad data, a full disk, Ctrl-C, a
SIGTERM turned into an exception by :mod:`delta_core.termination`) leaves whatever was at the
target before untouched and no temporary file behind.

The temporary file is ``.<name>.<random>.tmp`` in the target's folder. Its name is chosen
*before* it is created, so the clean-up knows it whenever an exception arrives, even between
the ``open`` and the next statement (a signal handler can raise at any bytecode).

Example::

    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> p = atomic_write_chunks(os.path.join(d, "a.txt"), (f"{k}\\n" for k in range(3)))
    >>> open(p).read().split()
    ['0', '1', '2']
    >>> os.listdir(d)
    ['a.txt']
"""
from __future__ import annotations

import os
import secrets
from collections.abc import Iterable
from pathlib import Path

from delta_core.paths import check_output_file


def _umask() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    return 0o022


def atomic_write_chunks(path: str | os.PathLike, chunks: Iterable[str], binary: bool = False) -> Path:
    """Write the strings of ``chunks`` one after the other to ``path``, atomically.

    ``chunks`` may be a generator, so a large file is produced and written piece by piece
    (memory: one chunk, not the whole text). Same-folder temporary file, ``fsync``, then
    ``os.replace``; on any exception (including KeyboardInterrupt and
    :class:`~delta_core.termination.Terminated`) the temporary file is removed and the
    exception re-raised. ``binary``: the chunks are bytes. The file keeps the mode of the file it replaces, or gets 0666 less
    the umask (as ``open`` would), not the private 0600 of a temporary file.

    The target is checked first (:func:`delta_core.paths.check_output_file`): a directory, a
    FIFO, a device, a socket or a read-only file is refused with a
    :class:`~delta_core.paths.PathError` naming it (a rename would replace ``/dev/null`` or a
    read-only file), before anything is read from ``chunks``.
    """
    path = check_output_file(path, "the output")     # a directory, FIFO, device, read-only file: refused
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with (os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline="")) as f:
            os.chmod(tmp, mode)
            for chunk in chunks:
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        # O_EXCL refused the name: someone else's file (2^-48 odds), not ours to delete
        if not (isinstance(e, FileExistsError) and e.filename == os.fspath(tmp)):
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
        if isinstance(e, OSError) and e.filename == os.fspath(tmp):
            # name the file the caller asked for, not our temporary one
            raise type(e)(e.errno, e.strerror, os.fspath(path)) from None
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` atomically (see :func:`atomic_write_chunks`)."""
    return atomic_write_chunks(path, (text,))


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_write_chunks`)."""
    return atomic_write_chunks(path, (data,), binary=True)
