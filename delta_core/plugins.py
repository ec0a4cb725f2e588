"""One plug-in mechanism for every kind of plug-in: robot kinds, plants, reference models,
drive buses (and whatever comes next).

A *registry* is a named table of plug-ins of one sort. A plug-in is registered with one line,
by name and by the ``"module:attribute"`` path of what implements it, so registering imports
nothing: the target is imported on first use, and a plug-in whose optional dependency is
missing (MuJoCo, the CAN stack) costs nothing until someone asks for it. Each registry lives
beside the interface its plug-ins implement (a layer below never looks a plug-in of a layer
above up); the registration lines of the built-in plug-ins sit next to it, one line each.
Third-party packages add plug-ins through the entry-point group ``delta_robot.<group>``
(``[project.entry-points."delta_robot.drive_bus"] ethercat = "my_pkg.bus:EthercatDriveSet"``),
read once, the first time a name is not found among the built-in ones.

>>> shapes = Registry("shape", "delta_robot.test_shapes")
>>> shapes.register("circle", "math:pi", description="a round one")
>>> shapes.get("circle")
3.141592653589793
>>> shapes.names(), shapes.info("circle")["description"]
(('circle',), 'a round one')
>>> shapes.get("square")
Traceback (most recent call last):
...
delta_core.plugins.PluginError: unknown shape 'square' (known: circle)

An object defined where it is registered (in a test, a notebook) is registered as itself:
``shapes.register("unit", 1.0)``.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field


class PluginError(LookupError):
    """An unknown plug-in name, or one whose implementation cannot be imported."""


@dataclass(frozen=True)
class Entry:
    """One registered plug-in: its name, the ``"module:attribute"`` path of its implementation
    and free-form metadata (``description``, the robot kinds it supports, ...)."""

    name: str
    target: str
    info: dict = field(default_factory=dict)


class Registry:
    """The plug-ins of one sort (``what``: the word used in messages, e.g. ``"plant"``).

    ``group`` is the entry-point group third-party packages register in (default
    ``"delta_robot." + what`` with spaces as underscores)."""

    def __init__(self, what: str, group: str | None = None):
        self.what = what
        self.group = group or "delta_robot." + what.replace(" ", "_")
        self._entries: dict[str, Entry] = {}
        self._loaded: dict[str, object] = {}
        self._scanned = False

    def register(self, name: str, target, replace: bool = False, **info) -> None:
        """Register ``name`` as implemented by ``target``: a ``"module:attribute"`` path
        (imported on first use) or the implementation itself; ``info`` is kept for :meth:`info`.
        Registering the same name twice is an error unless ``replace``."""
        if isinstance(target, str) and ":" not in target:
            raise ValueError(f"{self.what} {name!r}: target must be 'module:attribute', got {target!r}")
        if name in self._entries and not replace:
            raise ValueError(f"{self.what} {name!r} is registered twice")
        self._loaded.pop(name, None)
        if isinstance(target, str):
            self._entries[name] = Entry(name, target, dict(info))
        else:
            self._entries[name] = Entry(name, f"{getattr(target, '__module__', '?')}:{getattr(target, '__qualname__', '?')}",
                                        dict(info))
            self._loaded[name] = target

    def _scan_entry_points(self) -> None:
        if self._scanned:
            return
        self._scanned = True
        try:
            # importlib.metadata is slow to import: only when a name is not built in
            from importlib.metadata import entry_points
            found = entry_points(group=self.group)
        except Exception:  # a broken distribution's metadata must not break the built-in ones
            return
        for ep in found:
            if ep.name not in self._entries:
                self._entries[ep.name] = Entry(ep.name, ep.value, {"entry_point": True})

    def _entry(self, name: str) -> Entry:
        entry = self._entries.get(name)
        if entry is None:
            self._scan_entry_points()
            entry = self._entries.get(name)
        if entry is None:
            raise PluginError(f"unknown {self.what} {name!r} (known: {', '.join(self.names()) or 'none'})")
        return entry

    def get(self, name: str):
        """The implementation of ``name``, imported on the first call."""
        if name in self._loaded:
            return self._loaded[name]
        entry = self._entry(name)
        module, _, attr = entry.target.partition(":")
        try:
            obj = importlib.import_module(module)
            for part in attr.split("."):
                obj = getattr(obj, part)
        except ImportError as e:
            raise PluginError(f"{self.what} {name!r} is not available: {e}") from None
        except AttributeError:
            raise PluginError(f"{self.what} {name!r} is not available: {module} has no {attr}") from None
        self._loaded[name] = obj
        return obj

    def info(self, name: str) -> dict:
        """The metadata ``name`` was registered with."""
        return dict(self._entry(name).info)

    def names(self) -> tuple:
        """The registered names, built-in ones first, in registration order."""
        return tuple(self._entries)

    def __contains__(self, name: str) -> bool:
        try:
            self._entry(name)
        except PluginError:
            return False
        return True

    def copy(self) -> "Registry":
        """An independent registry with the same plug-ins (to add some for a while, in a test)."""
        other = Registry(self.what, self.group)
        other._entries, other._loaded, other._scanned = dict(self._entries), dict(self._loaded), self._scanned
        return other

    def __repr__(self) -> str:
        return f"<Registry {self.what}: {', '.join(self._entries)}>"
