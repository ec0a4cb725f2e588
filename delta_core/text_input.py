"""Bounded reading of text input files: a wrong file (a binary, ``/dev/zero``, a 10 GB log,
a file without line breaks) ends with a one-line :class:`TextInputError` naming the file,
not with a MemoryError, a hang or a UnicodeDecodeError traceback.

* :func:`read_text`: a whole small file (robot files) with a byte limit;
* :func:`iter_line_blocks`: a large file (CSV) as blocks of lines, a few MB at a time, with a
  limit on the length of one line.

Both decode strict UTF-8 (a leading byte-order mark is dropped) and name the first byte
that is not UTF-8 by its offset, line and column. Both open the file through
:func:`delta_core.paths.open_regular`: a FIFO, a device, a socket, a directory or a symlink
loop is refused by name (a :class:`TextInputError`) and no open blocks.

Example::

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "x.txt")
    >>> _ = open(p, "wb").write(b"ok\\nbad \\xff here\\n")
    >>> for limit in (100, 10):
    ...     try:
    ...         read_text(p, limit)
    ...     except TextInputError as e:
    ...         print(str(e).replace(p, "x.txt"))
    x.txt: not UTF-8 text: byte 0xff at offset 7 (line 2, column 5)
    x.txt: 14 bytes, more than the 10 bytes allowed for a file
"""
from __future__ import annotations

import errno
import os
import stat
from itertools import repeat

from delta_core.paths import PathError, open_regular

BOM = b"\xef\xbb\xbf"
#: Bytes read at a time by :func:`iter_line_blocks`.
BLOCK_BYTES = 4 << 20
#: Default limit on one line of a CSV file (a line of a data file is a few hundred bytes).
MAX_LINE_BYTES = 64 << 10


class TextInputError(ValueError):
    """A file that is not acceptable text; the message names the file (and line)."""

    def __init__(self, message: str, path: str = "", line: int | None = None):
        super().__init__(message)
        self.path = path
        self.line = line


def _size_text(n: int) -> str:
    for unit, k in (("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
        if n >= k and n % k == 0:
            return f"{n // k} {unit}"
    return f"{n} bytes"


def decode_utf8(data: bytes, name: str, offset: int = 0, first_line: int = 1) -> str:
    """``data`` as UTF-8 text; else :class:`TextInputError` naming the first bad byte by its
    offset in the file (``offset`` is that of ``data[0]``) and its line and column
    (``first_line`` is the line ``data`` starts on)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        k = e.start
        line = first_line + data.count(b"\n", 0, k)
        col = k - (data.rfind(b"\n", 0, k) + 1) + 1
        raise TextInputError(f"{name}: not UTF-8 text: byte 0x{data[k]:02x} at offset {offset + k} "
                             f"(line {line}, column {col})", name, line) from None


def _open(path, what: str):
    """:func:`delta_core.paths.open_regular`; a file of the wrong kind (FIFO, device, directory,
    symlink loop) as a :class:`TextInputError`, a missing or unreadable one as the OSError it
    is (:class:`~delta_core.paths.PathError`, one line naming the path)."""
    try:
        return open_regular(path, what)
    except PathError as e:
        if isinstance(e, FileNotFoundError) or e.errno == errno.EACCES:
            raise
        raise TextInputError(str(e), e.path) from None


def read_text(path: str | os.PathLike, max_bytes: int, what: str = "a file") -> str:
    """The whole text of a regular file of at most ``max_bytes`` bytes (``what`` names the kind
    of file in the error). Reads at most ``max_bytes + 1`` bytes, so a huge file fails fast;
    anything but a regular file is refused before it is read (:func:`_open`). OSError if the
    file cannot be read."""
    name = os.fspath(path)
    with _open(path, what) as f:
        st = os.fstat(f.fileno())
        if stat.S_ISREG(st.st_mode) and st.st_size > max_bytes:
            raise TextInputError(f"{name}: {st.st_size} bytes, more than the {_size_text(max_bytes)} "
                                 f"allowed for {what}", name)
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise TextInputError(f"{name}: more than the {_size_text(max_bytes)} allowed for {what} "
                             "(is this the right file?)", name)
    skip = len(BOM) if data.startswith(BOM) else 0
    return decode_utf8(data[skip:], name, offset=skip)


def iter_line_blocks(path: str | os.PathLike, max_line: int = MAX_LINE_BYTES,
                     block: int = BLOCK_BYTES, what: str = "a data file"):
    """Yield ``(first_line_number, lines)`` for consecutive blocks of whole lines of a text
    file (``lines``: a list of str without line ends; ``\\r\\n`` and ``\\n`` both end a line).

    Memory: about one block (``block`` bytes plus one line). Anything but a regular file
    (``what`` names the file wanted) raises :class:`TextInputError` before it is read; a line
    longer than ``max_line`` (a binary file, a file without line breaks) raises
    :class:`TextInputError`; so does a byte that is not UTF-8.
    """
    name = os.fspath(path)
    with _open(path, what) as f:
        carry = b""
        offset = 0          # file offset of carry[0]
        line = 1            # line number of carry's first line
        while True:
            data = f.read(block)
            buf = carry + data if carry else data
            if offset == 0 and buf.startswith(BOM):
                buf = buf[len(BOM):]
                offset = len(BOM)
            if data:
                end = buf.rfind(b"\n") + 1
                whole, carry = buf[:end], buf[end:]
            else:
                whole, carry = buf, b""
            if len(carry) > max_line:
                k = line + whole.count(b"\n")
                why = "no line break in the whole file" if k == 1 else "not a data file?"
                raise TextInputError(f"{name}:{k}: line longer than {_size_text(max_line)} ({why})",
                                     name, k)
            if whole:
                text = decode_utf8(whole, name, offset, line)
                if "\r" in text:
                    text = text.replace("\r\n", "\n")
                lines = text.split("\n")
                if text.endswith("\n"):
                    lines.pop()
                if max(map(len, lines)) > max_line:
                    k = next(i for i, s in enumerate(lines) if len(s) > max_line)
                    raise TextInputError(f"{name}:{line + k}: line longer than {_size_text(max_line)} "
                                         "(not a data file?)", name, line + k)
                yield line, lines
                line += len(lines)
                offset += len(whole)
            if not data:
                return


def data_lines(first: int, lines: list) -> tuple:
    """``(rows, line_numbers)`` of a block from :func:`iter_line_blocks` without blank lines
    and ``#`` comments (rows keep surrounding blanks); a block with neither costs no Python
    loop."""
    if lines and min(map(len, lines)) > 0 and "#" not in "".join(lines) \
            and not any(map(str.isspace, lines)):
        return lines, range(first, first + len(lines))
    rows, nums = [], []
    for i, raw in enumerate(lines):
        s = raw.strip()
        if s and s[0] != "#":
            rows.append(raw)
            nums.append(first + i)
    return rows, nums


def field_counts_equal(rows: list, n: int, sep: str = ",") -> bool:
    """True if every row has exactly ``n`` fields separated by ``sep`` (C-level loop)."""
    counts = set(map(str.count, rows, repeat(sep)))
    return counts == {n - 1} or not rows
