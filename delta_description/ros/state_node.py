"""The state node ``delta_state``: the full URDF joint state and the platform pose from ``/joint_states``.

Topics are relative to the node's namespace (shown here in the root namespace) and joint and
frame names carry the ``prefix`` parameter (default ''). Subscribes ``/joint_states`` (sensor_msgs/JointState; messages that lack any of the robot's arm
joints are ignored, since other publishers may share the topic; other joints in a message are
ignored) and for each message publishes

* ``/delta/robot_joint_states`` (sensor_msgs/JointState): every non-fixed joint of the URDF, i.e.
  the arm joints passed through plus ``platform_x/y/z`` and the forearm bars'
  ``forearm_<i><a|b>_bend_joint`` / ``..._tilt_joint``
  (:func:`delta_description.passive_joints.expand_joint_state`); velocities too when the input
  has one per joint. ``header.stamp`` is copied (now if the input has none). This is the
  ``joint_states`` input of ``robot_state_publisher``.
* ``/delta/platform_position`` (geometry_msgs/PointStamped, frame ``base_link``): the platform
  centre from forward kinematics.

and, on a timer, ``/delta/platform_path`` (visualization_msgs/Marker, LINE_STRIP in ``base_link``,
namespace ``platform_path``): the last ``path_length`` platform positions, a new one being added
when the platform has moved at least ``path_min_distance`` from the previous one.

Parameters: ``prefix`` (joint and frame name prefix, read-only), ``robot`` (preset name or file path, default ``nt_robot``; settable at run time),
``path_length`` (int, default 500), ``path_min_distance`` (m, default 0.001), ``path_rate``
(Hz, default 10.0, read-only), ``max_rate`` (Hz, default 0.0 = every message: an upper bound on the
rate of the two per-message topics, for a fast ``/joint_states``).

Run: ``delta-state-node`` or ``python -m delta_description.ros.state_node``.
"""
from __future__ import annotations

import math
import sys
from collections import deque

from geometry_msgs.msg import Point, PointStamped
from rcl_interfaces.msg import (FloatingPointRange, IntegerRange, ParameterDescriptor,
                                SetParametersResult)
from rclpy.node import Node
from sensor_msgs.msg import JointState
from visualization_msgs.msg import Marker

from delta_description.passive_joints import expand_joint_state
from delta_core.ros.node_util import (DEFAULT_ROBOT, PUB_QOS, STATE_QOS, DropLog, add_prefix,
                                     declare_prefix, robot_descriptor, run)
from delta_dynamics.ros.robot_param import describe, load_model

NODE_NAME = "delta_state"
FRAME = "base_link"
# relative to the node's namespace (docs/ros_interfaces.md, "Namespaces and prefixes")
JOINT_STATES_TOPIC = "joint_states"
ROBOT_JOINT_STATES_TOPIC = "delta/robot_joint_states"
POSITION_TOPIC = "delta/platform_position"
PATH_TOPIC = "delta/platform_path"


class StateNode(Node):
    """Full joint state, platform position and path (see the module docstring).

    ``kwargs`` go to :class:`rclpy.node.Node`. Raises ValueError (the loader's message) if the
    initial ``robot`` parameter is invalid.
    """

    def __init__(self, **kwargs):
        super().__init__(NODE_NAME, **kwargs)
        robot = self.declare_parameter("robot", DEFAULT_ROBOT, robot_descriptor(
            "; changeable at run time (validated first)")).value
        self._path_length = self.declare_parameter("path_length", 500, ParameterDescriptor(
            description="number of recent platform positions in the path marker",
            integer_range=[IntegerRange(from_value=2, to_value=100000, step=1)])).value
        self._min_dist = self.declare_parameter("path_min_distance", 0.001, ParameterDescriptor(
            description="m; a position joins the path once this far from the previous one",
            floating_point_range=[FloatingPointRange(from_value=0.0, to_value=1.0)])).value
        path_rate = self.declare_parameter("path_rate", 10.0, ParameterDescriptor(
            description="Hz; rate of the path marker", read_only=True,
            floating_point_range=[FloatingPointRange(from_value=0.1, to_value=100.0)])).value
        self._max_rate = self.declare_parameter("max_rate", 0.0, ParameterDescriptor(
            description="Hz; upper bound on the rate of the joint state and position outputs (0: every input)",
            floating_point_range=[FloatingPointRange(from_value=0.0, to_value=10000.0)])).value
        self._prefix = declare_prefix(self)
        self._model = load_model(robot)
        self._path = deque(maxlen=self._path_length)
        self._path_stamp = None
        self._last_out_ns = None
        self._drops = DropLog(self.get_logger())
        self.ignored = 0                    # messages without the arm joints
        self.published = 0
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self._joints_pub = self.create_publisher(JointState, ROBOT_JOINT_STATES_TOPIC, PUB_QOS)
        self._pos_pub = self.create_publisher(PointStamped, POSITION_TOPIC, PUB_QOS)
        self._path_pub = self.create_publisher(Marker, PATH_TOPIC, PUB_QOS)
        self.create_subscription(JointState, JOINT_STATES_TOPIC, self._on_joint_states, STATE_QOS)
        self.create_timer(1.0 / path_rate, self._publish_path)
        self.get_logger().info(f"robot {describe(self._model)}; {JOINT_STATES_TOPIC} -> "
                               f"{ROBOT_JOINT_STATES_TOPIC}, {POSITION_TOPIC}, {PATH_TOPIC}")

    @property
    def model(self):
        """The model in use (of the robot file's kind)."""
        return self._model

    def _on_set_parameters(self, params) -> SetParametersResult:
        model = None
        for p in params:
            if p.name == "robot":
                try:
                    model = load_model(p.value)
                except ValueError as e:
                    return SetParametersResult(successful=False, reason=(
                        f"robot {p.value!r} rejected, keeping {describe(self._model)}: {e}"))
        for p in params:
            if p.name == "path_length":
                self._path_length = int(p.value)
                self._path = deque(self._path, maxlen=self._path_length)
            elif p.name == "path_min_distance":
                self._min_dist = float(p.value)
            elif p.name == "max_rate":
                self._max_rate = float(p.value)
        if model is not None:
            self._model = model
            self._path.clear()
            self.get_logger().info(f"robot is now {describe(model)}")
        return SetParametersResult(successful=True)

    def _on_joint_states(self, msg: JointState) -> None:
        model = self._model
        prefix = self._prefix
        names = [n[len(prefix):] if n.startswith(prefix) else "" for n in msg.name]   # '' : not this robot's
        if not all(j in names for j in model.joint_names):
            self.ignored += 1               # someone else's joints on the shared topic
            return
        stamp = msg.header.stamp
        if stamp.sec == 0 and stamp.nanosec == 0:
            stamp = self.get_clock().now().to_msg()
        if self._max_rate > 0:
            now = self.get_clock().now().nanoseconds
            if self._last_out_ns is not None and now - self._last_out_ns < 1e9 / self._max_rate:
                return
            self._last_out_ns = now
        velocity = msg.velocity if len(msg.velocity) == len(names) else None
        if velocity is not None and not math.isfinite(sum(velocity)):
            velocity = None
        try:
            if len(msg.position) != len(names):
                raise ValueError(f"{len(names)} names but {len(msg.position)} positions")
            full = expand_joint_state(model, names, msg.position, velocity)
        except ValueError as e:             # NaN, unreachable, singular
            self._drops.warn("bad", f"dropped {self.resolve_topic_name(JOINT_STATES_TOPIC)} message: {e}")
            return
        out = JointState()
        out.header.stamp = stamp
        out.name = add_prefix(prefix, full.names)
        out.position = list(full.position)
        if full.velocity is not None:
            out.velocity = list(full.velocity)
        self._joints_pub.publish(out)
        k = full.names.index("platform_x")
        x, y, z = full.position[k:k + 3]
        pt = PointStamped()
        pt.header.stamp = stamp
        pt.header.frame_id = prefix + FRAME
        pt.point = Point(x=x, y=y, z=z)
        self._pos_pub.publish(pt)
        self.published += 1
        path = self._path
        if not path or math.dist(path[-1], (x, y, z)) >= self._min_dist:
            path.append((x, y, z))
            self._path_stamp = stamp

    def _publish_path(self) -> None:
        if len(self._path) < 2:
            return
        m = Marker()
        m.header.frame_id = self._prefix + FRAME
        m.header.stamp = self._path_stamp
        m.ns = "platform_path"
        m.id = 0
        m.type = Marker.LINE_STRIP
        m.action = Marker.ADD
        m.pose.orientation.w = 1.0
        m.scale.x = 0.002                   # line width, m
        m.color.r, m.color.g, m.color.b, m.color.a = 1.0, 0.6, 0.1, 1.0
        m.points = [Point(x=p[0], y=p[1], z=p[2]) for p in self._path]
        self._path_pub.publish(m)


def main(args=None) -> int:
    """Run the state node until shut down; the exit status."""
    return run(lambda: StateNode(), NODE_NAME, args)


if __name__ == "__main__":
    sys.exit(main())
