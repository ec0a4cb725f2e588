"""CSV files of numbers: the one block-wise reader and the one writer of the project's data files.

A header line names the columns (matched by name, any order; extra columns are ignored), then
one row of numbers per line, SI units. Blank lines and lines starting with ``#`` are skipped
(line numbers still count them). A file may have at most
:data:`~delta_dynamics.limits.MAX_SAMPLES` data rows (1000 s at 1 kHz) and lines of at most
64 kB; it is read in blocks (:class:`CsvReader`), so memory stays near twice the parsed arrays.
Every problem raises :class:`CsvError` naming the file, the line and the column, e.g.
``traj.csv:7: column 'x': not a number: 'abc'``. Numbers are written with Python's shortest
round-trip repr, so reading a written file gives the same floats. Writes are atomic (temporary
file + rename): on any error the target is left untouched.

The file kinds built on it: trajectories (:mod:`.trajectory`), joint data (:mod:`.joint_data`),
calibration measurements (:mod:`delta_dynamics.calibration.data`), sampled motions.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from delta_core.atomic_file import atomic_write_chunks
from delta_core.text_input import TextInputError, data_lines, field_counts_equal, iter_line_blocks
from delta_dynamics.limits import MAX_SAMPLES

#: What a file with too many rows is told about the limit.
LIMIT_NAME = "MAX_SAMPLES in delta_dynamics/limits.py"


class DataFileError(ValueError):
    """A data file (CSV or bag) that cannot be used; the message names the file and where in it."""


class CsvError(DataFileError):
    """A CSV file that cannot be used; the message names file, line and column."""

    def __init__(self, message: str, path: str = "", line: int | None = None,
                 column: str | None = None):
        super().__init__(message)
        self.path = path
        self.line = line
        self.column = column


@dataclass(frozen=True)
class CsvTable:
    """Numeric columns of a CSV file: ``columns[name]`` is an (N,) array; ``lines[k]`` is the
    1-based line number of data row k in the file."""

    path: str
    header: tuple
    columns: dict
    lines: np.ndarray
    header_line: int = 1

    def __len__(self) -> int:
        return len(self.lines)

    def stack(self, names) -> np.ndarray:
        """The named columns side by side, shape (N, len(names))."""
        return np.stack([self.columns[n] for n in names], axis=1)

    def where(self, row: int) -> str:
        """``file:LINE (t = ... s)`` for data row ``row`` (0-based), for error messages."""
        line = int(self.lines[row])
        t = self.columns.get("t")
        at = f" (t = {float(t[row]):.6g} s)" if t is not None else ""
        return f"{self.path}:{line}{at}"


# ----------------------------------------------------------------------------- reading

def read_csv(path: str | os.PathLike, required, optional=(), min_rows: int = 1,
             increasing: str | None = "t", max_rows: int = MAX_SAMPLES) -> CsvTable:
    """Read the ``required`` (and, if present, ``optional``) numeric columns of a CSV file.

    Raises :class:`CsvError` for a missing header or column, a duplicate column name, a row
    with the wrong number of fields, an empty, non-numeric or non-finite value, fewer than
    ``min_rows`` or more than ``max_rows`` data rows, (``increasing``) a column that does not
    increase strictly, a line longer than 64 kB or text that is not UTF-8; OSError if the
    file cannot be read.

    The file is read a block of lines at a time (:func:`delta_core.text_input.iter_line_blocks`)
    and each block parsed by numpy's C parser into arrays (the exact per-cell messages come
    from a second, Python pass over a block that numpy refuses), so memory stays near twice
    the parsed arrays whatever the file's size.
    """
    reader = CsvReader(path, required, optional, max_rows)
    reader.read()
    return reader.table(min_rows, increasing)


class CsvReader:
    """A CSV file read a block of lines at a time: the header, then blocks of parsed rows.

    :meth:`read` reads the whole file and :meth:`table` joins the blocks; a caller that
    wants bounded memory feeds :meth:`add_block` itself (``iter_line_blocks``) and takes
    ``blocks`` and ``lines`` away as they fill. ``wanted`` maps each column read (the
    required ones and the optional ones the header has) to its index in the header; a block
    is an (n, len(wanted)) array of those columns in that order.
    """

    def __init__(self, path, required, optional=(), max_rows: int = MAX_SAMPLES, limit_name: str = LIMIT_NAME):
        self.name = os.fspath(path)
        self.required, self.optional = tuple(required), tuple(optional)
        self.max_rows, self.limit_name = max_rows, limit_name
        self.header = None
        self.header_line = 0
        self.width = 0
        self.wanted: dict[str, int] = {}
        self.blocks: list = []          # (n, len(wanted)) float arrays
        self.lines: list = []           # (n,) line numbers
        self.rows = 0

    def read(self):
        """Read the whole file (OSError if it cannot be read)."""
        try:
            for first, block in iter_line_blocks(self.name, what="a CSV file"):
                self.add_block(first, block)
        except TextInputError as e:
            raise CsvError(str(e), self.name, e.line) from None

    def check_read(self, min_rows: int = 1):
        """Refuse a file without a header or with fewer than ``min_rows`` data rows."""
        name = self.name
        if self.header is None:
            raise CsvError(f"{name}: empty file: expected a header line naming the columns "
                           f"({', '.join(self.required)})", name)
        n = self.rows
        if n < min_rows:
            raise CsvError(f"{name}: {n} data row{'s' if n != 1 else ''}, "
                           f"need at least {min_rows}", name)

    def table(self, min_rows: int = 1, increasing: str | None = "t") -> CsvTable:
        """The blocks read so far joined into a :class:`CsvTable` (and taken from the reader)."""
        self.check_read(min_rows)
        name = self.name
        columns = {c: (np.concatenate([b[:, j] for b in self.blocks]) if self.blocks else np.empty(0))
                   for j, c in enumerate(self.wanted)}
        lines = np.concatenate(self.lines) if self.lines else np.empty(0, dtype=np.int64)
        self.blocks.clear()
        self.lines.clear()
        if increasing is not None and increasing in columns:
            t = columns[increasing]
            bad = np.flatnonzero(np.diff(t) <= 0)
            if len(bad):
                k = int(bad[0]) + 1
                raise CsvError(f"{name}:{lines[k]}: column '{increasing}': {float(t[k])!r} is not after the "
                               f"previous row's {float(t[k - 1])!r} (times must increase strictly)",
                               name, int(lines[k]), increasing)
        return CsvTable(name, self.header, columns, lines, self.header_line)

    def set_header(self, lineno, s):
        """Take line ``lineno`` (text ``s``) as the header: check it and find the columns to read."""
        name = self.name
        fields = [c.strip() for c in s.split(",")]
        header = tuple(fields)
        for k, col in enumerate(header):
            if not col:
                raise CsvError(f"{name}:{lineno}: header field {k + 1} is empty "
                               f"(header: {s})", name, lineno)
            if header.index(col) != k:
                raise CsvError(f"{name}:{lineno}: column '{col}' appears twice in the header",
                               name, lineno, col)
        missing = [c for c in self.required if c not in header]
        if missing:
            shown = ", ".join(header)
            shown = shown if len(shown) <= 200 else shown[:200] + "..."
            raise CsvError(
                f"{name}:{lineno}: missing column{'s' if len(missing) > 1 else ''} "
                f"{', '.join(repr(c) for c in missing)} (the header has {shown}; "
                f"needed: {', '.join(self.required)})", name, lineno, missing[0])
        self.header, self.header_line, self.width = header, lineno, len(header)
        self.wanted = {c: header.index(c) for c in (*self.required, *self.optional) if c in header}

    def add_block(self, first, block):
        """Parse one block of lines (the header with the first), at most ``max_rows`` data rows in all."""
        rows, nums = data_lines(first, block)
        if rows and self.header is None:
            self.set_header(nums[0], rows[0].strip())
            rows, nums = rows[1:], nums[1:]
        if not rows:
            return
        if self.rows + len(rows) > self.max_rows:
            k = self.max_rows - self.rows
            raise CsvError(f"{self.name}:{nums[k]}: more than {self.max_rows} data rows (the limit, "
                           f"{self.limit_name}): split the file or decimate it", self.name, nums[k])
        cols = list(self.wanted.values())
        arr = None
        if field_counts_equal(rows, self.width):
            try:
                arr = np.loadtxt(rows, delimiter=",", usecols=cols, dtype=float, ndmin=2,
                                 comments=None, quotechar=None)
            except ValueError:
                arr = None
            if arr is not None and not np.isfinite(arr).all():
                arr = None                  # the Python pass names the first one
        if arr is None or arr.shape != (len(rows), len(cols)):
            arr = self._parse_slowly(rows, nums)
        self.blocks.append(arr)
        self.lines.append(np.arange(nums.start, nums.stop) if isinstance(nums, range)
                          else np.asarray(nums, dtype=np.int64))
        self.rows += len(rows)

    def _parse_slowly(self, rows, nums):
        """The rows one value at a time: the first problem raises CsvError naming it."""
        name, width, header = self.name, self.width, self.header
        out = np.empty((len(rows), len(self.wanted)))
        for r, (s, lineno) in enumerate(zip(rows, nums)):
            fields = [c.strip() for c in s.split(",")]
            if len(fields) != width:
                if len(fields) < width:
                    col = header[len(fields)]
                    raise CsvError(f"{name}:{lineno}: column '{col}' is missing: the row has "
                                   f"{len(fields)} fields, the header {width}", name, lineno, col)
                raise CsvError(f"{name}:{lineno}: the row has {len(fields)} fields, the header only "
                               f"{width} (field {width + 1} has no column name)", name, lineno)
            for j, (col, k) in enumerate(self.wanted.items()):
                cell = fields[k]
                try:
                    v = float(cell)
                except ValueError:
                    why = "empty value" if not cell else f"not a number: {_quote(cell)}"
                    raise CsvError(f"{name}:{lineno}: column '{col}': {why}", name, lineno, col) from None
                if not math.isfinite(v):
                    raise CsvError(f"{name}:{lineno}: column '{col}': not a finite number: {cell!r}",
                                   name, lineno, col)
                out[r, j] = v
        return out


def _quote(cell: str, limit: int = 40) -> str:
    """``repr`` of a cell, cut to ``limit`` characters (a binary file's line is long)."""
    return repr(cell) if len(cell) <= limit else f"{cell[:limit]!r}... ({len(cell)} characters)"


# ----------------------------------------------------------------------------- writing

def iter_csv(header, data, rows: int = 8192):
    """CSV text in pieces of ``rows`` rows: the header line, then the rows of ``data``
    (N, len(header)) as shortest round-trip decimals. Checks shape and finiteness first."""
    data = np.asarray(data, dtype=float)
    if data.ndim != 2 or data.shape[1] != len(header):
        raise ValueError(f"data must have shape (N, {len(header)}), got {data.shape}")
    finite = np.isfinite(data).all(axis=1)
    if not finite.all():
        row = int(np.argmin(finite))
        raise ValueError(f"refusing to write non-finite values (row {row + 1}: {data[row].tolist()})")
    yield ",".join(header) + "\n"
    for a in range(0, len(data), rows):
        block = (data[a:a + rows] + 0.0).tolist()           # + 0.0: no "-0.0"
        yield "".join(",".join(map(repr, row)) + "\n" for row in block)


def format_csv(header, data) -> str:
    """CSV text: one header line, then the rows of ``data`` (N, len(header)) as shortest
    round-trip decimals."""
    return "".join(iter_csv(header, data))


def write_csv(path: str | os.PathLike, header, data) -> Path:
    """Write ``data`` under ``header`` atomically, a few thousand rows at a time (memory: one
    piece of text, not the whole file; see :func:`iter_csv`)."""
    pieces = iter_csv(header, data)
    next_piece = next(pieces)          # shape and finiteness checked before the file is touched
    return atomic_write_chunks(path, _chain(next_piece, pieces))


def _chain(first, rest):
    yield first
    yield from rest


