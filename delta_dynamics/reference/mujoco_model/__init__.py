"""MuJoCo models of a rotary Delta robot: the closed chain built from the robot file
(:mod:`.mjcf`), a plant the simulated drives can step (:mod:`.plant`) and MuJoCo's
inverse dynamics of the closed chain (:mod:`.inverse`). Page: ``docs/mujoco.md``.

MuJoCo is an optional dependency (``pip install 'delta_robot[mujoco]'``, or ``pip install
mujoco``): :mod:`.mjcf` writes the MJCF text without it; the modules that run MuJoCo import it
through :func:`require_mujoco`, which names the package to install when it is missing.
"""
from __future__ import annotations

INSTALL_HINT = "the MuJoCo models need the 'mujoco' package: pip install 'delta_robot[mujoco]' (or pip install mujoco)"


def require_mujoco():
    """The ``mujoco`` module, or ImportError saying what to install."""
    try:
        # mujoco is optional: only its models load it
        import mujoco
    except ImportError as e:                    # pragma: no cover - depends on the environment
        raise ImportError(f"{INSTALL_HINT} ({e})") from e
    return mujoco
