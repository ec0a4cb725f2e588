"""delta-ctl: everyday calls to a running delta_robot stack, without ``ros2`` or a script.

    delta-ctl status                        # lifecycle, stop state, joints, platform, limits (JSON); exit 1 if not active
    delta-ctl where                         # platform position and joints, one line each
    delta-ctl events [--follow]             # the hardware node's events (--follow: until Ctrl-C)
    delta-ctl estop                         # emergency stop: every axis quick-stopped, holding
    delta-ctl reset                         # clear the stop, hold where the robot is
    delta-ctl move 0.05 0.0 -0.75 [--duration 1.5] [--wait]   # platform to a point (m, base_link)
    delta-ctl move --joints 0.3 0.3 0.3                       # arm joints to angles (rad)
    delta-ctl run trajectory.csv [--approach 2] [--wait]      # a platform trajectory file
    delta-ctl pick -0.15 0 -0.78 0.15 0 -0.78 [--height 0.025] [--blend 0.01] [--dwell 0.05] [--cycles N] [--wait]
                                            # time-optimal pick-and-place cycles (~/pick; docs/motion.md)
    delta-ctl pause | resume                # simulated time (the simulated robot, use_sim_time)
    delta-ctl record [TOPICS] --out DIR [--storage mcap|sqlite3]   # a rosbag2 bag, until Ctrl-C
    delta-ctl push 0 0 -30 [--for 0.5]      # push the simulated platform (N, base_link; 0 0 0 removes it)
    delta-ctl payload 0.5                   # the simulated robot's payload (kg; the controller's model stays)
    delta-ctl wrench                        # the external force the observer estimates (N, base_link)

Options before the command: ``--namespace r1`` (the stack's namespace, as
``delta-bringup --namespace``), ``--prefix r1_`` (its joint name prefix), ``--node`` (the
hardware node's name, default ``delta_hardware``), ``--timeout`` (s to wait for the stack).
The stack is found on the ROS network of ``ROS_DOMAIN_ID`` (and
``ROS_AUTOMATIC_DISCOVERY_RANGE``): the same values as the stack's, or nothing is found.

``move`` and ``run`` publish on ``<node>/joint_trajectory`` and wait for the node's verdict
(accepted / rejected with the reason); ``--wait`` also waits for the end of the motion. A
trajectory file is a ``delta-dynamics`` platform trajectory CSV (``t,x,y,z[,xd,...,zdd]``,
``delta_dynamics/data_files/trajectory.py``); it starts ``--approach`` s from now (the robot moves to
its first point meanwhile) when its first time is 0. ``pick`` calls the node's ``~/pick``
service (it plans the door from the first point to the second and back, time-optimally, and
runs it) and prints the cycle time and the picks per minute; ``--wait`` waits for the end.

Exit status: 0 done; 1 the stack refused or is not running (the reason on stderr); 2 bad
arguments or input file, ``delta-ctl: error: <message>``, never a traceback.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

from delta_bringup.main import missing_ros
from delta_core.ros.names import check_namespace, check_prefix
from delta_core.ros.service_call import RESEND_PERIOD, NoAnswer, answer, waiting_by

PROG = "delta-ctl"
PLATFORM = ("platform_x", "platform_y", "platform_z")


class Failed(RuntimeError):
    """The stack refused or did not answer (exit 1)."""


def _number(text):
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if v != v or v in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"must be finite, got {text}")
    return v


def _positive(text):
    v = _number(text)
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return v


def parser() -> argparse.ArgumentParser:
    """The argument parser of ``delta-ctl`` (the module docstring is its help)."""
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("--namespace", default="", help="the stack's ROS namespace (e.g. r1)")
    ap.add_argument("--prefix", default="", help="the stack's joint name prefix (e.g. r1_)")
    ap.add_argument("--node", default="delta_hardware", help="the hardware node's name (default delta_hardware)")
    ap.add_argument("--timeout", type=_positive, default=10.0, help="s to wait for the stack (default 10)")
    sub = ap.add_subparsers(dest="command", required=True, metavar="command")
    sub.add_parser("status", help="lifecycle and stop state, joints, platform position, tracking error, "
                   "active limits, drives, timing (JSON)")
    sub.add_parser("where", help="the platform position and the joints, one line each")
    p = sub.add_parser("events", help="print the hardware node's events")
    p.add_argument("--follow", "-f", action="store_true", help="until Ctrl-C (default: for --seconds)")
    p.add_argument("--seconds", type=_positive, default=2.0, help="s to listen without --follow (default 2)")
    sub.add_parser("estop", help="emergency stop: every axis quick-stopped, holding")
    sub.add_parser("reset", help="clear the stop and hold where the robot is")
    sub.add_parser("pause", help="pause simulated time")
    sub.add_parser("resume", help="resume simulated time")
    p = sub.add_parser("move", help="platform to a point (x y z, m) or --joints (rad)")
    p.add_argument("point", nargs="*", type=_number, help="x y z in metres (base_link)")
    p.add_argument("--joints", nargs=3, type=_number, metavar=("Q1", "Q2", "Q3"), help="arm joint angles (rad)")
    p.add_argument("--duration", type=_positive, default=1.5, help="s the motion takes (default 1.5)")
    p.add_argument("--wait", action="store_true", help="wait for the end of the motion")
    p = sub.add_parser("run", help="run a platform trajectory CSV file")
    p.add_argument("file", help="t,x,y,z[,xd,yd,zd,xdd,ydd,zdd] CSV (delta-dynamics trajectory)")
    p.add_argument("--approach", type=_positive, default=2.0,
                   help="s to reach the first point when the file starts at t = 0 (default 2)")
    p.add_argument("--wait", action="store_true", help="wait for the end of the motion")
    _pick_parser(sub)
    _record_parser(sub)
    _monitoring_parser(sub)
    return ap


def _pick_parser(sub):
    """``pick``: time-optimal pick-and-place cycles on the hardware node (``~/pick``)."""
    p = sub.add_parser("pick", help="time-optimal pick-and-place cycles between two points (m, base_link)")
    p.add_argument("points", nargs=6, type=_number, metavar="XYZ",
                   help="X1 Y1 Z1 X2 Y2 Z2: the from (pick) and to (place) points, m")
    p.add_argument("--height", type=_number, default=0.025, help="m up at each end (default 0.025)")
    p.add_argument("--blend", type=_number, default=0.01, help="m, corner blend radius (default 0.01)")
    p.add_argument("--dwell", type=_number, default=0.05, help="s at each end (default 0.05)")
    p.add_argument("--cycles", type=int, default=1, help="there-and-back cycles (default 1)")
    p.add_argument("--wait", action="store_true", help="wait for the end of the run")


def _monitoring_parser(sub):
    """``push``, ``payload``, ``wrench``: the simulated robot's disturbances and the observer's estimate."""
    p = sub.add_parser("push", help="push the simulated platform with a force (N, base_link); 0 0 0 removes it")
    p.add_argument("force", nargs=3, type=_number, metavar="F", help="FX FY FZ: N in base_link")
    p.add_argument("--for", dest="seconds", type=_positive, help="remove the push after this many s (default: "
                   "it stays until the next push)")
    p = sub.add_parser("payload", help="the simulated robot's payload (kg; the controller's model stays)")
    p.add_argument("mass", type=_number, help="kg >= 0")
    sub.add_parser("wrench", help="the external force at the platform the momentum observer estimates (N)")


def _record_parser(sub):
    """``record``: a rosbag2 bag without ``ros2 bag`` (delta_bringup/record.py)."""
    p = sub.add_parser("record", help="record topics into a rosbag2 bag until Ctrl-C (no ROS install needed)",
                       description="Record topics into a rosbag2 bag (mcap or sqlite3) that ros2 bag, rosbags and "
                                   "delta-identify read; Ctrl-C or SIGTERM stops and writes it, nothing lost.")
    p.add_argument("topics", nargs="*", help="topics (default: joint_states, relative to --namespace)")
    p.add_argument("--out", required=True, help="bag directory to create (must not exist)")
    p.add_argument("--storage", choices=("mcap", "sqlite3"), default="mcap", help="storage format (default mcap)")
    p.add_argument("--duration", type=_positive, help="stop after this many seconds (default: at Ctrl-C)")


def parse_args(argv):
    """The arguments of ``argv``, the namespace normalised; a bad namespace, prefix or ``move`` target
    exits 2 with the parser's message."""
    ap = parser()
    args = ap.parse_args(argv)
    try:
        args.namespace = check_namespace(args.namespace)
        check_prefix(args.prefix)
    except ValueError as e:
        ap.error(str(e))
    if args.command == "move":
        if (args.joints is None) == (len(args.point) != 3) or (args.joints is not None and args.point):
            ap.error("move takes a point x y z (m) or --joints Q1 Q2 Q3 (rad)")
    if args.command == "pick" and not 0 <= args.cycles < 2 ** 32:
        ap.error(f"pick --cycles must be a whole number >= 1, got {args.cycles}")
    return args


def trajectory_points(args):
    """(joint names without prefix, [(t, positions, velocities, accelerations)]) to send."""
    if args.command == "move":
        if args.joints is not None:
            return None, [(args.duration, list(args.joints), [0.0] * 3, [0.0] * 3)]
        return list(PLATFORM), [(args.duration, list(args.point), [0.0] * 3, [0.0] * 3)]
    from delta_dynamics.data_files.trajectory import read_trajectory   # in-function: numpy/scipy, for --file only
    tr = read_trajectory(args.file).trajectory
    t = tr.t - tr.t[0] + (args.approach if tr.t[0] == 0 else 0.0)
    return list(PLATFORM), [(float(t[k]), tr.X[k].tolist(), tr.Xd[k].tolist(), tr.Xdd[k].tolist())
                            for k in range(len(t))]


class Stack:
    """A client node (private context) in the stack's namespace."""

    def __init__(self, args):
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from std_msgs.msg import String
        self.args = args
        self.context = Context()
        rclpy.init(context=self.context, args=[])
        self.node = rclpy.create_node("delta_ctl", namespace=args.namespace or "/", context=self.context,
                                      use_global_arguments=False, start_parameter_services=False)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.events = []
        self.base = f"{args.node}/"
        self.node.create_subscription(String, self.base + "events", lambda m: self.events.append(m.data),
                                      QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))

    def close(self):
        """Destroy the client node and shut its private context down."""
        import rclpy
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)

    def spin(self, seconds: float, until=None) -> bool:
        """Spin for up to ``seconds`` (s) until ``until()`` is true; whether it is (True without ``until``)."""
        return waiting_by(lambda: self.executor.spin_once(timeout_sec=0.05))(
            seconds, until if until is not None else lambda: False) or until is None

    def where(self) -> str:
        """The hardware node's full name, e.g. ``r1/delta_hardware`` (for messages)."""
        return f"{self.args.namespace}/{self.args.node}" if self.args.namespace else f"/{self.args.node}"

    def call(self, srv_type, name, request, resend: bool = False, wait: float | None = None):
        """Call the hardware node's service ``name`` with ``request``; its response, or Failed if the
        service is not there or does not answer within ``--timeout``.

        ``resend``: the request is safe to repeat (a query, a stop, a pause) and is sent again every
        second while unanswered (:mod:`delta_core.ros.service_call` says why). A reset is never
        repeated: a copy arriving after a new stop would clear that stop. ``wait``: s to wait for
        the answer (default ``--timeout``)."""
        client = self.node.create_client(srv_type, self.base + name)
        try:
            if not self.spin(self.args.timeout, client.service_is_ready):
                raise Failed(f"no {self.where()}/{name} service within {self.args.timeout:g} s: is the stack "
                             f"running, with the same ROS_DOMAIN_ID and namespace?")
            try:
                return answer(client, request, wait or self.args.timeout, self.spin,
                              RESEND_PERIOD if resend else None)
            except NoAnswer:
                raise Failed(f"{self.where()}/{name} did not answer within {wait or self.args.timeout:g} s") from None
        finally:
            self.node.destroy_client(client)

    def trigger(self, name) -> int:
        """Call the Trigger service ``name`` (``emergency_stop``, ``reset``) and print its message; 0 on success,
        else 1."""
        from std_srvs.srv import Trigger
        res = self.call(Trigger, name, Trigger.Request(), resend=name == "emergency_stop")
        print(res.message)
        return 0 if res.success else 1

    def status(self) -> int:
        """``status``: print the hardware node's status (JSON, indented); 0 if it is active and not stopped, else 1."""
        from std_srvs.srv import Trigger
        res = self.call(Trigger, "status", Trigger.Request(), resend=True)
        try:
            print(json.dumps(json.loads(res.message), indent=2))
        except ValueError:
            print(res.message)
        return 0 if res.success else 1

    def platform(self) -> int:
        """``where``: the platform position and the joints (position, setpoint, error) from the status."""
        from std_srvs.srv import Trigger
        res = self.call(Trigger, "status", Trigger.Request(), resend=True)
        try:
            st = json.loads(res.message)
        except ValueError:
            raise Failed(f"the hardware node answered no status: {res.message}") from None
        print(where_text(st))
        return 0 if st.get("position") else 1

    def pause(self, paused: bool) -> int:
        """``pause`` / ``resume``: pause (True) or resume simulated time and print the answer; 0 on success, else 1."""
        from std_srvs.srv import SetBool
        res = self.call(SetBool, "pause", SetBool.Request(data=paused), resend=True)
        print(res.message)
        return 0 if res.success else 1

    def follow_events(self, follow: bool, seconds: float) -> int:
        """``events``: print the hardware node's events for ``seconds`` (s), or until Ctrl-C with ``follow``; 0."""
        shown = 0
        deadline = None if follow else time.monotonic() + seconds
        try:
            while deadline is None or time.monotonic() < deadline:
                self.executor.spin_once(timeout_sec=0.1)
                while shown < len(self.events):
                    print(self.events[shown], flush=True)
                    shown += 1
        except KeyboardInterrupt:
            pass
        return 0

    def send(self, names, points, wait: bool) -> int:
        """``move`` / ``run``: publish the points ``(t, q, qd, qdd)`` on ``<node>/joint_trajectory`` (``names`` None:
        the arm joints) and print the node's verdict, with ``wait`` also the end of the motion; 0 if accepted."""
        from builtin_interfaces.msg import Duration
        from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
        pub = self.node.create_publisher(JointTrajectory, self.base + "joint_trajectory", 10)
        if not self.spin(self.args.timeout, lambda: pub.get_subscription_count() > 0):
            raise Failed(f"nobody subscribes {self.where()}/joint_trajectory within {self.args.timeout:g} s: "
                         f"is the stack running, with the same ROS_DOMAIN_ID and namespace?")
        if names is None:
            names = self._arm_names()
        msg = JointTrajectory(joint_names=[self.args.prefix + n for n in names])
        for t, q, qd, qdd in points:
            msg.points.append(JointTrajectoryPoint(
                positions=q, velocities=qd, accelerations=qdd,
                time_from_start=Duration(sec=int(t), nanosec=min(int(round((t - int(t)) * 1e9)), 999_999_999))))
        self.spin(0.3)                                      # the events subscription matched too
        n0 = len(self.events)
        pub.publish(msg)
        verdict = lambda: next((e for e in self.events[n0:] if "trajectory accepted" in e  # noqa: E731
                                or "trajectory rejected" in e), None)
        if not self.spin(max(self.args.timeout, 30.0), lambda: verdict() is not None):
            raise Failed(f"{self.where()} did not answer the trajectory")
        print(verdict())
        if "rejected" in verdict():
            return 1
        if wait:
            end = lambda: next((e for e in self.events[n0:] if e.startswith(("trajectory finished", "quick stop",  # noqa: E731
                                                                              "fault", "emergency stop"))), None)
            self.spin(points[-1][0] * 100 + 60, lambda: end() is not None)
            if end() is None:
                raise Failed("the motion did not end in time")
            print(end())
            return 0 if end().startswith("trajectory finished") else 1
        return 0

    def pick(self, args) -> int:
        """``pick``: call ``~/pick`` and print the run's figures (cycle time, picks per minute), with
        ``--wait`` also its end; 0 if it ran, 1 if refused."""
        try:
            from delta_msgs.srv import Pick                  # in-function: built at setup, absent elsewhere
        except ImportError:
            raise Failed("delta_msgs is not installed (make setup builds it): no ~/pick client") from None
        from geometry_msgs.msg import Point
        a, b = args.points[:3], args.points[3:]
        req = Pick.Request(from_point=Point(x=a[0], y=a[1], z=a[2]), to_point=Point(x=b[0], y=b[1], z=b[2]),
                           height=args.height, blend=args.blend, dwell=args.dwell, cycles=args.cycles)
        self.spin(0.3)                                      # the events subscription matched
        n0 = len(self.events)
        res = self.call(Pick, "pick", req, wait=max(self.args.timeout, 60.0))   # planning takes a while
        print(res.message)
        if not res.success:
            return 1
        print(f"cycle time {res.cycle_time:.4f} s, {res.picks_per_minute:.1f} picks per minute; "
              f"{res.duration:.3f} s in all")
        if args.wait:
            end = lambda: next((e for e in self.events[n0:] if e.startswith(("trajectory finished", "quick stop",  # noqa: E731
                                                                              "fault", "emergency stop"))), None)
            self.spin(res.duration * 100 + 60, lambda: end() is not None)
            if end() is None:
                raise Failed("the run did not end in time")
            print(end())
            return 0 if end().startswith("trajectory finished") else 1
        return 0

    def push(self, force, seconds=None) -> int:
        """``push``: publish ``force`` (N) on ``<node>/plant/external_wrench`` in ``<prefix>base_link`` and print the
        node's verdict; with ``seconds`` remove it that long (wall clock) after its acceptance. 0 if accepted."""
        from geometry_msgs.msg import WrenchStamped
        pub = self.node.create_publisher(WrenchStamped, self.base + "plant/external_wrench", 10)
        if not self.spin(self.args.timeout, lambda: pub.get_subscription_count() > 0):
            raise Failed(f"nobody subscribes {self.where()}/plant/external_wrench within {self.args.timeout:g} s: "
                         f"is the stack running, with the same ROS_DOMAIN_ID and namespace?")
        self.spin(0.3)                                      # the events subscription matched too

        def send(F):
            msg = WrenchStamped()
            msg.header.frame_id = self.args.prefix + "base_link"
            msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z = F
            n0 = len(self.events)
            pub.publish(msg)
            verdict = lambda: next((e for e in self.events[n0:] if e.startswith("plant external wrench")), None)  # noqa: E731
            if not self.spin(self.args.timeout, lambda: verdict() is not None):
                raise Failed(f"{self.where()} did not answer the push")
            print(verdict())
            return 1 if "refused" in verdict() else 0

        code = send(tuple(force))
        if code or seconds is None or not any(force):
            return code
        self.spin(seconds)
        return send((0.0, 0.0, 0.0))

    def payload(self, mass: float) -> int:
        """``payload``: set the hardware node's ``plant_payload_mass`` to ``mass`` kg; print the result, 0 if set."""
        from rcl_interfaces.srv import SetParameters
        from rclpy.parameter import Parameter
        request = SetParameters.Request(parameters=[Parameter("plant_payload_mass", value=float(mass)).to_parameter_msg()])
        res = self.call(SetParameters, "set_parameters", request, resend=True).results[0]   # setting twice is setting
        if not res.successful:
            print(f"payload refused: {res.reason}")
            return 1
        print(f"the simulated robot now carries {mass:g} kg (the controller's model is unchanged)")
        return 0

    def wrench(self) -> int:
        """``wrench``: print the next ``<node>/external_wrench`` (N, base_link); 1 if none comes within ``--timeout``."""
        from geometry_msgs.msg import WrenchStamped
        got = []
        sub = self.node.create_subscription(WrenchStamped, self.base + "external_wrench", got.append, 10)
        try:
            if not self.spin(self.args.timeout, lambda: bool(got)):
                raise Failed(f"no {self.where()}/external_wrench within {self.args.timeout:g} s: is monitoring "
                             f"true, the robot controlled (not stopped), the stack running with the same ROS_DOMAIN_ID and namespace?")
        finally:
            self.node.destroy_subscription(sub)
        print(wrench_text(got[0]))
        return 0

    def _arm_names(self):
        """The arm joint names from the stack's status (the robot file's, without prefix)."""
        from std_srvs.srv import Trigger
        res = self.call(Trigger, "status", Trigger.Request(), resend=True)
        try:
            names = json.loads(res.message).get("joint_names")
        except ValueError:
            names = None
        if not names:
            raise Failed("the hardware node did not say its joint names (status)")
        return [n[len(self.args.prefix):] if n.startswith(self.args.prefix) else n for n in names]


def where_text(st: dict) -> str:
    """``delta-ctl where``'s lines from a hardware node status.

    >>> print(where_text({"lifecycle": "active", "active": True, "stopped": "", "joint_names": ["a1", "a2", "a3"],
    ...                   "position": [0.1, 0.2, 0.3], "setpoint": [0.1, 0.2, 0.31], "tracking_error": [0, 0, 0.01],
    ...                   "platform_position": [0.01, -0.02, -0.78], "units": {"position": "rad"}}))
    platform  x 0.0100  y -0.0200  z -0.7800 m (base_link)
    a1        0.100000 rad  setpoint 0.100000  error 0.000000
    a2        0.200000 rad  setpoint 0.200000  error 0.000000
    a3        0.300000 rad  setpoint 0.310000  error 0.010000
    state     active, running
    """
    lines = []
    X = st.get("platform_position")
    if X:
        lines.append(f"platform  x {X[0]:.4f}  y {X[1]:.4f}  z {X[2]:.4f} m (base_link)")
    elif "position" in st:
        lines.append("platform  unknown (the joints are outside the reachable set)")
    unit = st.get("units", {}).get("position", "")
    names = st.get("joint_names") or []
    for i, q in enumerate(st.get("position") or []):
        name = names[i] if i < len(names) else f"joint {i + 1}"
        line = f"{name:<9} {q:.6f} {unit}"
        if st.get("setpoint"):
            line += f"  setpoint {st['setpoint'][i]:.6f}  error {st['tracking_error'][i]:.6f}"
        lines.append(line)
    if "position" not in st:
        lines.append("joints    unknown (the control loop is not running)")
    lines.append(f"state     {st.get('lifecycle', '?')}, " + (f"stopped: {st['stopped']}" if st.get("stopped")
                                                           else "running" if st.get("active") else "not controlling"))
    return "\n".join(lines)


def wrench_text(msg) -> str:
    """``delta-ctl wrench``'s line from a ``geometry_msgs/WrenchStamped``.

    >>> from types import SimpleNamespace as N
    >>> print(wrench_text(N(header=N(frame_id="base_link", stamp=N(sec=3, nanosec=250000000)),
    ...                     wrench=N(force=N(x=18.0, y=0.0, z=-24.0)))))
    external force  x 18.00  y 0.00  z -24.00 N  |F| 30.00 N (base_link, t = 3.250 s)
    """
    f, h = msg.wrench.force, msg.header
    size = (f.x ** 2 + f.y ** 2 + f.z ** 2) ** 0.5
    return (f"external force  x {f.x:.2f}  y {f.y:.2f}  z {f.z:.2f} N  |F| {size:.2f} N "
            f"({h.frame_id}, t = {h.stamp.sec + 1e-9 * h.stamp.nanosec:.3f} s)")


def _record(stack, args) -> int:
    from delta_bringup.record import RecordError, record      # in-function: rclpy and rosbags, for record only
    topics = args.topics or ["joint_states"]
    ns = args.namespace.rstrip("/")
    full = [t if t.startswith("/") else f"{ns}/{t}" if ns else f"/{t}" for t in topics]
    try:
        return record(stack, full, args.out, args.storage, args.duration)
    except RecordError as e:
        raise Failed(str(e)) from None


def main(argv=None) -> int:
    """Entry point of ``delta-ctl``; the exit status (0 done, 1 refused or not running, 2 bad arguments or input)."""
    args = parse_args(sys.argv[1:] if argv is None else list(argv))
    points = None
    if args.command in ("move", "run"):
        try:
            names, points = trajectory_points(args)
        except (OSError, ValueError) as e:                  # CsvError is a ValueError
            print(f"{PROG}: error: {getattr(e, 'filename', None) or ''}{': ' if getattr(e, 'filename', None) else ''}"
                  f"{getattr(e, 'strerror', None) or e}", file=sys.stderr)
            return 2
    missing = missing_ros()
    if missing:
        print(f"{PROG}: error: {missing}", file=sys.stderr)
        return 2
    stack = Stack(args)
    try:
        if args.command == "status":
            return stack.status()
        if args.command == "where":
            return stack.platform()
        if args.command == "events":
            return stack.follow_events(args.follow, args.seconds)
        if args.command == "estop":
            return stack.trigger("emergency_stop")
        if args.command == "reset":
            return stack.trigger("reset")
        if args.command in ("pause", "resume"):
            return stack.pause(args.command == "pause")
        if args.command == "record":
            return _record(stack, args)
        if args.command == "pick":
            return stack.pick(args)
        if args.command == "push":
            return stack.push(args.force, args.seconds)
        if args.command == "payload":
            return stack.payload(args.mass)
        if args.command == "wrench":
            return stack.wrench()
        return stack.send(names, points, args.wait)
    except Failed as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        stack.close()


if __name__ == "__main__":
    sys.exit(main())
