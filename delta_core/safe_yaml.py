"""YAML for small configuration files, with the limits PyYAML's ``safe_load`` lacks.

``safe_load`` refuses arbitrary Python objects but happily recurses until a RecursionError
(``[[[[...]]]]`` 5000 deep), expands an alias bomb (``&a [*b, *b, ...]`` nine levels deep is
a billion values to anything that walks the data), raises a ValueError from deep inside for
an integer of more than 4300 digits, and keeps the last of two equal keys without a word.
:func:`load` refuses each with a :class:`YamlLimitError` naming the line:

* nesting deeper than ``max_depth`` levels (aliases followed), or an alias that contains
  itself;
* more than ``max_values`` values with every alias expanded;
* an integer with more than ``max_int_digits`` characters;
* a key that appears twice in one mapping (merge keys ``<<`` may still be overridden).

Syntax errors come as ``yaml.YAMLError``; :func:`one_line` turns any of them into one line.

Example::

    >>> load("a: {b: [1, 2]}")
    {'a': {'b': [1, 2]}}
    >>> try:
    ...     load("a: 1\\nb: 2\\na: 3\\n")
    ... except YamlLimitError as e:
    ...     print(e)
    line 3: key 'a' appears twice in this mapping (first on line 1)
    >>> try:
    ...     load("x: " + "[" * 50 + "]" * 50)
    ... except YamlLimitError as e:
    ...     print(e)
    line 1: nested deeper than 16 levels
"""
from __future__ import annotations

import yaml
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

MAX_DEPTH = 16
MAX_VALUES = 100_000
MAX_INT_DIGITS = 100


class YamlLimitError(ValueError):
    """A YAML text that breaks one of :func:`load`'s limits (the message names the line)."""


def _line(node_or_mark) -> int:
    mark = getattr(node_or_mark, "start_mark", node_or_mark)
    return mark.line + 1 if mark is not None else 0


class _Loader(yaml.SafeLoader):
    max_depth = MAX_DEPTH
    max_int_digits = MAX_INT_DIGITS

    def __init__(self, stream):
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent, index):
        """Compose a node, refusing nesting deeper than ``max_depth``."""
        self._depth += 1
        try:
            if self._depth > self.max_depth:
                raise YamlLimitError(f"line {_line(self.peek_event())}: nested deeper than "
                                     f"{self.max_depth} levels")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node, deep=False):
        """Construct a mapping, refusing a key that appears twice in it."""
        if isinstance(node, MappingNode):
            seen = {}
            for key, _ in node.value:
                if isinstance(key, ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                    k = (key.tag, key.value)
                    if k in seen:
                        raise YamlLimitError(f"line {_line(key)}: key {key.value!r} appears twice in "
                                             f"this mapping (first on line {seen[k]})")
                    seen[k] = _line(key)
        return super().construct_mapping(node, deep)

    def construct_yaml_int(self, node):
        """Construct an integer, refusing one of more than ``max_int_digits`` characters."""
        text = str(node.value)
        if len(text) > self.max_int_digits:
            raise YamlLimitError(f"line {_line(node)}: an integer of {len(text)} characters (at most "
                                 f"{self.max_int_digits}; not a plausible value)")
        return super().construct_yaml_int(node)


_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)


def _check_graph(root, max_depth: int, max_values: int) -> None:
    """Depth and expanded size of the node graph (aliases are shared nodes), iteratively."""
    size, depth = {}, {}
    stack = [(root, False)]
    active = set()
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            kids = _children(node)
            size[key] = 1 + sum(size[id(c)] for c in kids)
            depth[key] = 1 + max((depth[id(c)] for c in kids), default=0)
            active.discard(key)
            if depth[key] > max_depth:
                raise YamlLimitError(f"line {_line(node)}: nested deeper than {max_depth} levels "
                                     "(aliases followed)")
            if size[key] > max_values:
                raise YamlLimitError(f"line {_line(node)}: more than {max_values} values with the "
                                     "aliases expanded (an alias bomb?)")
            continue
        if key in size:
            continue
        if key in active:
            raise YamlLimitError(f"line {_line(node)}: an alias refers to a node that contains it "
                                 "(a recursive structure)")
        active.add(key)
        stack.append((node, True))
        for c in _children(node):
            if id(c) in active:
                raise YamlLimitError(f"line {_line(c)}: an alias refers to a node that contains it "
                                     "(a recursive structure)")
            if id(c) not in size:
                stack.append((c, False))


def _check_ints(root, max_digits: int) -> None:
    """Refuse the first over-long integer, naming its key path (``a.b[2]``) and line."""
    stack, seen = [(root, "")], set()
    while stack:
        node, path = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, ScalarNode):
            if node.tag == "tag:yaml.org,2002:int" and len(str(node.value)) > max_digits:
                where = f"{path} (line {_line(node)})" if path else f"line {_line(node)}"
                raise YamlLimitError(f"{where}: an integer of {len(str(node.value))} characters (at most "
                                     f"{max_digits}; not a plausible value)")
        elif isinstance(node, SequenceNode):
            stack.extend((c, f"{path}[{k}]") for k, c in reversed(list(enumerate(node.value))))
        elif isinstance(node, MappingNode):
            for key, value in reversed(node.value):
                name = key.value if isinstance(key, ScalarNode) else "?"
                stack.append((value, f"{path}.{name}" if path else str(name)))
                stack.append((key, path))


def _children(node):
    if isinstance(node, SequenceNode):
        return node.value
    if isinstance(node, MappingNode):
        return [x for kv in node.value for x in kv]
    return ()


def load(text: str, max_depth: int = MAX_DEPTH, max_values: int = MAX_VALUES):
    """The data of one YAML document (``None`` for an empty one), under the module's limits.

    Raises :class:`YamlLimitError` for a limit, ``yaml.YAMLError`` for a syntax error.
    """
    loader = _Loader(text)
    loader.max_depth = max_depth
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_graph(node, max_depth, max_values)
        _check_ints(node, loader.max_int_digits)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def one_line(err: Exception, text: str | None = None) -> str:
    """A YAML error as one line: ``line L, column C: problem (context)`` (``text``: the YAML
    text, to turn a reader error's character position into a line)."""
    if isinstance(err, yaml.reader.ReaderError):
        where = f"position {err.position}"
        if text is not None:
            line = text.count("\n", 0, err.position) + 1
            where = f"line {line}, column {err.position - (text.rfind(chr(10), 0, err.position) + 1) + 1}"
        return f"{where}: unacceptable character #x{err.character:04x}: {err.reason}"
    if isinstance(err, yaml.MarkedYAMLError) and err.problem_mark is not None:
        m = err.problem_mark
        text = f"line {m.line + 1}, column {m.column + 1}: {err.problem}"
        if err.context:
            cm = err.context_mark
            text += f" ({err.context}{f' on line {cm.line + 1}' if cm is not None else ''})"
        return " ".join(text.split())
    return " ".join(str(err).split())
