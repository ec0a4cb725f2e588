"""The architecture of docs/architecture.md, held against the code's import graph and against a
running process:

* layers: a package imports only the packages below it (delta_core < delta_dynamics <
  delta_description, delta_hardware < delta_bringup), and only ROS adapters (``*/ros/``) and the
  bringup import ROS adapters or rclpy;
* no cycle among the modules;
* the robot kinds: no module imports another kind's module, code outside a kind reaches it only
  through the interface (``delta_dynamics.algorithms``, ``delta_dynamics.kinds``), and
  ``delta_dynamics.common`` (what the kinds share) imports no kind;
* no module imports another module's private name (``from x import _y``);
* imports of the project's own modules sit at module level (in delta_core, delta_dynamics and
  delta_description; inside functions only optional heavy dependencies);
* a robot file is read once per process, at the edge: the command-line tools and the builders
  of the simulated robot, fed a preset name, read its file once.

The graph is read from the source (``ast``), so it sees imports inside functions too.
"""
from __future__ import annotations

import ast
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest

import delta_core.robot_file as robot_file
from delta_dynamics.kinds import KINDS

ROOT = Path(__file__).resolve().parents[1]
#: The packages in layer order: a package may import those of a lower layer only.
LAYERS = {"delta_core": 0, "delta_dynamics": 1, "delta_description": 2, "delta_hardware": 2, "delta_bringup": 3}
#: Packages whose imports of our own modules must all be at module level.
MODULE_LEVEL = ("delta_core", "delta_dynamics", "delta_description")
#: Third-party packages that only ROS adapters (and the bringup) may import.
ROS = ("rclpy", "rcl_interfaces", "std_msgs", "sensor_msgs", "geometry_msgs", "trajectory_msgs",
       "visualization_msgs", "control_msgs", "builtin_interfaces", "launch", "launch_ros", "rosgraph_msgs",
       "diagnostic_msgs", "action_msgs", "lifecycle_msgs", "std_srvs")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> dict:
    """{module name: (path, is package)} of every module of the five packages."""
    out = {}
    for top in LAYERS:
        for path in sorted((ROOT / top).rglob("*.py")):
            out[_module_name(path)] = (path, path.name == "__init__.py")
    return out


MODULES = _modules()


class Import:
    """One imported thing: ``target`` (a module), ``names`` taken from it, where, and whether
    the import statement sits inside a function."""

    def __init__(self, source, target, names, line, in_function):
        self.source, self.target, self.names, self.line, self.in_function = source, target, names, line, in_function

    def __repr__(self):
        return f"{self.source}:{self.line} -> {self.target} {list(self.names)}"


def _imports(module: str) -> list:
    path, is_pkg = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                for a in child.names:
                    out.append(Import(module, a.name, (), child.lineno, in_function))
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = module.split(".") if is_pkg else module.split(".")[:-1]
                    base = base[:len(base) - (child.level - 1)]
                    target = ".".join(base + ([child.module] if child.module else []))
                else:
                    target = child.module
                for a in child.names:
                    sub = f"{target}.{a.name}"
                    if sub in MODULES:                 # "from pkg import module"
                        out.append(Import(module, sub, (), child.lineno, in_function))
                    else:
                        out.append(Import(module, target, (a.name,), child.lineno, in_function))
            visit(child, inner)

    visit(tree, False)
    return out


IMPORTS = {m: _imports(m) for m in MODULES}


def _ours(target: str) -> bool:
    return target.split(".")[0] in LAYERS


def _is_ros_adapter(module: str) -> bool:
    return ".ros." in module + "." or module.startswith("delta_bringup")


def _kind_of_module(module: str):
    for kind in KINDS.names():
        pkg = KINDS.get(kind).package
        if module == pkg or module.startswith(pkg + "."):
            return kind
    return None


def test_the_graph_sees_the_whole_tree():
    assert len(MODULES) > 100 and "delta_dynamics.algorithms" in MODULES
    assert any(i.target == "delta_dynamics.kinds" for i in IMPORTS["delta_dynamics.algorithms"])


def test_no_import_from_a_lower_layer_to_a_higher_one():
    bad = [i for imps in IMPORTS.values() for i in imps if _ours(i.target)
           and LAYERS[i.target.split(".")[0]] > LAYERS[i.source.split(".")[0]]]
    assert not bad, f"imports from a lower layer to a higher one: {bad}"
    sideways = [i for imps in IMPORTS.values() for i in imps if _ours(i.target)
                and i.target.split(".")[0] != i.source.split(".")[0]
                and LAYERS[i.target.split(".")[0]] == LAYERS[i.source.split(".")[0]]]
    assert not sideways, f"imports between packages of one layer: {sideways}"


def _reaches_ros(module: str, seen=None) -> list:
    """The chain of module-level imports by which ``module`` imports a ROS package, or []."""
    seen = set() if seen is None else seen
    seen.add(module)
    for i in IMPORTS.get(module, ()):
        if i.in_function:
            continue
        if i.target.split(".")[0] in ROS:
            return [module, i.target]
        if i.target in MODULES and i.target not in seen:
            chain = _reaches_ros(i.target, seen)
            if chain:
                return [module] + chain
    return []


def test_everything_outside_ros_adapters_works_without_ros():
    bad = [chain for m in MODULES if not _is_ros_adapter(m) for chain in [_reaches_ros(m)] if chain]
    assert not bad, f"modules outside */ros/ that import ROS (by these module-level imports): {bad}"


def _cycles(edges: dict) -> list:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            strong(v)
    return out


#: Known breaches in other engineers' areas while they rework them (issue 19, drive-bus part);
#: an entry that no longer breaks the rule fails :func:`test_the_known_breaches_still_exist`.
KNOWN_CYCLES: list = []
KNOWN_PRIVATE: set = set()


def _module_cycles() -> list:
    edges = defaultdict(set)
    for m, imps in IMPORTS.items():
        for i in imps:
            if i.target in MODULES and i.target != m and not (MODULES[i.target][1] and m.startswith(i.target + ".")):
                edges[m].add(i.target)
    return _cycles(edges)


def test_no_cycle_among_the_modules():
    assert [c for c in _module_cycles() if c not in KNOWN_CYCLES] == []


def test_no_cross_kind_import_and_kinds_are_reached_through_the_interface():
    assert set(KINDS.names()) == {"rotary", "linear"}
    cross, bypass = [], []
    for m, imps in IMPORTS.items():
        own = _kind_of_module(m)
        for i in imps:
            kind = _kind_of_module(i.target) if _ours(i.target) else None
            if kind is None or kind == own:
                continue
            if own is not None:
                cross.append(i)
            else:
                bypass.append(i)
    assert not cross, f"a kind imports another kind's module: {cross}"
    assert not bypass, f"reach a kind through delta_dynamics.algorithms / kinds, not its modules: {bypass}"


def test_common_imports_no_kind_and_nothing_above_it():
    bad = [i for m, imps in IMPORTS.items() if m.startswith("delta_dynamics.common") for i in imps
           if i.target.startswith("delta_dynamics.") and not i.target.startswith("delta_dynamics.common")]
    assert not bad, f"delta_dynamics.common must stay neutral: {bad}"


def _private_imports() -> list:
    """Imports of another module's private name, or of a private module from outside its package."""
    bad = [(i, n) for imps in IMPORTS.values() for i in imps if _ours(i.target) and i.target != i.source
           for n in i.names if n.startswith("_") and not n.startswith("__")]
    for imps in IMPORTS.values():
        for i in imps:
            if not _ours(i.target):
                continue
            parts = i.target.split(".")
            for k, part in enumerate(parts):
                if part.startswith("_") and not part.startswith("__") and not i.source.startswith(".".join(parts[:k]) + "."):
                    bad.append((i, part))
    return bad


def test_no_import_of_another_modules_private_name():
    bad = [i for i, name in _private_imports() if (i.source, name) not in KNOWN_PRIVATE]
    assert not bad, f"imports of another module's private name: {bad}"


#: The one module that may use rclpy's private names (the hooks rclpy lacks, each explained there).
RCLPY_ADAPTER = Path("delta_core/ros/rclpy_adapter.py")
#: rclpy's private names the adapter uses; a private name of rclpy is any ``_x`` reached from it.
RCLPY_PRIVATE = {"_take_service", "_executor", "_rclpy_pybind11"}


def _rclpy_private_uses(path: Path) -> list:
    """(line, name) of every use in ``path`` of a private rclpy name: an import from an rclpy
    module whose name (or the imported name) starts with ``_``, a ``_LifecycleNodeMixin``
    name, an override or attribute, or ``getattr`` string, of a name in RCLPY_PRIVATE."""
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "rclpy":
            parts = (node.module or "").split(".")
            found += [(node.lineno, node.module) for p in parts if p.startswith("_")][:1]
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("_")]
        elif isinstance(node, ast.Attribute) and (node.attr in RCLPY_PRIVATE or "_LifecycleNodeMixin" in node.attr):
            found.append((node.lineno, node.attr))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in RCLPY_PRIVATE:
            found.append((node.lineno, node.name))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                node.value in RCLPY_PRIVATE or "_LifecycleNodeMixin" in node.value):
            found.append((node.lineno, node.value))
    return found


def test_only_the_rclpy_adapter_uses_private_rclpy_names():
    bad = [f"{path.relative_to(ROOT)}:{line}: {name}" for package in LAYERS
           for path in sorted((ROOT / package).rglob("*.py")) if path.relative_to(ROOT) != RCLPY_ADAPTER
           for line, name in _rclpy_private_uses(path)]
    assert not bad, f"private rclpy names outside {RCLPY_ADAPTER}: {bad}"
    assert {name for _, name in _rclpy_private_uses(ROOT / RCLPY_ADAPTER)} >= {"_take_service", "_executor"}


def test_the_known_breaches_still_exist():
    """Remove an entry of KNOWN_CYCLES / KNOWN_PRIVATE when its code is mended."""
    cycles = _module_cycles()
    assert all(c in cycles for c in KNOWN_CYCLES), cycles
    found = {(i.source, name) for i, name in _private_imports()}
    assert KNOWN_PRIVATE <= found, found


def test_own_modules_are_imported_at_module_level():
    bad = [i for m, imps in IMPORTS.items() if m.split(".")[0] in MODULE_LEVEL for i in imps
           if i.in_function and _ours(i.target)]
    assert not bad, f"import these at module level: {bad}"


def _undocumented(path: Path) -> list:
    """The public definitions of one file without a docstring, as ``file:line: name``: a def or class whose
    name does not start with ``_``, at module level or inside a public class."""
    found = []

    def walk(node, cls=None):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if not child.name.startswith("_") and not (cls and cls.startswith("_")) \
                        and not ast.get_docstring(child):
                    name = f"{cls}.{child.name}" if cls else child.name
                    found.append(f"{path.relative_to(ROOT)}:{child.lineno}: {name}")
                if isinstance(child, ast.ClassDef):
                    walk(child, child.name)

    walk(ast.parse(path.read_text(encoding="utf-8")))
    return found


def test_every_public_definition_has_a_docstring():
    missing = [m for package in LAYERS for path in sorted((ROOT / package).rglob("*.py")) for m in _undocumented(path)]
    assert not missing, "give these a docstring:\n" + "\n".join(missing)


def test_the_drivers_and_bringup_import_own_modules_inside_a_function_only_with_a_reason():
    """delta_hardware and delta_bringup may defer an import of their own modules (rclpy, rosbags,
    an optional package behind it, or nothing heavy before a CLI's signal handlers), each marked
    ``# in-function: <why>`` on the import or within the three lines above it."""
    bad = []
    for m, imps in IMPORTS.items():
        if m.split(".")[0] not in ("delta_hardware", "delta_bringup"):
            continue
        lines = MODULES[m][0].read_text(encoding="utf-8").splitlines()
        for i in imps:
            if i.in_function and _ours(i.target):
                near = lines[max(0, i.line - 4):i.line + 1]
                if not any("# in-function" in ln for ln in near):
                    bad.append(i)
    assert not bad, f"import these at module level or mark why not (# in-function: ...): {bad}"


def test_the_kinds_have_the_same_modules():
    files = {kind: sorted(p.name for p in (ROOT / KINDS.get(kind).package.replace(".", "/")).glob("*.py"))
             for kind in KINDS.names()}
    assert len({tuple(v) for v in files.values()}) == 1, files
    assert files["rotary"] == ["__init__.py", "chains.py", "demo.py", "dynamics.py", "identification.py", "kinematics.py",
                               "model.py", "simulate.py"]


# ----------------------------------------------------------------------------- read once, at the edge

@pytest.fixture
def reads(monkeypatch):
    """Counts the robot files read in this process, by path."""
    counts = Counter()
    original = robot_file.read_robot_file

    def counting(path):
        counts[str(Path(path).resolve())] += 1
        return original(path)

    monkeypatch.setattr(robot_file, "read_robot_file", counting)
    return counts


def _trajectory(tmp_path, robot="d3s800"):
    from delta_dynamics.cli import main
    path = tmp_path / "traj.csv"
    assert main(["trajectory", "circle", "--radius", "0.1", "--depth", "-0.85", "--period", "1.0",
                 "--duration", "0.2", "--dt", "0.01", "--out", str(path)]) == 0
    return path


@pytest.mark.parametrize("argv", [
    ["ik", "--robot", "nt_robot", "0", "0", "-0.8"],
    ["trajectory", "circle", "--robot", "d3s800", "--radius", "0.1", "--depth", "-0.85", "--dt", "0.01",
     "--duration", "0.1", "--out", "{tmp}/c.csv"],
    ["inverse", "--robot", "d3s800", "--trajectory", "{traj}", "--out", "{tmp}/j.csv"],
    ["inverse", "--robot", "d3s800", "--model", "staicu", "--trajectory", "{traj}", "--out", "{tmp}/j.csv"],
    ["compare", "--robot", "d3s800", "--trajectory", "{traj}", "--models", "explicit,staicu,multibody"],
    ["reactions", "--robot", "d3s800", "--trajectory", "{traj}", "--out", "{tmp}/r.csv"],
])
def test_a_dynamics_command_reads_its_robot_file_once(tmp_path, reads, argv):
    from delta_dynamics.cli import main
    traj = _trajectory(tmp_path)
    reads.clear()
    assert main([a.format(tmp=tmp_path, traj=traj) for a in argv]) == 0
    assert list(reads.values()) == [1], dict(reads)


@pytest.mark.parametrize("argv", [
    ["urdf", "--robot", "colombo2020", "-o", "{tmp}/r.urdf"],
    ["check", "--robot", "nt_robot", "--samples", "3"],
    ["controllers", "--robot", "linear_delta_xl"],
    ["moveit", "--robot", "nt_robot", "--out", "{tmp}/moveit"],
])
def test_a_description_command_reads_its_robot_file_once(tmp_path, reads, argv):
    from delta_description.cli import main
    assert main([a.format(tmp=tmp_path) for a in argv]) == 0
    assert list(reads.values()) == [1], dict(reads)


@pytest.mark.parametrize("name, plant", [("nt_robot", "explicit"), ("colombo2020", "explicit"),
                                         ("d3s800", "multibody")])
def test_the_simulated_robot_is_built_from_one_read(reads, name, plant):
    """What the hardware node does with a preset name: load it once, then hand the loaded file
    to the model, the drives and their plant."""
    from delta_dynamics.kinds import model_for
    from delta_hardware.drives import make_drives
    robot = robot_file.load_robot(name)
    model = model_for(robot)
    make_drives("sim", robot, {"plant": plant}).close()
    assert list(reads.values()) == [1], dict(reads)
    assert np.isfinite(model.m_x)
