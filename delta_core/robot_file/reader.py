"""Reading a robot file: the file itself (size, text, YAML within limits) and its fields (the
:class:`Reader`, whose every error is one line naming the file, the field and the rule).

A kind's schema module (:mod:`.rotary`, :mod:`.linear`) reads its sections with a
:class:`Reader`; nothing here knows a kind.
"""
from __future__ import annotations

import math
import os
from typing import Any

import yaml

from delta_core import safe_yaml
from delta_core.robot_file.bounds import why_implausible
from delta_core.text_input import TextInputError, read_text

#: A robot file is a few kB; anything larger is the wrong file.
MAX_FILE_BYTES = 1 << 20
#: Longest message part quoting a value (a huge list in a wrong field is cut).
MAX_QUOTE = 240


class RobotFileError(ValueError):
    """A robot file is missing, unreadable or holds an invalid value."""


def read_robot_file(path: str | os.PathLike):
    """The YAML data of the robot file at ``path``: UTF-8 text of at most :data:`MAX_FILE_BYTES`
    and YAML within :func:`delta_core.safe_yaml.load`'s limits (nesting, aliases, integer length,
    duplicate keys). This is the one place a robot file is read from disk; every problem raises
    :class:`RobotFileError` with one line naming the file."""
    try:
        text = read_text(path, MAX_FILE_BYTES, "a robot file")
    except TextInputError as e:
        raise RobotFileError(str(e)) from None
    except OSError as e:
        raise RobotFileError(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        return safe_yaml.load(text)
    except safe_yaml.YamlLimitError as e:
        raise RobotFileError(f"{path}: {e}") from None
    except yaml.YAMLError as e:
        raise RobotFileError(f"{path}: not valid YAML: {safe_yaml.one_line(e, text)}") from None


class Reader:
    """Reads fields out of the nested YAML with error messages that name file and field.

    ``bounds``: the plausibility table of the robot's kind (a kind's ``BOUNDS``), checked after
    each number's rule."""

    def __init__(self, data: Any, source: str, bounds: dict | None = None):
        self.source = source
        self.bounds = bounds or {}
        if data is None:
            self.fail("", "is empty: a robot file is a mapping of fields (name, joint_names, "
                          "geometry, ...; see docs/robot_file.md)")
        if not isinstance(data, dict):
            self.fail("", f"must be a mapping of fields, got {type(data).__name__}")
        self.data = data
        self._check_text()

    def _check_text(self):
        """Names go into XML, topics and log lines: refuse control characters (a tab or a line
        break in a joint name becomes a blank in the URDF, which then names another joint)."""
        for path in ("name", "joint_names"):
            v = self.data.get(path)
            items = v if isinstance(v, list) else [v]
            for k, x in enumerate(items):
                if isinstance(x, str) and not x.isprintable():
                    where = f"{path}[{k}]" if isinstance(v, list) else path
                    self.fail(where, f"must be printable text (no tabs, line breaks or other control "
                                     f"characters), got {x!r}")

    def fail(self, where: str, rule: str):
        """Raise :class:`RobotFileError` "<file>: <field> <rule>" (a long rule is cut)."""
        prefix = f"{self.source}: " if self.source else ""
        if len(rule) > 2 * MAX_QUOTE:       # a huge value quoted in the rule: keep one short line
            rule = f"{rule[:MAX_QUOTE]}... ({len(rule)} characters)"
        raise RobotFileError(f"{prefix}{where + ' ' if where else ''}{rule}")

    def get(self, path: str, default: Any = ...):
        """The value at the dotted ``path``; ``default`` if it is missing (without a default a
        missing field fails)."""
        node: Any = self.data
        for part in path.split("."):
            if not isinstance(node, dict):
                self.fail(path, f"must be inside a mapping, got {node!r}")
            if part not in node:
                if default is not ...:
                    return default
                self.fail(path, "is missing")
            node = node[part]
        return node

    def _value(self, path: str, v: Any, what: str = "a number") -> float:
        """``v`` as a finite float, else fail."""
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            hint = ""
            if isinstance(v, str):
                try:
                    float(v)
                    hint = (" (YAML 1.1, as read here and by xacro, takes an exponent without "
                            "a decimal point or a sign for text: write 1.0e-4 or 2.0e+3)")
                except ValueError:
                    pass
            self.fail(path, f"must be {what}, got {v!r}{hint}")
        try:
            x = float(v)
        except OverflowError:
            self.fail(path, f"must be a finite number, got an integer of {len(str(v))} digits")
        if not math.isfinite(x):
            self.fail(path, f"must be finite, got {x}")
        return x

    def value(self, path: str, v: Any, what: str = "a number") -> float:
        """``v`` (found at ``path``) as a finite float, else fail naming ``path``."""
        return self._value(path, v, what)

    def _plausible(self, path: str, x: float) -> None:
        why = why_implausible(path, x, self.bounds)
        if why:
            self.fail(path, why)

    def number(self, path: str, *, gt=None, ge=None, le=None, lt=None, default: Any = ...) -> float:
        """The number at ``path`` under the rules ``gt``/``ge``/``le``/``lt`` and its
        plausibility bound."""
        v = self._value(path, self.get(path, default))
        for bound, ok, word in ((gt, lambda a, b: a > b, ">"), (ge, lambda a, b: a >= b, ">="),
                                (lt, lambda a, b: a < b, "<"), (le, lambda a, b: a <= b, "<=")):
            if bound is not None and not ok(v, bound):
                self.fail(path, f"must be {word} {bound:g}, got {v:g}")
        self._plausible(path, v)
        return v

    def triple(self, path: str, *, ge=None, gt=None, default: Any = ...) -> tuple:
        """Three numbers (one per joint; a scalar stands for three equal ones) under the rules
        and the plausibility bound."""
        v = self.get(path, default)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            v = [v] * 3
        if not isinstance(v, (list, tuple)) or len(v) != 3:
            self.fail(path, f"must be a list of 3 numbers (one per joint), got {v!r}")
        out = []
        for k, x in enumerate(v):
            x = self._value(f"{path}[{k}]", x, "a finite number")
            if ge is not None and x < ge:
                self.fail(f"{path}[{k}]", f"must be >= {ge:g}, got {x:g}")
            if gt is not None and not x > gt:
                self.fail(f"{path}[{k}]", f"must be > {gt:g}, got {x:g}")
            self._plausible(f"{path}[{k}]", x)
            out.append(x)
        return tuple(out)

    def check_fields(self, schema: dict, node: Any = ..., where: str = "") -> None:
        """Refuse fields ``schema`` does not know (a misspelt optional field would otherwise
        silently fall back to its default). ``schema``: field -> None (a value), ``...`` (free
        form) or a dict (a mapping of such fields)."""
        node = self.data if node is ... else node
        if not isinstance(node, dict):
            return
        for key, value in node.items():
            path = f"{where}.{key}" if where else str(key)
            if key not in schema:
                self.fail(path, f"is not a known field (known here: {', '.join(schema)})")
            sub = schema[key]
            if isinstance(sub, dict):
                if not isinstance(value, dict):
                    self.fail(path, f"must be a mapping of fields, got {value!r}")
                self.check_fields(sub, value, path)
