"""The collision reaction ``retract`` in the control loop, without ROS, on the simulated drives
of both kinds (explicit plant, the loop's own momentum observer and collision detection): a
platform that runs into a stiff wall during a motion is detected, goes back along the path it
came by ``retract_distance`` (measured on the simulated platform, against the path it really
travelled) and ends in the latched quick stop; a collision right after a motion starts retracts
what there is; one while holding just stops; an emergency stop during the retract stops at
once; nothing received before the collision undoes it; bad values are refused by name.

The wall: a plane x = x_w the platform's centre must not pass; beyond it a spring of
:data:`WALL_STIFFNESS` pushes back (F = -k (x - x_w), along -x), recomputed from the plant's
platform position every cycle (so the contact ends when the retract moves the robot off it).
Tolerance: 0.5 mm of the 5 mm gone back, 0.1 mm off the path travelled (the retract's end is on the
commanded path, where the robot settles before the stop; the robot's tracking error and what it
pressed into the wall before the detection differ from it by micrometres to tenths of a
millimetre: measured 5.006 mm back and 0.8 um off on nt_robot, 5.017 mm and 2.4 um on colombo2020)."""
from __future__ import annotations

import time

import numpy as np
import pytest

from delta_dynamics.algorithms import forward_kinematics, inverse_kinematics
from delta_dynamics.kinds import model_for
from delta_hardware.control_loop import ControlLoop, LoopConfig
from delta_hardware.drives import DriveError, DriveState
from delta_hardware.drives.simulated import SimulatedDriveSet
from delta_hardware.retract import DISTANCE_DEFAULT
from delta_hardware.trajectory_plan import build_plan

DT = 0.002
WALL_STIFFNESS = 20000.0          # N/m: 20 N per mm of the platform in the wall
THRESHOLD = {"nt_robot": 2.0, "colombo2020": 3.0}       # N m per arm, N per carriage
TOLERANCE = 5e-4                  # m: of the distance gone back (module docstring)
OFF_PATH = 1e-4                   # m: of the end from the path travelled


class Rig:
    """A control loop with the retract reaction on the simulated robot ``name``, its clock, and an
    optional wall at x = ``wall`` (m)."""

    def __init__(self, name, distance=DISTANCE_DEFAULT):
        self.m = model_for(name)
        self.drives = SimulatedDriveSet(name, torque_noise=0.02, seed=1)
        self.loop = ControlLoop(self.m, self.drives, LoopConfig(
            rate=1 / DT, feedforward="model", monitoring=True, collision_threshold=(THRESHOLD[name],) * 3,
            collision_reaction="retract", retract_distance=distance))
        self.loop.activate()
        self.t = 0.0
        self.wall = None
        self.X = []                   # the simulated platform's position after each cycle
        self.events = []

    def run(self, seconds=None, until=None, limit=5.0):
        """Cycles for ``seconds`` of loop time, or until ``until(event)`` is true of an event (at most ``limit`` s)."""
        n = int(round((seconds if seconds is not None else limit) / DT))
        for _ in range(n):
            if self.wall is not None:
                x = self.drives.platform_position[0]
                self.drives.set_external_force([-WALL_STIFFNESS * max(x - self.wall, 0.0), 0.0, 0.0])
            out = self.loop.cycle(self.t)
            self.t += DT
            self.X.append(self.drives.platform_position.copy())
            self.events += out.events
            if until is not None and any(until(e) for e in out.events):
                return out
        assert until is None, f"no such event within {limit} s: {self.events}"
        return None

    def move_x(self, dx, seconds):
        """A plan moving the platform by ``dx`` m along x (joint-space interpolation) in ``seconds``."""
        X0 = forward_kinematics(self.m, np.array(self.drives.read().position)[None])[0]
        q1 = inverse_kinematics(self.m, (X0 + [dx, 0.0, 0.0])[None])[0]
        self.loop.submit_plan(build_plan(self.m, self.t, self.loop.current_setpoint(), self.t, [seconds], [q1]))
        return X0


def _arc_back(path, X):
    """Platform arc length (m) along the polyline ``path`` (K, 3) from its last point back to the point
    nearest ``X``, and that distance from it (m)."""
    A, B = path[:-1], path[1:]
    AB = B - A
    w = np.clip(np.einsum("ij,ij->i", X - A, AB) / np.maximum(np.einsum("ij,ij->i", AB, AB), 1e-30), 0, 1)
    d = np.linalg.norm(A + w[:, None] * AB - X, axis=1)
    j = int(np.argmin(d))
    seg = np.linalg.norm(AB, axis=1)
    s = np.concatenate(([0.0], np.cumsum(seg)))
    return s[-1] - (s[j] + w[j] * seg[j]), float(d[j])


@pytest.mark.parametrize("name", ["nt_robot", "colombo2020"])
def test_a_wall_hit_during_a_motion_retracts_back_along_the_path_then_stops_latched(name):
    rig = Rig(name)
    rig.run(0.1)
    X0 = rig.move_x(0.04, 1.0)
    rig.wall = X0[0] + 0.02                                # half-way
    before_ns = time.time_ns()
    rig.run(until=lambda e: e.startswith("collision on"))
    text = rig.events[-1]
    k_hit = len(rig.X) - 1
    assert "estimated force" in text and "direction (-1.00" in text, text          # the wall pushes along -x
    assert "retracting 5.0 mm back along the path" in text and rig.loop.retracting, text
    assert rig.drives.state is DriveState.ENABLED                                   # moving back, not braked
    with pytest.raises(DriveError, match="stopped"):                                # latched at once
        rig.loop.submit_plan(build_plan(rig.m, rig.t, rig.loop.current_setpoint(), rig.t, [1.0],
                                        [rig.loop.current_setpoint().q]))
    with pytest.raises(DriveError, match="retracting after a collision"):
        rig.loop.reset()
    rig.run(until=lambda e: "then stopped" in e)
    final = rig.events[-1]
    assert final.startswith(text.split("; retracting")[0]), (text, final)          # the same joint, force, time
    assert "retracted 5.0 mm back along the path, then stopped" in final
    assert rig.loop.stopped_reason == final and not rig.loop.retracting
    assert rig.drives.state is DriveState.QUICK_STOP
    rig.run(0.3)
    X_end = rig.X[-1]
    np.testing.assert_allclose(X_end, rig.X[-150], atol=1e-9)                     # the brakes hold
    assert X_end[0] < rig.wall                                                       # off the wall
    path = np.array(rig.X[:k_hit + 1])                                               # the path it travelled
    back, off = _arc_back(path, X_end)
    assert abs(back - 0.005) < TOLERANCE and off < OFF_PATH, (back, off)
    assert abs(np.linalg.norm(X_end - path[-1]) - 0.005) < TOLERANCE
    assert not any("collision" in e for e in rig.events[:-2]), rig.events
    # nothing received before the collision undoes it; a reset after it does
    with pytest.raises(DriveError, match="void"):
        rig.loop.reset(requested_ns=before_ns)
    with pytest.raises(DriveError, match="stopped"):
        rig.loop.submit_plan(build_plan(rig.m, rig.t, rig.loop.current_setpoint(), rig.t, [1.0],
                                        [rig.loop.current_setpoint().q]))
    rig.wall = None
    rig.drives.set_external_force([0.0, 0.0, 0.0])
    rig.loop.reset()
    rig.move_x(-0.01, 0.5)
    rig.run(until=lambda e: e == "trajectory finished")


def test_a_longer_retract_distance_goes_further_back():
    rig = Rig("nt_robot", distance=0.012)
    rig.run(0.1)
    X0 = rig.move_x(0.05, 1.0)
    rig.wall = X0[0] + 0.03
    rig.run(until=lambda e: e.startswith("collision on"))
    k_hit = len(rig.X) - 1
    rig.run(until=lambda e: "then stopped" in e)
    assert "retracted 12.0 mm back along the path" in rig.events[-1]
    back, off = _arc_back(np.array(rig.X[:k_hit + 1]), rig.X[-1])
    assert abs(back - 0.012) < TOLERANCE and off < OFF_PATH, (back, off)


def test_a_collision_right_after_the_start_retracts_what_there_is():
    """The wall 1 mm ahead: the path travelled when the contact is detected is shorter than 5 mm,
    and the robot goes back to where the motion started."""
    rig = Rig("colombo2020")
    rig.run(0.1)
    X0 = rig.move_x(0.04, 1.0)
    rig.wall = X0[0] + 0.001
    rig.run(until=lambda e: e.startswith("collision on"))
    got = float(rig.events[-1].split("retracting ")[1].split(" mm")[0])
    assert 0.5 < got < 4.0, rig.events[-1]
    rig.run(until=lambda e: "then stopped" in e)
    np.testing.assert_allclose(rig.X[-1], X0, atol=3e-4)                           # back at the start


def test_a_collision_while_holding_just_stops():
    rig = Rig("nt_robot")
    rig.run(0.1)
    rig.move_x(0.01, 0.3)
    rig.run(until=lambda e: e == "trajectory finished")
    rig.run(0.1)                                          # holding
    rig.drives.set_external_force([0.0, 0.0, -60.0])
    rig.run(until=lambda e: e.startswith("collision on"))
    assert rig.events[-1].endswith("; no path to retract along (the robot was at rest): stopped"), rig.events[-1]
    assert rig.drives.state is DriveState.QUICK_STOP and not rig.loop.retracting


def test_an_emergency_stop_during_the_retract_stops_at_once():
    rig = Rig("nt_robot")
    rig.run(0.1)
    X0 = rig.move_x(0.04, 1.0)
    rig.wall = X0[0] + 0.02
    rig.run(until=lambda e: e.startswith("collision on"))
    rig.run(0.1)                                          # retracting
    assert rig.loop.retracting and rig.drives.state is DriveState.ENABLED
    rig.loop.emergency_stop("operator e-stop")
    assert rig.drives.state is DriveState.QUICK_STOP and not rig.loop.retracting      # at once, not at a cycle
    X_stop = rig.drives.platform_position.copy()
    rig.run(1.0)                                          # longer than the rest of the retract
    np.testing.assert_allclose(rig.X[-1], X_stop, atol=1e-9)
    assert rig.loop.stopped_reason == "operator e-stop"
    assert not any("then stopped" in e for e in rig.events), rig.events
    rig.wall = None
    rig.drives.set_external_force([0.0, 0.0, 0.0])
    rig.loop.reset()
    assert rig.drives.state is DriveState.ENABLED and not rig.loop.stopped_reason


def test_stop_stays_the_default_reaction():
    rig = Rig("nt_robot")
    rig.loop.reconfigure(collision_reaction="stop")
    rig.run(0.1)
    X0 = rig.move_x(0.04, 1.0)
    rig.wall = X0[0] + 0.02
    rig.run(until=lambda e: e.startswith("collision on"))
    assert "retract" not in rig.events[-1] and rig.drives.state is DriveState.QUICK_STOP
    assert LoopConfig().collision_reaction == "stop"


@pytest.mark.parametrize("field, value, reason", [
    ("collision_reaction", "bounce", "collision_reaction must be one of stop, retract"),
    ("retract_distance", 0.0, "retract_distance must be a number in [0.0005, 0.05] m"),
    ("retract_distance", 0.2, "retract_distance must be a number in [0.0005, 0.05] m"),
    ("retract_distance", float("nan"), "retract_distance must be a number in [0.0005, 0.05] m"),
])
def test_bad_reaction_values_are_refused_by_name(field, value, reason):
    with pytest.raises(ValueError, match=reason.replace("[", r"\[").replace("]", r"\]")):
        LoopConfig(rate=1 / DT, **{field: value})
    rig = Rig("nt_robot")
    with pytest.raises(ValueError, match=field):
        rig.loop.reconfigure(**{field: value})
    assert rig.loop.cfg.collision_reaction == "retract" and rig.loop.cfg.retract_distance == DISTANCE_DEFAULT
