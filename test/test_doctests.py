"""Every ``>>>`` example in the packages' docstrings runs (modules that need rclpy, launch or
other optional packages are imported only when those are importable)."""
from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

PACKAGES = ("delta_core", "delta_description", "delta_dynamics", "delta_hardware", "delta_bringup")


def _modules():
    for top in PACKAGES:
        pkg = importlib.import_module(top)
        yield top
        for info in pkgutil.walk_packages(pkg.__path__, prefix=top + "."):
            if not info.name.endswith("__main__"):
                yield info.name


def _has_examples(name):
    try:
        mod = importlib.import_module(name)
    except ImportError:          # an optional dependency (rclpy message packages, control_msgs, mujoco)
        return False
    return bool(doctest.DocTestFinder().find(mod)) and any(t.examples for t in doctest.DocTestFinder().find(mod))


MODULES = [m for m in _modules() if _has_examples(m)]


def test_some_modules_have_examples():
    assert len(MODULES) >= 3, MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    mod = importlib.import_module(name)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
