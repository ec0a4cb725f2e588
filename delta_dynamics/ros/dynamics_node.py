"""The feedforward node ``delta_dynamics``: desired arm state in, model torques out.

What its topic is for: the model's efforts for the setpoints the hardware node publishes
(``publish_desired_state``), to watch (plot them against the measured efforts, check a model
against a run) and as the reference of an external feedforward source. The control loop does
not need it: its own in-process model (``feedforward: model``, the default; the identified
robot file through ``feedforward_robot``) is cheaper and always on time, where an answer from
another process must come back within one control period (with ``feedforward: topic`` the loop
uses the answers that do, and its model for the others, counting both in ``~/status``).

Subscribes ``/delta/desired_state`` (trajectory_msgs/JointTrajectory with one point: positions,
velocities and accelerations of the three arm joints, matched by name against the robot file's
``joint_names``), maps it to the platform state with :func:`~delta_dynamics.rotary.dynamics.cartesian_state`
and publishes the torques of :func:`~delta_dynamics.rotary.dynamics.inverse_dynamics` (explicit model,
Asadi & Heydari eq. 39) on ``/delta/feedforward`` (sensor_msgs/JointState: ``name`` = the robot's
joint names, ``effort`` = tau in N m (carriage forces in N on a linear Delta), ``header`` copied from the desired state it answers).

Parameters (``docs/ros_interfaces.md``):

* ``robot`` (string, default ``nt_robot``): preset name or robot file path. Settable at run time;
  the new file is loaded and validated first, and an invalid one is rejected with the loader's
  reason while the old model stays in use.
* ``friction`` (bool, default true): include the robot file's friction model in the torques.

Service ``~/reload`` (std_srvs/Trigger) re-reads the current robot file (after editing it).

A desired state that cannot be used (no or several points, joint names that are not the three
arm joints, a field without exactly three values, NaN/inf, a position outside the robot file's
limits, an unreachable or singular pose) is
dropped with a warning naming the problem, throttled per kind of problem; the node keeps running.

Run: ``delta-dynamics-node --ros-args -p robot:=d3s800`` or ``python -m delta_dynamics.ros.dynamics_node``.
"""
from __future__ import annotations

import math
import sys
import time

import numpy as np
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from delta_core.ros.node_util import (DEFAULT_ROBOT, PUB_QOS, STATE_QOS, DropLog, add_prefix, declare_prefix,
                                     robot_descriptor, run)
from delta_dynamics.ros.robot_param import describe, load_model
from delta_dynamics.algorithms import cartesian_state, inverse_dynamics
from delta_dynamics.kinds import joint_units

NODE_NAME = "delta_dynamics"
DESIRED_TOPIC = "delta/desired_state"            # relative to the node's namespace
FEEDFORWARD_TOPIC = "delta/feedforward"
LIMIT_TOLERANCE = 1e-6   # rad, slack on the robot file's position limits


class DropMessage(ValueError):
    """A desired state the model cannot answer; ``kind`` groups the warnings for throttling."""

    def __init__(self, kind: str, text: str):
        super().__init__(text)
        self.kind = kind


class DynamicsNode(Node):
    """Feedforward torques from the explicit dynamic model (see the module docstring).

    ``kwargs`` go to :class:`rclpy.node.Node` (``context``, ``parameter_overrides``, ...).
    Raises ValueError (the loader's message) if the initial ``robot`` parameter is invalid.
    """

    def __init__(self, **kwargs):
        super().__init__(NODE_NAME, **kwargs)
        robot = self.declare_parameter("robot", DEFAULT_ROBOT, robot_descriptor(
            "; changeable at run time (validated first)")).value
        self._friction = bool(self.declare_parameter(
            "friction", True, ParameterDescriptor(
                description="include the robot file's friction model in the feedforward")).value)
        self._prefix = declare_prefix(self)
        self._use(load_model(robot))
        self._drops = DropLog(self.get_logger())
        self.published = 0
        self.callback_time = 0.0            # s, last desired-state callback (parse, model, publish)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self._pub = self.create_publisher(JointState, FEEDFORWARD_TOPIC, PUB_QOS)
        self.create_subscription(JointTrajectory, DESIRED_TOPIC, self._on_desired, STATE_QOS)
        self.create_service(Trigger, "~/reload", self._on_reload)
        self.get_logger().info(f"robot {describe(self._model)}; {self.resolve_topic_name(DESIRED_TOPIC)} -> "
                               f"{self.resolve_topic_name(FEEDFORWARD_TOPIC)}")

    # ------------------------------------------------------------------ model

    @property
    def model(self):
        """The :class:`~delta_dynamics.rotary.model.RotaryModel` in use."""
        return self._model

    def _use(self, model) -> None:
        self._model = model
        self._names = add_prefix(self._prefix, model.joint_names)
        self._unit = joint_units(model)["position"]
        self._perm_cache = (None, None)

    def _on_set_parameters(self, params) -> SetParametersResult:
        new_model, friction = None, None
        for p in params:
            if p.name == "robot":
                try:
                    new_model = load_model(p.value, like=self._model)
                except ValueError as e:   # RobotFileError, a bad type
                    return SetParametersResult(successful=False, reason=(
                        f"robot {p.value!r} rejected, keeping {describe(self._model)}: {e}"))
            elif p.name == "friction":
                friction = bool(p.value)
        if new_model is not None:
            self._use(new_model)
            self.get_logger().info(f"robot is now {describe(new_model)}")
        if friction is not None:
            self._friction = friction
        return SetParametersResult(successful=True)

    def _on_reload(self, request, response):
        robot = self.get_parameter("robot").value
        try:
            model = load_model(robot)
        except ValueError as e:
            response.success = False
            response.message = f"reload failed, keeping {describe(self._model)}: {e}"
            self.get_logger().error(response.message)
            return response
        self._use(model)
        response.success = True
        response.message = f"reloaded {describe(model)}"
        self.get_logger().info(response.message)
        return response

    # ------------------------------------------------------------------ per message

    def _permutation(self, names) -> list:
        """Index into ``names`` of each robot joint, in robot order (cached per name list)."""
        key = tuple(names)
        cached_key, perm = self._perm_cache
        if key == cached_key:
            return perm
        want = self._names
        if len(key) != 3 or sorted(key) != sorted(want):
            raise DropMessage("names", f"joint_names must be the arm joints {want} (any order), got {list(key)}")
        perm = [key.index(n) for n in want]
        self._perm_cache = (key, perm)
        return perm

    def _torques(self, names, q, qd, qdd) -> list:
        """tau (floats, robot joint order) for one state given by name; raises DropMessage."""
        perm = self._permutation(names)
        fields = (("positions", q), ("velocities", qd), ("accelerations", qdd))
        for field, values in fields:
            if len(values) != 3:
                raise DropMessage("lengths", f"{field} has {len(values)} values, expected 3 "
                                             f"(one per joint of {list(names)})")
        a = [float(q[k]) for k in perm]
        b = [float(qd[k]) for k in perm]
        c = [float(qdd[k]) for k in perm]
        if not math.isfinite(sum(a) + sum(b) + sum(c)):
            field, values = next((f, v) for f, v in zip(("positions", "velocities", "accelerations"),
                                                         (a, b, c)) if not math.isfinite(sum(v)))
            raise DropMessage("nonfinite", f"{field} must be finite, got {values} for {self._names}")
        model = self._model
        lo, hi = model.q_lo, model.q_hi
        for i in range(3):
            # outside the limits forward kinematics may answer for another elbow branch
            if not lo[i] - LIMIT_TOLERANCE <= a[i] <= hi[i] + LIMIT_TOLERANCE:
                raise DropMessage("unreachable", f"position of {self._names[i]} {a[i]:.6g} {self._unit} is outside "
                                                 f"its limits [{lo[i]:g}, {hi[i]:g}] (robot file)")
        try:
            X, Xd, Xdd = cartesian_state(model, a, b, c)
            tau = inverse_dynamics(model, X, Xd, Xdd, friction=self._friction)
        except ValueError as e:          # UnreachableError, SingularityError
            raise DropMessage("unreachable", f"no model efforts for positions {a} {self._unit}: {e}") from None
        return tau.tolist()

    def compute(self, names, q, qd, qdd) -> np.ndarray:
        """Feedforward torques (N m; N on a linear Delta) for one desired state, in the order of
        ``names``.

        ``names`` are the three actuated joints in any order, ``q``, ``qd``, ``qdd`` their
        positions, velocities and accelerations (rad or m) in that order. Uses the current
        model and ``friction`` setting; raises ValueError naming what is wrong with the input.
        For calling the model in-process (e.g. from the bringup) without DDS.
        """
        tau = self._torques(list(names), list(q), list(qd), list(qdd))
        perm = self._permutation(names)
        out = np.empty(3)
        out[perm] = tau
        return out

    def _on_desired(self, msg: JointTrajectory) -> None:
        t0 = time.perf_counter()
        try:
            if len(msg.points) != 1:
                raise DropMessage("points", f"expected exactly one trajectory point, got {len(msg.points)}")
            p = msg.points[0]
            tau = self._torques(msg.joint_names, p.positions, p.velocities, p.accelerations)
        except DropMessage as e:
            self._drops.warn(e.kind, f"dropped {self.resolve_topic_name(DESIRED_TOPIC)} message: {e}")
            return
        out = JointState()
        out.header = msg.header
        out.name = self._names
        out.effort = tau
        self._pub.publish(out)
        self.published += 1
        self.callback_time = time.perf_counter() - t0

    @property
    def dropped(self) -> int:
        """Number of desired states dropped so far."""
        return self._drops.count


def main(args=None) -> int:
    """Run the feedforward node until shut down; the exit status."""
    return run(lambda: DynamicsNode(), NODE_NAME, args)


if __name__ == "__main__":
    sys.exit(main())
