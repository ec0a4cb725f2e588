"""The lumped parameters an identified robot file carries (``metadata.identified.lumped_parameters``:
``{names, values, static}``), read and checked for either kind of robot. The kind's model
module turns them into its parameter set."""
from __future__ import annotations

import numpy as np

from delta_core.robot_file import check_bound
from delta_core.robot_file import RobotFileError


def read_identified_lumped(robot, names, kinds: dict, bounds: dict, static_unit: str):
    """(values (14,), static (3,)) of ``robot``'s identified lumped parameters, or None if it has
    none. ``names``: the kind's parameter names in order; ``kinds``: parameter name (and
    ``static_1..3``) -> bound kind in ``bounds``; ``static_unit``: "torques" or "forces" (for the
    message). A malformed or implausible entry raises RobotFileError naming it."""
    ident = (robot.metadata or {}).get("identified")
    lp = ident.get("lumped_parameters") if isinstance(ident, dict) else None
    if lp is None:
        return None
    where = f"{robot.source or robot.name}: metadata.identified.lumped_parameters"
    if not isinstance(lp, dict):
        raise RobotFileError(f"{where} must be a mapping with names, values and static")
    got, values = lp.get("names"), lp.get("values")
    if list(got or []) != list(names):
        raise RobotFileError(f"{where}.names must be {list(names)}, got {got!r}")
    try:
        v = np.asarray(values, dtype=float)
        static = np.asarray(lp.get("static", v[11:14]), dtype=float)
    except (TypeError, ValueError, IndexError):
        raise RobotFileError(f"{where}: values and static must be numbers") from None
    if v.shape != (14,) or static.shape != (3,) or not (np.isfinite(v).all() and np.isfinite(static).all()):
        raise RobotFileError(f"{where}: need 14 finite values and 3 finite static {static_unit}")
    for name, x in [*zip(names, v), *((f"static_{j + 1}", x) for j, x in enumerate(static))]:
        why = check_bound(bounds[kinds[name]], x)
        if why:
            raise RobotFileError(f"{where}: {name} {why}")
    return v, static
